//! `cargo xtask dist`: the release build zipped for the Chrome Web Store and for
//! Firefox (AMO), the Firefox one only once `web-ext lint` finds nothing in it. `cargo
//! xtask test` writes the same Firefox zip and installs it in Firefox ESR.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::Result;
use zip::write::SimpleFileOptions;

use crate::build::{self, Profile};

pub fn run() -> Result<()> {
    build::extension(Profile::Release)?.print();
    crate::firefox::lint(&build::firefox_extension_dir())?;
    let version = env!("CARGO_PKG_VERSION");
    let chrome = dist_dir()?.join(format!("redline-extension-{version}.zip"));
    write_zip(&build::extension_dir(), &chrome)?;
    write_firefox_zip()?;
    Ok(())
}

/// Zips the built Firefox package (`extension-firefox/`) as AMO gets it; resolves with
/// where it wrote the zip.
pub fn write_firefox_zip() -> Result<PathBuf> {
    let version = env!("CARGO_PKG_VERSION");
    let path = dist_dir()?.join(format!("redline-extension-firefox-{version}.zip"));
    write_zip(&build::firefox_extension_dir(), &path)?;
    Ok(path)
}

fn dist_dir() -> Result<PathBuf> {
    let dist = crate::workspace::root().join("dist");
    std::fs::create_dir_all(&dist)?;
    Ok(dist)
}

/// Zips the built package in `dir` to `path`.
fn write_zip(dir: &Path, path: &Path) -> Result<()> {
    let mut zip = zip::ZipWriter::new(File::create(path)?);
    add_dir(&mut zip, dir, "")?;
    zip.finish()?;
    println!("wrote {} ({} bytes)", path.display(), std::fs::metadata(path)?.len());
    Ok(())
}

fn add_dir(zip: &mut zip::ZipWriter<File>, dir: &Path, prefix: &str) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = format!("{prefix}{}", entry.file_name().to_string_lossy());
        // The folder's README is for developers, not part of the extension.
        if prefix.is_empty() && name == "README.md" {
            continue;
        }
        if entry.file_type()?.is_dir() {
            add_dir(zip, &entry.path(), &format!("{name}/"))?;
        } else {
            zip.start_file(name, SimpleFileOptions::default())?;
            zip.write_all(&std::fs::read(entry.path())?)?;
        }
    }
    Ok(())
}
