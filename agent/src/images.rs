//! Where the images an agent reads are kept: an item's screenshot and the thread's
//! option and evidence images, saved once each in the user's cache dir
//! (`$XDG_CACHE_HOME/redline/images/` or `~/.cache/redline/images/`, mode 0700) as
//! files of mode 0600, so `show` prints the same path every time and an agent can open
//! it again without downloading it again.
//!
//! A name is made only of characters that are safe in a path (`[A-Za-z0-9_-]`): the
//! server's ids and keys are used as they are when they are made of those, and are
//! otherwise replaced by a hash, so nothing the server sends can climb out of the
//! folder or name a special file. A file is written under a temporary name and renamed
//! into place, so a reader never sees half an image and a link planted at the final
//! name is replaced, not followed.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use redline_protocol::{IMAGE_MAX_BYTES, ImageType};

use crate::client::{Api, Error};
use crate::config::create_private_dir;

/// A file opened for reading what it holds, and its metadata as opened.
struct Opened {
    file: fs::File,
    meta: fs::Metadata,
}

/// Opens `path` and checks what was opened (not what the path named before): a regular
/// file of at most [`IMAGE_MAX_BYTES`]. A FIFO or device is opened without blocking
/// (`O_NONBLOCK`) and refused.
fn open_regular(path: &Path) -> Result<Opened, String> {
    let failed = |e: std::io::Error| format!("reading {}: {e}", path.display());
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK | libc::O_NOCTTY);
    let file = options.open(path).map_err(failed)?;
    let meta = file.metadata().map_err(failed)?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    if meta.len() > IMAGE_MAX_BYTES as u64 {
        return Err(format!("{} is over {} MiB", path.display(), IMAGE_MAX_BYTES >> 20));
    }
    Ok(Opened { file, meta })
}

impl Opened {
    /// Its bytes, refused when over [`IMAGE_MAX_BYTES`] (it may have grown since it was
    /// opened: one byte more than allowed is read at most).
    fn read(self, path: &Path) -> Result<Vec<u8>, String> {
        use std::io::Read;
        let mut bytes = Vec::with_capacity(self.meta.len() as usize);
        self.file
            .take(IMAGE_MAX_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| format!("reading {}: {e}", path.display()))?;
        if bytes.len() > IMAGE_MAX_BYTES {
            return Err(format!("{} is over {} MiB", path.display(), IMAGE_MAX_BYTES >> 20));
        }
        Ok(bytes)
    }
}

/// A regular file's bytes, refused (without reading more than the limit) when it is
/// over [`IMAGE_MAX_BYTES`]; a FIFO or device is refused without blocking on it.
pub fn read_bounded(path: &Path) -> Result<Vec<u8>, String> {
    open_regular(path)?.read(path)
}

/// The temp folder of this user that `redline mcp` reads images from:
/// `<temp>/redline-<uid>`, made 0700 if missing. One that is a link, is not a folder,
/// is another user's or can be reached by others is refused: in a shared `/tmp`, any
/// user could have made it first.
pub fn own_temp_dir(temp: &Path) -> Result<PathBuf, String> {
    // SAFETY: getuid(2) cannot fail.
    let uid = unsafe { libc::getuid() };
    let dir = temp.join(format!("redline-{uid}"));
    let mut builder = fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    match builder.create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(format!("creating {}: {e}", dir.display())),
    }
    let meta = fs::symlink_metadata(&dir).map_err(|e| format!("reading {}: {e}", dir.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if !meta.is_dir() || meta.uid() != uid || meta.mode() & 0o077 != 0 {
            return Err(format!(
                "{} is not a folder of yours that only you can use: remove it, and it is made again",
                dir.display()
            ));
        }
    }
    Ok(dir)
}

/// The folders `redline mcp` reads an `imagePath` from: the checkout it runs in (the
/// folder itself outside a checkout) and this user's temp folder ([`own_temp_dir`]),
/// each with its links resolved. An MCP client's model chooses the path, and the file
/// is sent to the server, so nothing else on the machine may be named.
#[derive(Clone, Debug)]
pub struct ImageRoots(Vec<PathBuf>);

