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
    git::toplevel(cwd)
        .unwrap_or_else(|| cwd.to_owned())
        .join(".claude")
        .join("skills")
        .join("redline-changes")
}

/// Writes `SKILL.md` into `dir` (created if missing); returns the file's path.
pub fn install(dir: &Path) -> Result<PathBuf, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let path = dir.join("SKILL.md");
    std::fs::write(&path, SKILL).map_err(|e| format!("writing {}: {e}", path.display()))?;
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
        let path = install(&default_dir(&sub)).unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), SKILL);
    }
}
