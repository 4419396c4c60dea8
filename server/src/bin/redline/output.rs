//! How an admin command prints what it did: JSON with `--json`, else a line.

use serde::Serialize;

/// Prints an admin command's result: its record as JSON with `--json`, else `line`.
pub fn print<T: Serialize>(json: bool, value: &T, line: impl FnOnce() -> String) {
    if json {
        println!("{}", serde_json::to_string(value).expect("admin records serialise"));
    } else {
        println!("{}", line());
    }
}