impl ImageRoots {
    pub fn new(checkout: &Path, temp: &Path) -> ImageRoots {
        ImageRoots([checkout, temp].iter().filter_map(|p| fs::canonicalize(p).ok()).collect())
    }

    /// `path` (relative to `cwd`) with its links resolved, if that is inside one of the
    /// roots; else an error naming them.
    pub fn resolve(&self, cwd: &Path, path: &Path) -> Result<PathBuf, String> {
        let named = cwd.join(path);
        let real = fs::canonicalize(&named).map_err(|e| format!("reading {}: {e}", named.display()))?;
        if self.0.iter().any(|root| real.starts_with(root)) {
            return Ok(real);
        }
        let roots: Vec<String> = self.0.iter().map(|r| r.display().to_string()).collect();
        Err(format!(
            "{} is not under the places images are read from: {} (put the image there, or send imageBase64)",
            named.display(),
            roots.join(" or ")
        ))
    }

    /// The bytes of image file `path` (relative to `cwd`): it is opened first, then what
    /// was opened is checked (a regular file within the limit, the very file found at
    /// its resolved path under a root), so a link swapped in between names nothing else.
    pub fn read(&self, cwd: &Path, path: &Path) -> Result<Vec<u8>, String> {
        let named = cwd.join(path);
        let opened = open_regular(&named)?;
        let real = self.resolve(cwd, path)?;
        let there = fs::metadata(&real).map_err(|e| format!("reading {}: {e}", real.display()))?;
        use std::os::unix::fs::MetadataExt;
        if (there.dev(), there.ino()) != (opened.meta.dev(), opened.meta.ino()) {
            return Err(format!("{} changed while it was read: send it again", named.display()));
        }
        opened.read(&named)
    }
}

/// `$XDG_CACHE_HOME/redline/images` when that is an absolute path, else
/// `~/.cache/redline/images`.
pub fn cache_dir_from(xdg_cache_home: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    let base = match (xdg_cache_home.filter(|x| Path::new(x).is_absolute()), home.filter(|h| !h.is_empty())) {
        (Some(xdg), _) => PathBuf::from(xdg),
        (None, Some(home)) => Path::new(home).join(".cache"),
        (None, None) => return None,
    };
    Some(base.join("redline").join("images"))
}

/// `part` when it is made of safe characters only (and not too long), else a hash of it.
fn safe_part(part: &str) -> String {
    let safe = !part.is_empty()
        && part.len() <= 64
        && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if safe { part.to_owned() } else { format!("h{:016x}", fnv1a(part.as_bytes())) }
}

/// FNV-1a, 64-bit: a stable name for a key with unsafe characters (not a secret).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
}

/// The file name, without its extension, of image `key` of an item: the first 8
/// characters of the project id, the item's number, and the key (a server key such as
/// `<hex>.png` loses its extension: the file's own comes from its bytes).
pub fn stem(project_id: &str, short_id: &str, key: &str) -> String {
    let project = project_id.get(..8).unwrap_or(project_id);
    let key = key.rsplit_once('.').map_or(key, |(stem, _)| stem);
    format!("{}-{}-{}", safe_part(project), safe_part(short_id), safe_part(key))
}

/// The extension of an image, from its bytes.
fn extension(bytes: &[u8]) -> &'static str {
    match ImageType::sniff(bytes) {
        Some(ImageType::Png) => "png",
        Some(ImageType::Jpeg) => "jpg",
        Some(ImageType::Webp) => "webp",
        None => "img",
    }
}

/// The folder images are saved in.
pub struct ImageCache {
    dir: PathBuf,
}

impl ImageCache {
    pub fn new(dir: PathBuf) -> ImageCache {
        ImageCache { dir }
    }

    /// The cache of this process's user.
    pub fn open() -> Result<ImageCache, String> {
        let xdg = std::env::var("XDG_CACHE_HOME").ok();
        let home = std::env::var("HOME").ok();
        cache_dir_from(xdg.as_deref(), home.as_deref())
            .map(ImageCache::new)
            .ok_or_else(|| "cannot find a cache directory: set HOME or XDG_CACHE_HOME".to_owned())
    }

    /// The saved file of `stem`, if there is one.
    pub fn find(&self, stem: &str) -> Option<PathBuf> {
        ["png", "jpg", "webp", "img"]
            .iter()
            .map(|ext| self.dir.join(format!("{stem}.{ext}")))
            .find(|p| p.is_file())
    }

