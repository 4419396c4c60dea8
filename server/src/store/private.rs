//! Files only the server's user may read: the database holds token hashes and the key
//! that signs image links, and the images are what filers circled. Folders are created
//! 0700 and files 0600, whatever the umask (on Unix; elsewhere the system's defaults).

use std::io;
use std::path::Path;

/// Creates `dir` and its missing parents, each only its owner may enter. Folders that
/// exist are left as they are: the operator chose their modes.
pub fn create_dir_all(dir: &Path) -> io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// Options that create a file only its owner may read and write.
pub fn file_options() -> tokio::fs::OpenOptions {
    let mut options = tokio::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    options
}

/// Creates `file` empty, only its owner may read it, unless it exists; so that SQLite,
/// which gives its journal files the database file's mode, keeps them private too.
pub fn create_file(file: &Path) -> io::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(file) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(e),
    }
}
