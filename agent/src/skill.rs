//! `redline skill`: the skill file that teaches a coding agent the whole loop, printed
//! or installed where agents look for skills. Its commands are run against a real
//! server by `server/tests/cli_skill.rs`, so it cannot drift from the CLI.

use std::path::{Path, PathBuf};

use crate::git;

/// The skill, in the format Claude Code and other agents read (`SKILL.md` with a
/// `name` and `description` front matter).
pub const SKILL: &str = include_str!("SKILL.md");

/// Where `skill install` writes without `--dir`: `.claude/skills/redline-changes/` at
/// the top of the git checkout `cwd` is in, or in `cwd` outside a checkout.
pub fn default_dir(cwd: &Path) -> PathBuf {
    dir_in(&default_base(cwd))
}

/// Where agents look for skills in the folder `base`.
pub fn dir_in(base: &Path) -> PathBuf {
    base.join(".claude").join("skills").join("redline-changes")
}

/// The folder [`default_dir`] is made in: the checkout's top, or `cwd`.
pub fn default_base(cwd: &Path) -> PathBuf {
    git::toplevel(cwd).unwrap_or_else(|| cwd.to_owned())
}

/// Writes `SKILL.md` into `dir` (created if missing), which is `base` or below it;
/// returns the file's path. A checkout is shared with whatever its contributors commit,
/// so nothing planted there is followed: a folder between `base` and `dir` that is a
/// link is refused, and a `SKILL.md` that is a link is replaced, never written through.
pub fn install(dir: &Path, base: &Path) -> Result<PathBuf, String> {
    let below =
        dir.strip_prefix(base).map_err(|_| format!("{} is not in {}", dir.display(), base.display()))?;
    std::fs::create_dir_all(base).map_err(|e| format!("creating {}: {e}", base.display()))?;
    let mut at = base.to_owned();
    for part in below.components() {
        at.push(part);
        match std::fs::symlink_metadata(&at) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(format!(
                    "{} is a link; not writing the skill through it (remove it, or name a folder with --dir)",
                    at.display()
                ));
            }
            Ok(m) if !m.is_dir() => return Err(format!("{} is not a folder", at.display())),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                std::fs::create_dir(&at).map_err(|e| format!("creating {}: {e}", at.display()))?
            }
            Err(e) => return Err(format!("reading {}: {e}", at.display())),
        }
    }
    let path = dir.join("SKILL.md");
    // Written aside (a new file: `create_new` follows no link) and renamed over the old
    // one, which replaces a link rather than its target.
    let aside = dir.join(format!(".SKILL.md.{}.tmp", std::process::id()));
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&aside)
        .and_then(|mut f| std::io::Write::write_all(&mut f, SKILL.as_bytes()))
        .and_then(|()| std::fs::rename(&aside, &path));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&aside);
        return Err(format!("writing {}: {e}", path.display()));
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_skill_names_itself_for_agents() {
        let front =
            SKILL.strip_prefix("---\n").and_then(|s| s.split_once("\n---\n")).map(|(f, _)| f).unwrap();
        assert!(front.lines().any(|l| l == "name: redline-changes"), "{front}");
        assert!(front.lines().any(|l| l.starts_with("description: ") && l.len() > 80), "{front}");
    }

    #[test]
    fn installs_here_outside_a_checkout() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        assert_eq!(default_dir(&sub), sub.join(".claude/skills/redline-changes"), "outside a checkout: here");
        let path = install(&default_dir(&sub), &default_base(&sub)).unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), SKILL);
    }

    #[cfg(unix)]
    #[test]
    fn a_planted_link_is_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let (checkout, elsewhere) = (dir.path().join("checkout"), dir.path().join("elsewhere"));
        std::fs::create_dir_all(&checkout).unwrap();
        std::fs::create_dir_all(&elsewhere).unwrap();
        let victim = elsewhere.join(".bashrc");
        std::fs::write(&victim, "mine").unwrap();
        // SKILL.md itself a link: replaced by the skill, the file it pointed at untouched.
        let skill_dir = default_dir(&checkout);
        std::fs::create_dir_all(&skill_dir).unwrap();
        std::os::unix::fs::symlink(&victim, skill_dir.join("SKILL.md")).unwrap();
        let path = install(&skill_dir, &checkout).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "mine");
        assert!(!std::fs::symlink_metadata(&path).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), SKILL);
        // A folder on the way a link: refused, nothing written there.
        std::fs::remove_dir_all(checkout.join(".claude")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, checkout.join(".claude")).unwrap();
        let refused = install(&skill_dir, &checkout).unwrap_err();
        assert!(refused.contains(".claude is a link"), "{refused}");
        assert!(!elsewhere.join("skills").exists());
    }
}
