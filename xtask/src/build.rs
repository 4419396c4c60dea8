//! Builds the unpacked extension into `extension/` (Chrome) and `extension-firefox/`:
//! four modules from the one crate in `src/` (see ARCHITECTURE.md), plus `static/` and
//! each browser's manifest, both from `manifest.json` (`manifest.rs`); a release build
//! over a module's budget (`budget.rs`) fails.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result};

use crate::process::{self, cmd};
use crate::setup::{self, WASM_TARGET};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    Debug,
    Release,
}

impl Profile {
    fn dir(self) -> &'static str {
        match self {
            Profile::Debug => "debug",
            Profile::Release => "wasm-release",
        }
    }
}

/// One built file and its size, for the build report.
pub struct Artifact {
    pub path: PathBuf,
    pub raw: u64,
    pub gzipped: u64,
}

pub struct Report {
    pub seconds: f64,
    pub artifacts: Vec<Artifact>,
}

impl Report {
    pub fn print(&self) {
        println!(
            "extension built in {:.1} s into {} (Firefox: {})",
            self.seconds,
            extension_dir().display(),
            firefox_extension_dir().display()
        );
        for a in &self.artifacts {
            let name = a.path.strip_prefix(extension_dir()).unwrap_or(&a.path).display();
            println!("  {name:<28} {:>9} bytes  {:>8} gzipped", a.raw, a.gzipped);
        }
    }
}

