//! Running commands: echo them, fail with the command's name when they fail.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

/// A command rooted at the workspace, echoed before it runs.
pub fn cmd(program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new(program);
    command.current_dir(crate::workspace::root());
    command
}

/// Runs `command` with inherited output; an error names it when it fails.
pub fn run(command: &mut Command) -> Result<()> {
    eprintln!("$ {}", describe(command));
    let status = command.status().with_context(|| format!("could not start `{}`", describe(command)))?;
    if !status.success() {
        bail!("`{}` failed ({status})", describe(command));
    }
    Ok(())
}

/// Runs `command` and returns its standard output; an error carries its standard error.
pub fn output(command: &mut Command) -> Result<String> {
    let out = command
        .stdin(Stdio::null())
        .output()
        .with_context(|| format!("could not start `{}`", describe(command)))?;
    if !out.status.success() {
        bail!(
            "`{}` failed ({}): {}",
            describe(command),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8(out.stdout)?)
}

/// Whether `program` runs at all (found on PATH or at that path).
pub fn exists(program: impl AsRef<Path>) -> bool {
    Command::new(program.as_ref())
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

pub fn describe(command: &Command) -> String {
    std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ")
}