    /// Saves `bytes` as `stem` (its extension from its bytes) and returns the path.
    pub fn save(&self, stem: &str, bytes: &[u8]) -> Result<PathBuf, String> {
        let io = |what: &str, path: &Path, e: std::io::Error| format!("{what} {}: {e}", path.display());
        create_private_dir(&self.dir).map_err(|e| io("creating", &self.dir, e))?;
        let path = self.dir.join(format!("{stem}.{}", extension(bytes)));
        let tmp = self.dir.join(format!(".{stem}.{}.tmp", uuid::Uuid::new_v4().simple()));
        let mut options = fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let written =
            options.open(&tmp).and_then(|mut f| f.write_all(bytes)).and_then(|()| fs::rename(&tmp, &path));
        if let Err(e) = written {
            let _ = fs::remove_file(&tmp);
            return Err(io("writing", &path, e));
        }
        Ok(path)
    }

    /// The saved image `stem`, downloading it from `url` the first time.
    pub async fn fetch(&self, api: &Api, stem: &str, url: &str) -> Result<PathBuf, Error> {
        if let Some(path) = self.find(stem) {
            return Ok(path);
        }
        let bytes = api.download(url).await?;
        if bytes.len() > IMAGE_MAX_BYTES {
            return Err(Error::local(format!("the image at {url} is over {} MiB", IMAGE_MAX_BYTES >> 20)));
        }
        self.save(stem, &bytes).map_err(Error::Local)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fifo(path: &Path) {
        let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
    }

    /// What is opened is checked, not what the path named: a FIFO (with no writer, so
    /// opening it to read would block) and a folder are refused at once; a link in a
    /// root to a file outside them is refused; a regular file is read.
    #[test]
    fn only_regular_files_under_the_roots_are_read() {
        let (checkout, temp, elsewhere) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let roots = ImageRoots::new(checkout.path(), temp.path());
        fifo(&checkout.path().join("pipe.png"));
        let refused = roots.read(checkout.path(), Path::new("pipe.png")).unwrap_err();
        assert!(refused.ends_with("pipe.png is not a regular file"), "{refused}");
        assert!(read_bounded(&checkout.path().join("pipe.png")).unwrap_err().contains("not a regular file"));
        fs::create_dir(checkout.path().join("dir.png")).unwrap();
        assert!(
            roots.read(checkout.path(), Path::new("dir.png")).unwrap_err().contains("not a regular file")
        );
        fs::write(elsewhere.path().join("secret.png"), b"secret").unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("secret.png"), checkout.path().join("link.png"))
            .unwrap();
        let out = roots.read(checkout.path(), Path::new("link.png")).unwrap_err();
        assert!(out.contains("is not under the places images are read from"), "{out}");
        fs::write(temp.path().join("a.png"), b"png").unwrap();
        assert_eq!(roots.read(checkout.path(), &temp.path().join("a.png")).unwrap(), b"png");
    }

    /// The temp folder is this user's own, 0700: made so, and refused when another could
    /// have made it (open to others) or it is a link.
    #[test]
    fn the_temp_folder_is_the_users_own() {
        use std::os::unix::fs::PermissionsExt;
        let temp = tempfile::tempdir().unwrap();
        let dir = own_temp_dir(temp.path()).unwrap();
        assert_eq!(fs::metadata(&dir).unwrap().permissions().mode() & 0o777, 0o700);
        assert_eq!(own_temp_dir(temp.path()).unwrap(), dir, "the same one again");
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
        assert!(own_temp_dir(temp.path()).unwrap_err().contains("is not a folder of yours"));
        fs::remove_dir(&dir).unwrap();
        let planted = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(planted.path(), &dir).unwrap();
        assert!(own_temp_dir(temp.path()).unwrap_err().contains("is not a folder of yours"));
    }

