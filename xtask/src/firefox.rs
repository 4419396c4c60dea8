//! Firefox: installing Debian's Firefox ESR and geckodriver when missing (as `setup`
//! installs Chromium), and `web-ext lint` of the Firefox package (what AMO's validator
//! runs on a submission), which must report no error and no warning. The one it used
//! to give, web-sys's `innerHTML` setter in the Leptos modules' glue, is gone since every
//! view is built node by node (`ui_view!` in `src/ui/ui_view.rs` says how).

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

/// `web-ext lint` of the package in `dir`: fails naming every error and warning.
pub fn lint(dir: &Path) -> Result<()> {
    let mut lint = cmd(setup::npm_bin("web-ext"));
    lint.args(["lint", "--output", "json", "--no-input", "--no-config-discovery", "--source-dir"]).arg(dir);
    // web-ext exits non-zero on errors but still prints its report: read it either way.
    let output = lint.output().with_context(|| process::describe(&lint))?;
    let report = String::from_utf8_lossy(&output.stdout);
    let findings = findings(&report).with_context(|| {
        format!("reading web-ext lint's report: {report}{}", String::from_utf8_lossy(&output.stderr))
    })?;
    if !findings.is_empty() {
        bail!("web-ext lint of {}:\n  {}", dir.display(), findings.join("\n  "));
    }
    Ok(())
}

/// The errors and warnings in a `web-ext lint --output json` report, one line each.
fn findings(report: &str) -> Result<Vec<String>> {
    let report: serde_json::Value = serde_json::from_str(report.trim())?;
    let mut found = Vec::new();
    for kind in ["errors", "warnings"] {
        let list = report[kind].as_array().with_context(|| format!("no `{kind}` list"))?;
        for finding in list {
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
        let report = r#"{"count":4,"summary":{"errors":1,"notices":1,"warnings":2},
            "errors":[{"code":"MANIFEST_FIELD_INVALID","message":"bad id","file":"manifest.json"}],
            "notices":[{"code":"X","message":"fine"}],
            "warnings":[{"code":"UNSAFE_VAR_ASSIGNMENT","message":"innerHTML","file":"pkg/overlay.js","line":7},
                        {"code":"UNSAFE_VAR_ASSIGNMENT","message":"innerHTML","file":"panel.js","line":9}]}"#;
        assert_eq!(
            findings(report).unwrap(),
            [
                "MANIFEST_FIELD_INVALID: \"bad id\" (manifest.json)",
                "UNSAFE_VAR_ASSIGNMENT: \"innerHTML\" (pkg/overlay.js)",
                "UNSAFE_VAR_ASSIGNMENT: \"innerHTML\" (panel.js)"
            ],
            "every warning fails, the glue's `innerHTML` too"
        );
        assert!(findings(r#"{"errors":[],"warnings":[],"notices":[]}"#).unwrap().is_empty());
        assert!(findings("not json").is_err());
    }
}
