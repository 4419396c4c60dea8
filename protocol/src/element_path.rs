//! **(ours)** How an Element's `cssPath` names an element inside shadow roots and frames
//! (docs/protocol-additions.md, "Element paths across frames"). The extension writes
//! and follows these paths; the agent prints which frame an element is in.
//!
//! A path is CSS selectors joined by two separators, neither of which can occur in a
//! CSS selector outside a quoted string or an escape:
//! - [`FRAME_SEPARATOR`] ` |> `: the selector before it names an `<iframe>` (or
//!   `<frame>`) in its document; what follows is read in that frame's document.
//! - [`SHADOW_SEPARATOR`] ` >>> `: the selector before it names a shadow host; what
//!   follows is read in its (open) shadow root.
//!
//! `iframe[title="Checkout"] |> pay-form >>> button.submit` is the `button.submit` in
//! the shadow root of `pay-form`, in the document of the frame titled "Checkout".

/// Joins the path of a frame element (in its own document) to a path in the frame.
pub const FRAME_SEPARATOR: &str = " |> ";
/// Joins the path of a shadow host (in its own tree) to a path in its shadow root.
pub const SHADOW_SEPARATOR: &str = " >>> ";

/// The parts of `path` between [`FRAME_SEPARATOR`]s, outermost frame first: every part
/// but the last names a frame element. One part for a path in the top document.
pub fn frame_parts(path: &str) -> Vec<&str> {
    split_outside_strings(path, FRAME_SEPARATOR)
}

/// The parts of one frame part between [`SHADOW_SEPARATOR`]s, outermost tree first:
/// every part but the last names a shadow host.
pub fn shadow_parts(part: &str) -> Vec<&str> {
    split_outside_strings(part, SHADOW_SEPARATOR)
}

/// The path of an element in a frame: the frame element's path in the frame's parent,
/// then the element's path in the frame.
pub fn in_frame(frame_path: &str, inner_path: &str) -> String {
    let mut path = String::with_capacity(frame_path.len() + FRAME_SEPARATOR.len() + inner_path.len());
    path.push_str(frame_path);
    path.push_str(FRAME_SEPARATOR);
    path.push_str(inner_path);
    path
}

/// What follows the first `frames` frame parts of `path` (see [`frame_parts`]): the path
/// inside the frame the first `frames` parts lead into.
pub fn inside_frames(path: &str, frames: usize) -> &str {
    let parts = frame_parts(path);
    // Each part is a slice of `path`: the rest starts where part `frames` does.
    parts.get(frames).map_or("", |part| &path[part.as_ptr() as usize - path.as_ptr() as usize..])
}

/// Splits at `separator`, except inside a `"`-quoted string or right after a `\`.
fn split_outside_strings<'a>(path: &'a str, separator: &str) -> Vec<&'a str> {
    let bytes = path.as_bytes();
    let mut parts = Vec::new();
    let (mut start, mut at, mut in_string, mut escaped) = (0, 0, false, false);
    while at < bytes.len() {
        let b = bytes[at];
        if escaped {
            escaped = false;
        } else if b == b'\\' {
            escaped = true;
        } else if b == b'"' {
            in_string = !in_string;
        } else if !in_string && bytes[at..].starts_with(separator.as_bytes()) {
            parts.push(&path[start..at]);
            at += separator.len();
            start = at;
            continue;
        }
        at += 1;
    }
    parts.push(&path[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shadow_parts_split_outside_strings_and_escapes() {
        assert_eq!(shadow_parts("#a >>> .b >>> c"), ["#a", ".b", "c"]);
        assert_eq!(shadow_parts(".ünï >>> .✓"), [".ünï", ".✓"]);
        assert_eq!(shadow_parts("[title=\"x >>> y\"] >>> c"), ["[title=\"x >>> y\"]", "c"]);
        assert_eq!(shadow_parts("[title=\"q\\\" >>> \"]"), ["[title=\"q\\\" >>> \"]"]);
        assert_eq!(shadow_parts("main > button"), ["main > button"]);
    }

    #[test]
    fn frame_parts_leave_shadow_parts_to_each_frame() {
        let path = "iframe[title=\"Checkout\"] |> pay-form >>> button.submit";
        assert_eq!(frame_parts(path), ["iframe[title=\"Checkout\"]", "pay-form >>> button.submit"]);
        assert_eq!(shadow_parts(frame_parts(path)[1]), ["pay-form", "button.submit"]);
        assert_eq!(frame_parts("#outer |> #inner |> p"), ["#outer", "#inner", "p"]);
        assert_eq!(frame_parts("[title=\"a |> b\"] |> p"), ["[title=\"a |> b\"]", "p"]);
        assert_eq!(frame_parts("#a\\|> p"), ["#a\\|> p"], "an escaped bar is part of the selector");
        assert_eq!(frame_parts("main > button"), ["main > button"]);
    }

    #[test]
    fn joining_a_frame_and_its_insides_splits_back_into_the_same_parts() {
        let inner = in_frame("#inner", "my-app >>> p");
        let path = in_frame("iframe:nth-of-type(2)", &inner);
        assert_eq!(path, "iframe:nth-of-type(2) |> #inner |> my-app >>> p");
        assert_eq!(frame_parts(&path), ["iframe:nth-of-type(2)", "#inner", "my-app >>> p"]);
        assert_eq!(inside_frames(&path, 1), inner);
        assert_eq!(inside_frames(&path, 2), "my-app >>> p");
        assert_eq!(inside_frames(&path, 0), path);
        assert_eq!(inside_frames(&path, 3), "");
    }
}