    #[test]
    fn image_paths_are_read_only_under_the_checkout_or_the_temp_dir() {
        let (checkout, temp, elsewhere) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let roots = ImageRoots::new(checkout.path(), temp.path());
        for dir in [&checkout, &temp, &elsewhere] {
            fs::write(dir.path().join("a.png"), b"png").unwrap();
        }
        let here = roots.resolve(checkout.path(), Path::new("a.png")).unwrap();
        assert_eq!(here, fs::canonicalize(checkout.path().join("a.png")).unwrap());
        assert!(roots.resolve(checkout.path(), &temp.path().join("a.png")).is_ok());
        let outside = roots.resolve(checkout.path(), &elsewhere.path().join("a.png")).unwrap_err();
        assert!(outside.contains("is not under the places images are read from"), "{outside}");
        assert!(
            outside.contains(&fs::canonicalize(checkout.path()).unwrap().display().to_string()),
            "{outside}"
        );
        // Climbing out, or a link inside that points out, is outside.
        let climb = Path::new("..").join(elsewhere.path().file_name().unwrap()).join("a.png");
        assert!(roots.resolve(checkout.path(), &climb).is_err());
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(elsewhere.path().join("a.png"), checkout.path().join("link.png"))
                .unwrap();
            assert!(roots.resolve(checkout.path(), Path::new("link.png")).is_err());
        }
    }

    #[test]
    fn an_image_over_the_limit_is_refused_without_reading_it() {
        let dir = tempfile::tempdir().unwrap();
        let big = dir.path().join("big.png");
        fs::File::create(&big).unwrap().set_len(IMAGE_MAX_BYTES as u64 + 1).unwrap();
        assert!(read_bounded(&big).unwrap_err().contains("is over 8 MiB"));
        fs::write(dir.path().join("ok.png"), b"\x89PNG").unwrap();
        assert_eq!(read_bounded(&dir.path().join("ok.png")).unwrap(), b"\x89PNG");
    }

    #[test]
    fn finds_the_cache_dir() {
        assert_eq!(cache_dir_from(Some("/x"), Some("/home/a")), Some(PathBuf::from("/x/redline/images")));
        assert_eq!(
            cache_dir_from(Some("rel"), Some("/home/a")),
            Some(PathBuf::from("/home/a/.cache/redline/images"))
        );
        assert_eq!(cache_dir_from(None, None), None);
    }

    #[test]
    fn names_are_made_of_safe_characters_only() {
        let project = "0193a2b4-5c6d-7e8f-9a0b-1c2d3e4f5a6b";
        assert_eq!(
            stem(project, "7", "0123456789abcdef0123456789abcdef.png"),
            "0193a2b4-7-0123456789abcdef0123456789abcdef"
        );
        assert_eq!(stem(project, "7", "opt-1"), "0193a2b4-7-opt-1");
        for hostile in ["../../etc/passwd", "a/b", "x\u{1b}[2J", "", "..", "a b"] {
            let s = stem(project, "7", hostile);
            assert!(
                s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
                "{hostile:?} -> {s}"
            );
        }
        assert_ne!(stem(project, "7", "a/b"), stem(project, "7", "a/c"), "hashed keys stay distinct");
        assert_eq!(stem(project, "../1", "k"), format!("0193a2b4-h{:016x}-k", fnv1a(b"../1")));
    }

    #[test]
    fn saved_once_private_and_found_again() {
        let dir = tempfile::tempdir().unwrap();
        let cache = ImageCache::new(dir.path().join("images"));
        assert_eq!(cache.find("p-1-k"), None);
        let png = [0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0];
        let path = cache.save("p-1-k", &png).unwrap();
        assert_eq!(path, dir.path().join("images/p-1-k.png"));
        assert_eq!(cache.find("p-1-k"), Some(path.clone()));
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
            assert_eq!(fs::metadata(dir.path().join("images")).unwrap().permissions().mode() & 0o777, 0o700);
            // A link planted at the name is replaced, not written through.
            let target = dir.path().join("target");
            fs::write(&target, b"keep").unwrap();
            fs::remove_file(&path).unwrap();
            std::os::unix::fs::symlink(&target, &path).unwrap();
            cache.save("p-1-k", &png).unwrap();
            assert_eq!(fs::read(&target).unwrap(), b"keep");
            assert!(!fs::symlink_metadata(&path).unwrap().file_type().is_symlink());
        }
        assert_eq!(fs::read_dir(dir.path().join("images")).unwrap().count(), 1, "no temporary file is left");
    }
}
