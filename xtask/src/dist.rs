//! `cargo xtask dist`: the release build zipped for the Chrome Web Store.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use anyhow::Result;
use zip::write::SimpleFileOptions;

use crate::build::{self, Profile};

pub fn run() -> Result<()> {
    build::extension(Profile::Release)?.print();
    let version = env!("CARGO_PKG_VERSION");
    let dist = crate::workspace::root().join("dist");
    std::fs::create_dir_all(&dist)?;
    let path = dist.join(format!("redline-extension-{version}.zip"));
    let mut zip = zip::ZipWriter::new(File::create(&path)?);
    add_dir(&mut zip, &build::extension_dir(), "")?;
    zip.finish()?;
    println!("wrote {} ({} bytes)", path.display(), std::fs::metadata(&path)?.len());
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
