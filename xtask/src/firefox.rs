//! Firefox: installing Debian's Firefox ESR and geckodriver when missing (as `setup`
//! installs Chromium), and `web-ext lint` of the Firefox package (what AMO's validator
//! runs on a submission), which must report no error and no warning but the one
//! [`LEPTOS_TEMPLATES`] explains.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::process::{self, cmd};
use crate::setup;

pub const FIREFOX: &str = "/usr/bin/firefox-esr";

/// The geckodriver `cargo install` builds (about 3 minutes on 2 cores).
pub const GECKODRIVER_VERSION: &str = "0.37.1";

/// geckodriver, where `cargo install` puts it.
pub fn geckodriver() -> PathBuf {
    setup::cargo_bin("geckodriver")
}

/// Firefox ESR and geckodriver, each installed when missing.
pub fn install() -> Result<()> {
    firefox_esr()?;
    geckodriver_cli()
}

/// Debian's Firefox ESR (never a downloaded browser build).
pub fn firefox_esr() -> Result<()> {
    if Path::new(FIREFOX).exists() {
        return Ok(());
    }
    let install = "apt-get update && apt-get install -y firefox-esr";
    if !setup::is_root() {
        bail!("Firefox ESR is missing; install it with: sudo sh -c '{install}'");
    }
    process::run(cmd("sh").args(["-c", install]).env("DEBIAN_FRONTEND", "noninteractive"))
}

/// geckodriver at [`GECKODRIVER_VERSION`], built with cargo when missing or another.
pub fn geckodriver_cli() -> Result<()> {
    let have = process::output(std::process::Command::new(geckodriver()).arg("--version")).ok();
    if have.as_deref().is_some_and(|v| v.starts_with(&format!("geckodriver {GECKODRIVER_VERSION}"))) {
        return Ok(());
    }
    process::run(cmd("cargo").args(["install", "geckodriver", "--force", "--version", GECKODRIVER_VERSION]))
}

/// The one warning the lint may give, and why it stands: web-sys's `innerHTML` setter in
/// the glue of the two Leptos modules (`pkg/overlay.js`, `pkg/panel.js`). Leptos's `view!` builds each fully static subtree
/// (tags and string literals of our own source, known at compile time) by setting a
/// `<template>`'s `innerHTML` once and cloning it; it is the setter's only caller, since
/// Redline renders every server string as a text node. Leptos 0.8 has no switch to build
/// those subtrees node by node (tachys 0.2.19 and 0.3.0-rc1 set `innerHTML` in
/// `Dom::create_element_from_html` and `get_template`, and its `sledgehammer` renderer
/// does the same in its own JS). Firefox 153 and Chromium 156 have `Element.setHTML`,
/// which kept a sample of such markup whole with `new Sanitizer({})` (the default one
/// drops buttons, inputs, classes and ARIA), but only a patched tachys could call it. Only that
/// line of the glue is let through: an `innerHTML` anywhere else fails the lint.
const LEPTOS_TEMPLATES: (&str, &[&str], &str) =
    ("UNSAFE_VAR_ASSIGNMENT", &["pkg/overlay.js", "pkg/panel.js"], "arg0.innerHTML = v0;");

/// `web-ext lint` of the package in `dir`: fails naming every error and warning.
pub fn lint(dir: &Path) -> Result<()> {
    let mut lint = cmd(setup::npm_bin("web-ext"));
    lint.args(["lint", "--output", "json", "--no-input", "--no-config-discovery", "--source-dir"]).arg(dir);
    // web-ext exits non-zero on errors but still prints its report: read it either way.
    let output = lint.output().with_context(|| process::describe(&lint))?;
    let report = String::from_utf8_lossy(&output.stdout);
    let source_line = |file: &str, line: u64| {
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_default();
        text.lines().nth(line.saturating_sub(1) as usize).unwrap_or_default().trim().to_owned()
    };
    let findings = findings(&report, source_line).with_context(|| {
        format!("reading web-ext lint's report: {report}{}", String::from_utf8_lossy(&output.stderr))
    })?;
    if !findings.is_empty() {
        bail!("web-ext lint of {}:\n  {}", dir.display(), findings.join("\n  "));
    }
    Ok(())
}

/// The errors and warnings in a `web-ext lint --output json` report, one line each, but
/// [`LEPTOS_TEMPLATES`]'s (`source_line(file, line)` reads the line a finding points at).
fn findings(report: &str, source_line: impl Fn(&str, u64) -> String) -> Result<Vec<String>> {
    let report: serde_json::Value = serde_json::from_str(report.trim())?;
    let mut found = Vec::new();
    for kind in ["errors", "warnings"] {
        let list = report[kind].as_array().with_context(|| format!("no `{kind}` list"))?;
        for finding in list {
            let (code, glues, line) = LEPTOS_TEMPLATES;
            let in_glue = finding["file"].as_str().filter(|file| glues.contains(file));
            if finding["code"] == code
                && let Some(file) = in_glue
                && finding["line"].as_u64().is_some_and(|at| source_line(file, at) == line)
            {
                continue;
            }
            let at = finding["file"].as_str().map(|f| format!(" ({f})")).unwrap_or_default();
            found.push(format!("{}: {}{at}", finding["code"].as_str().unwrap_or("?"), finding["message"]));
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_s_errors_and_warnings_are_named_and_notices_are_not() {
        let glue = |_: &str, line: u64| {
            if line == 7 { "arg0.innerHTML = v0;".to_owned() } else { "x.innerHTML = y;".to_owned() }
        };
        let report = r#"{"count":3,"summary":{"errors":1,"notices":1,"warnings":2},
            "errors":[{"code":"MANIFEST_FIELD_INVALID","message":"bad id","file":"manifest.json"}],
            "notices":[{"code":"X","message":"fine"}],
            "warnings":[{"code":"UNSAFE_VAR_ASSIGNMENT","message":"innerHTML","file":"pkg/overlay.js","line":7},
                        {"code":"UNSAFE_VAR_ASSIGNMENT","message":"innerHTML","file":"pkg/panel.js","line":7},
                        {"code":"UNSAFE_VAR_ASSIGNMENT","message":"innerHTML","file":"pkg/panel.js","line":9},
                        {"code":"UNSAFE_VAR_ASSIGNMENT","message":"innerHTML","file":"panel.js","line":7}]}"#;
        assert_eq!(
            findings(report, glue).unwrap(),
            [
                "MANIFEST_FIELD_INVALID: \"bad id\" (manifest.json)",
                "UNSAFE_VAR_ASSIGNMENT: \"innerHTML\" (pkg/panel.js)",
                "UNSAFE_VAR_ASSIGNMENT: \"innerHTML\" (panel.js)"
            ],
            "only Leptos's template line in the glue is let through"
        );
        assert!(findings(r#"{"errors":[],"warnings":[],"notices":[]}"#, glue).unwrap().is_empty());
        assert!(findings("not json", glue).is_err());
    }
}