/// `extension/`, or the folder `REDLINE_EXTENSION_DIR` names: engineers building side by
/// side in one checkout each test their own build.
pub fn extension_dir() -> PathBuf {
    std::env::var_os("REDLINE_EXTENSION_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| crate::workspace::root().join("extension"))
}

/// The Firefox package: [`extension_dir`] with `-firefox` after its name.
pub fn firefox_extension_dir() -> PathBuf {
    let chrome = extension_dir();
    let mut name = chrome.file_name().unwrap_or_default().to_os_string();
    name.push("-firefox");
    chrome.with_file_name(name)
}

/// Builds everything Chrome loads from `extension/`, and the same files with Firefox's
/// manifest in `extension-firefox/`.
pub fn extension(profile: Profile) -> Result<Report> {
    setup::for_build()?;
    let started = Instant::now();
    let out = extension_dir();
    clear_generated(&out)?;
    let pkg = out.join("pkg");
    let mut artifacts = Vec::new();
    for name in WEB_MODULES {
        artifacts.push(web_module(name, profile, &pkg, name)?);
    }
    let content = content_module(profile, &out.join("content"))?;
    copy_static(&out)?;
    // What a page loads of ours: the mount script the worker injects, then the module.
    artifacts.push(Artifact::of(&out.join(MOUNT_SCRIPT))?);
    artifacts.extend(content);
    if profile == Profile::Release {
        crate::budget::check(&out)?;
    }
    firefox_package(&out, &firefox_extension_dir())?;
    Ok(Report { seconds: started.elapsed().as_secs_f64(), artifacts })
}

/// The modules for extension pages, each built with the crate feature of its name into
/// `pkg/NAME.js` and `pkg/NAME_bg.wasm`: the overlay apart from the panel, so that a
/// gesture waits for the overlay's module alone (docs/extension.md, "Contexts and modules").
pub const WEB_MODULES: [&str; 3] = ["worker", "overlay", "panel"];

/// The script `chrome.scripting` injects on a gesture (`static/content.js`): it mounts the
/// overlay and imports the content module behind it.
pub const MOUNT_SCRIPT: &str = "content.js";

/// A module for extension pages (`wasm-bindgen --target web`) built with `features`,
/// written to `out_dir` as `NAME.js` and `NAME_bg.wasm`.
pub fn web_module(features: &str, profile: Profile, out_dir: &Path, name: &str) -> Result<Artifact> {
    let wasm = cargo_wasm(features, profile, &crate::workspace::root().join("target"), &[])?;
    wasm_bindgen(&wasm, "web", out_dir, name)?;
    let module = out_dir.join(format!("{name}_bg.wasm"));
    if profile == Profile::Release {
        // The overlay's module is what a gesture waits for, held to a budget with little
        // to spare: `-Oz` again until nothing changes takes about a kilobyte (gzipped)
        // more off it, for some 40 s of build time.
        let passes: &[&str] = if name == "overlay" { &["-Oz", "--converge"] } else { &["-Oz"] };
        wasm_opt(&module, &module, passes)?;
    }
    Artifact::of(&module)
}

/// Everything under `extension/` but its README is generated: start from nothing, so
/// no file of an older build lingers.
fn clear_generated(out: &Path) -> Result<()> {
    fs::create_dir_all(out)?;
    let is_ours = |entry: &fs::DirEntry| {
        let name = entry.file_name();
        name == "manifest.json" || name == "README.md"
    };
    let entries: Vec<fs::DirEntry> = fs::read_dir(out)?.collect::<Result<_, _>>()?;
    if !entries.is_empty() && !entries.iter().any(is_ours) {
        anyhow::bail!("{} holds something other than a built extension; not clearing it", out.display());
    }
    for entry in entries {
        let path = entry.path();
        if path.file_name().is_some_and(|n| n == "README.md") {
            continue;
        }
        if path.is_dir() { fs::remove_dir_all(&path)? } else { fs::remove_file(&path)? }
    }
    Ok(())
}

/// `cargo build` of the extension crate with the given features; returns the module.
fn cargo_wasm(features: &str, profile: Profile, target_dir: &Path, rustflags: &[&str]) -> Result<PathBuf> {
    let mut build = cmd("cargo");
    build.args(["build", "--package", "redline-extension", "--lib", "--target", WASM_TARGET]);
    build.args(["--no-default-features", "--features", features]);
    build.arg("--target-dir").arg(target_dir);
    if profile == Profile::Release {
        build.args(["--profile", "wasm-release"]);
    }
    if !rustflags.is_empty() {
        build.env("RUSTFLAGS", rustflags.join(" "));
    }
    process::run(&mut build)?;
    Ok(target_dir.join(WASM_TARGET).join(profile.dir()).join("redline_extension.wasm"))
}

fn wasm_bindgen(wasm: &Path, target: &str, out_dir: &Path, name: &str) -> Result<()> {
    let mut bindgen = cmd(setup::wasm_bindgen());
    bindgen.args(["--target", target, "--no-typescript", "--out-name", name, "--out-dir"]);
    bindgen.arg(out_dir).arg(wasm);
    process::run(&mut bindgen)
}

/// The features every Chromium we support runs, which rustc's wasm32 target emits.
const WASM_FEATURES: &[&str] = &[
    "--enable-bulk-memory",
    "--enable-sign-ext",
    "--enable-mutable-globals",
    "--enable-nontrapping-float-to-int",
    "--enable-reference-types",
    "--enable-multivalue",
];

/// npm binaryen's wasm-opt (Debian's binaryen 108 writes modules that fail to load).
fn wasm_opt(input: &Path, output: &Path, passes: &[&str]) -> Result<()> {
    let mut opt = cmd(setup::npm_bin("wasm-opt"));
    opt.arg(input).args(WASM_FEATURES).args(passes).arg("-o").arg(output);
    process::run(&mut opt)
}

/// The content module, compiled to JavaScript with wasm2js because a page's CSP may
/// forbid wasm in content scripts. `static/content.js` imports `content/content.js`.
fn content_module(profile: Profile, out: &Path) -> Result<Vec<Artifact>> {
    wasm2js_module("content", profile, &crate::workspace::root().join("target/content"), out)
}

/// The crate built with `features` through the content module's wasm2js pipeline, in
/// `work` (a target dir of its own), written to `out` as one file, `content.js`.
///
/// One file because the module is web-accessible with `use_dynamic_url`: a page may load
/// it only at the session's random address, and Chromium resolves a module's own
/// relative imports against the extension's fixed address, which it then refuses.
pub fn wasm2js_module(features: &str, profile: Profile, work: &Path, out: &Path) -> Result<Vec<Artifact>> {
    // Its own target dir: different RUSTFLAGS would otherwise rebuild the other
    // modules' dependencies on every build.
    let wasm = cargo_wasm(features, profile, work, &["-C", "target-cpu=mvp"])?;
    // wasm-bindgen reads `target_features` to decide on externref and multi-value,
    // which wasm2js cannot express; the prebuilt std lists them even for the mvp CPU.
    let stripped = work.join("content-mvp.wasm");
    let module = fs::read(&wasm).with_context(|| format!("reading {}", wasm.display()))?;
    fs::write(&stripped, wasm::without_target_features(&module, &["reference-types", "multivalue"])?)?;

    let glue = work.join("bindgen");
    wasm_bindgen(&stripped, "bundler", &glue, "content")?;
    // The prebuilt std uses saturating float-to-int conversions; wasm2js needs them lowered.
    let lowered = work.join("content-lowered.wasm");
    wasm_opt(&glue.join("content_bg.wasm"), &lowered, &["--llvm-nontrapping-fptoint-lowering"])?;
    let mut js_module = cmd(setup::npm_bin("wasm2js"));
    js_module.arg(&lowered).arg(if profile == Profile::Release { "-Oz" } else { "-O1" });
    js_module.arg("-o").arg(work.join("content_bg.wasm.js"));
    process::run(&mut js_module)?;

    let wasm_js = fs::read_to_string(work.join("content_bg.wasm.js"))?;
    fs::write(glue.join("content_bg.wasm.js"), wasm::patch_memory_grow(&wasm_js)?)?;
    let entry = fs::read_to_string(glue.join("content.js"))?;
    fs::write(glue.join("content.js"), wasm::import_js_instead_of_wasm(&entry, "content_bg")?)?;

    fs::create_dir_all(out)?;
    let bundle = out.join("content.js");
    let mut esbuild = cmd(setup::npm_bin("esbuild"));
    esbuild.arg(glue.join("content.js")).args(["--bundle", "--format=esm", "--log-level=warning"]);
    if profile == Profile::Release {
        esbuild.arg("--minify");
    }
    esbuild.arg(format!("--outfile={}", bundle.display()));
    process::run(&mut esbuild)?;
    Ok(vec![Artifact::of(&bundle)?])
}

fn copy_static(out: &Path) -> Result<()> {
    let root = crate::workspace::root();
    fs::copy(root.join("manifest.json"), out.join("manifest.json"))?;
    copy_dir(&root.join("static"), out)
}

/// The built Chrome package in `chrome` copied to `firefox` (its README left out), with
/// the manifest Firefox reads.
fn firefox_package(chrome: &Path, firefox: &Path) -> Result<()> {
    clear_generated(firefox)?;
    for entry in fs::read_dir(chrome)? {
        let entry = entry?;
        let target = firefox.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else if entry.file_name() != "README.md" {
            fs::copy(entry.path(), &target)?;
        }
    }
    let source = fs::read_to_string(crate::workspace::root().join("manifest.json"))
        .context("reading manifest.json")?;
    let manifest =
        crate::manifest::firefox(&serde_json::from_str(&source).context("parsing manifest.json")?)?;
    fs::write(firefox.join("manifest.json"), serde_json::to_string_pretty(&manifest)? + "\n")?;
    Ok(())
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

impl Artifact {
    pub fn of(path: &Path) -> Result<Artifact> {
        let bytes = fs::read(path).with_context(|| format!("reading {}", path.display()))?;
        Ok(Artifact {
            path: path.to_path_buf(),
            raw: bytes.len() as u64,
            gzipped: crate::budget::gzipped_len(&bytes)?,
        })
    }
}

/// Binary and text patches of the wasm2js pipeline, kept pure for tests.
mod wasm {
    use anyhow::{Result, bail};

    /// Rewrites the `target_features` custom section without `drop`; every other byte
    /// of the module is kept as it was.
    pub fn without_target_features(module: &[u8], drop: &[&str]) -> Result<Vec<u8>> {
        if module.get(..4) != Some(b"\0asm") {
            bail!("not a wasm module");
        }
        let mut out = module[..8].to_vec();
        let mut at = 8;
        let mut found = false;
        while at < module.len() {
            let start = at;
            let id = module[at];
            at += 1;
            let size = leb(module, &mut at)? as usize;
            let end = at + size;
            let body = module.get(at..end).ok_or_else(|| anyhow::anyhow!("truncated section"))?;
            let mut p = 0;
            let name_len = if id == 0 { leb(body, &mut p)? as usize } else { 0 };
            if id == 0 && body.get(p..p + name_len) == Some(b"target_features") {
                found = true;
                let name = &body[p..p + name_len];
                p += name_len;
                let count = leb(body, &mut p)?;
                let mut kept = Vec::new();
                for _ in 0..count {
                    let prefix = body[p];
                    p += 1;
                    let len = leb(body, &mut p)? as usize;
                    let feature = &body[p..p + len];
                    p += len;
                    if !drop.iter().any(|d| d.as_bytes() == feature) {
                        kept.push((prefix, feature));
                    }
                }
                let mut section = Vec::new();
                put_leb(&mut section, name.len() as u32);
                section.extend_from_slice(name);
                put_leb(&mut section, kept.len() as u32);
                for (prefix, feature) in kept {
                    section.push(prefix);
                    put_leb(&mut section, feature.len() as u32);
                    section.extend_from_slice(feature);
                }
                out.push(0);
                put_leb(&mut out, section.len() as u32);
                out.extend_from_slice(&section);
            } else {
                out.extend_from_slice(&module[start..end]);
            }
            at = end;
        }
        if !found {
            bail!("the module has no target_features section");
        }
        Ok(out)
    }

    fn leb(bytes: &[u8], at: &mut usize) -> Result<u32> {
        let (mut value, mut shift) = (0u32, 0);
        loop {
            let Some(&byte) = bytes.get(*at) else { bail!("truncated LEB128") };
            *at += 1;
            value |= u32::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(value);
            }
            shift += 7;
            if shift > 28 {
                bail!("LEB128 too long");
            }
        }
    }

    fn put_leb(out: &mut Vec<u8>, mut value: u32) {
        loop {
            let byte = (value & 0x7f) as u8;
            value >>= 7;
            if value == 0 {
                out.push(byte);
                return;
            }
            out.push(byte | 0x80);
        }
    }

    /// wasm2js grows memory by copying into a new ArrayBuffer, leaving the old one
    /// attached; wasm-bindgen's glue only refreshes its cached views when the old buffer
    /// is detached, so it would silently keep reading stale memory. `transfer` detaches.
    pub fn patch_memory_grow(wasm_js: &str) -> Result<String> {
        replace_once(
            wasm_js,
            "   var newBuffer = new ArrayBuffer(newPages << 16);\n   var newHEAP8 = new Int8Array(newBuffer);\n   newHEAP8.set(HEAP8);\n",
            "   var newBuffer = buffer.transfer(newPages << 16);\n",
        )
    }

    /// Points the bundler glue's `import … from "./NAME.wasm"` at wasm2js's module.
    pub fn import_js_instead_of_wasm(glue: &str, name: &str) -> Result<String> {
        replace_once(
            glue,
            &format!("import * as wasm from \"./{name}.wasm\";"),
            &format!("import * as wasm from \"./{name}.wasm.js\";"),
        )
    }

    fn replace_once(text: &str, before: &str, after: &str) -> Result<String> {
        match text.matches(before).count() {
            1 => Ok(text.replacen(before, after, 1)),
            n => bail!("expected {before:?} once in the generated code, found it {n} times"),
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn custom_section(name: &str, payload: &[u8]) -> Vec<u8> {
            let mut body = Vec::new();
            put_leb(&mut body, name.len() as u32);
            body.extend_from_slice(name.as_bytes());
            body.extend_from_slice(payload);
            let mut section = vec![0];
            put_leb(&mut section, body.len() as u32);
            section.extend(body);
            section
        }

        fn features(list: &[&str]) -> Vec<u8> {
            let mut payload = Vec::new();
            put_leb(&mut payload, list.len() as u32);
            for f in list {
                payload.push(b'+');
                put_leb(&mut payload, f.len() as u32);
                payload.extend_from_slice(f.as_bytes());
            }
            payload
        }

        #[test]
        fn strips_only_the_named_features_and_keeps_other_sections() {
            let header = b"\0asm\x01\0\0\0".to_vec();
            let type_section = vec![1, 1, 0];
            let producers = custom_section("producers", b"xyz");
            let mut module = header.clone();
            module.extend(&type_section);
            module.extend(custom_section(
                "target_features",
                &features(&["multivalue", "sign-ext", "reference-types"]),
            ));
            module.extend(&producers);

            let out = without_target_features(&module, &["reference-types", "multivalue"]).unwrap();
            let mut expected = header;
            expected.extend(&type_section);
            expected.extend(custom_section("target_features", &features(&["sign-ext"])));
            expected.extend(&producers);
            assert_eq!(out, expected);
        }

        /// `__wasm_memory_grow` as wasm2js writes it (from a real `content_bg.wasm.js`).
        const GROW: &str = " function __wasm_memory_grow(pagesToAdd) {
  pagesToAdd = pagesToAdd | 0;
  var oldPages = __wasm_memory_size() | 0;
  var newPages = oldPages + pagesToAdd | 0;
  if ((oldPages < newPages) && (newPages < 65536)) {
   var newBuffer = new ArrayBuffer(newPages << 16);
   var newHEAP8 = new Int8Array(newBuffer);
   newHEAP8.set(HEAP8);
   HEAP8 = new Int8Array(newBuffer);
   HEAP16 = new Int16Array(newBuffer);
   buffer = newBuffer;
   bufferView = HEAPU8;
  }
  return oldPages;
 }
";

        #[test]
        fn patches_the_memory_grow_helper_to_detach_the_old_buffer() {
            let patched = patch_memory_grow(GROW).unwrap();
            let expected = GROW.replace(
                "   var newBuffer = new ArrayBuffer(newPages << 16);\n   var newHEAP8 = new Int8Array(newBuffer);\n   newHEAP8.set(HEAP8);\n",
                "   var newBuffer = buffer.transfer(newPages << 16);\n",
            );
            assert_ne!(expected, GROW);
            assert_eq!(patched, expected);
            assert!(patched.contains("  if ((oldPages < newPages) && (newPages < 65536)) {\n   var newBuffer = buffer.transfer(newPages << 16);\n   HEAP8 = new Int8Array(newBuffer);\n"));
            assert!(!patched.contains("new ArrayBuffer") && !patched.contains("newHEAP8"));
            assert!(patch_memory_grow(&format!("{GROW}{GROW}")).is_err(), "two helpers: which one?");
        }

        #[test]
        fn refuses_what_it_cannot_patch() {
            assert!(without_target_features(b"not wasm", &[]).is_err());
            assert!(without_target_features(b"\0asm\x01\0\0\0", &[]).is_err());
            assert!(patch_memory_grow("no grow helper here").is_err());
            let glue = "import * as wasm from \"./content_bg.wasm\";\nexport * from \"./content_bg.js\";";
            assert_eq!(
                import_js_instead_of_wasm(glue, "content_bg").unwrap(),
                "import * as wasm from \"./content_bg.wasm.js\";\nexport * from \"./content_bg.js\";"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_module_the_build_writes_has_a_budget() {
        let budgeted: Vec<&str> =
            crate::budget::BUDGETS.iter().flat_map(|b| b.files.iter().copied()).collect();
        for module in WEB_MODULES {
            for file in [format!("pkg/{module}.js"), format!("pkg/{module}_bg.wasm")] {
                assert!(budgeted.contains(&file.as_str()), "{file} has no budget");
            }
        }
        assert!(budgeted.contains(&MOUNT_SCRIPT), "the mount script has no budget");
    }
}
