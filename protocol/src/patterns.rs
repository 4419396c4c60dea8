//! The forms of text the server accepts, as the patterns `/openapi.json` states for
//! them: each [`crate::bound::Form`] names one, and [`crate::schema`] builds its rules
//! from them. They stand on nothing else in the crate, so the records, whose fields
//! name their bounds through [`crate::bound`], sit above them as the inputs do.
//!
//! Each pattern is exactly the language the server's check accepts, written in the
//! regex subset that ECMA 262, Python and Rust read alike: explicit classes and no
//! `\s`, whose whitespace differs in each from Rust's `trim` (Python counts `\x1c`,
//! ECMA `\u{feff}`, neither of which `trim` removes). Where the server trims, the
//! pattern allows that whitespace around the value, which also covers Python's `$`
//! matching before a final newline.

/// Rust's whitespace (`char::is_whitespace`, what `str::trim` removes), as a class body.
macro_rules! ws {
    () => {
        r"\t\n\x0B\f\r \x85\xA0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000"
    };
}
pub(crate) use ws;

/// A UUID's `8-4-4-4-12` hex digits, either case ([`crate::is_uuid`]).
macro_rules! uuid {
    () => {
        "[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"
    };
}

/// Text without U+0000, which the server refuses in every string it stores in a column
/// (Postgres cannot hold it in text; SQLite would, and both engines answer alike).
pub const NO_NUL: &str = r"^[^\x00]*$";
/// **(ours)** A link a client may open: `https://` and no control character or space
/// ([`crate::is_https_link`]).
pub const HTTPS_LINK: &str = r"^https://[^\x00-\x20\x7f]+$";

/// **(ours)** An item's `route`: one `/`, then no `/` at once, and no backslash, space or
/// control character ([`crate::is_route`]).
pub const ROUTE: &str = r"^/(?:[^/\\\x00-\x20\x7f][^\\\x00-\x20\x7f]*)?$";

/// Text that is not blank once trimmed (it holds a character `trim` keeps), without
/// U+0000.
pub const NON_BLANK: &str = concat!(r"^[^\x00]*[^\x00", ws!(), r"][^\x00]*$");

/// A change reference as [`crate::parse_change_ref`] reads it: `#7`, `7` or a UUID,
/// surrounding whitespace ignored.
pub const CHANGE_REF: &str = concat!("^[", ws!(), "]*(?:#?[0-9]{1,19}|", uuid!(), ")[", ws!(), "]*$");

/// **(ours)** A page cursor as the server makes them (`nextCursor`, `olderCursor`).
/// Opaque to clients; every string of this form is a cursor the server reads.
pub const CURSOR: &str = r"^[0-9]{1,18}$";

/// A client-made `changeId`: a UUID (surrounding whitespace ignored).
pub const UUID: &str = concat!("^[", ws!(), "]*", uuid!(), "[", ws!(), "]*$");

/// **(ours)** A commit id, `completeChange`'s `headCommit`, as [`crate::commit_sha`]
/// reads it: 7 to 40 hex digits, surrounding whitespace ignored.
pub const COMMIT_SHA: &str = concat!("^[", ws!(), "]*[0-9A-Fa-f]{7,40}[", ws!(), "]*$");
