//! The messages between the overlay frame and the page it is mounted in (`postMessage`
//! and the capture's channel). Pure serde types: the overlay reads and writes them with
//! serde, the content module with `page_js`, whose browser tests hold it to these. The
//! calls to the worker are `worker_call`'s.

use redline_protocol::{Capture, Element, ElementStyles, Point, Rect, Viewport};
use serde::{Deserialize, Serialize};

/// What the overlay iframe tells the content script in the page (`window.postMessage`).
/// The content script accepts these only from its own iframe and the extension's origin.
/// The page can read them too, so they carry nothing the page does not already know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum OverlayEvent {
    /// The overlay's app is mounted and taking input.
    #[serde(rename = "redline:ready")]
    Ready,
    /// The person cancelled (Esc) or finished; remove the overlay.
    #[serde(rename = "redline:close")]
    Close,
    /// The person is drawing: the stroke so far, viewport CSS pixels, each time it grows,
    /// so the page can read ahead. One no longer than the last begins a new stroke.
    #[serde(rename = "redline:drawing")]
    Drawing { stroke: Vec<Point> },
    /// The stroke ended without circling anything (a release with no area, or the
    /// browser cancelled the pointer): the page stops reading ahead for it.
    #[serde(rename = "redline:stroke-abandoned")]
    StrokeAbandoned,
    /// The person released the lasso: the simplified outline, viewport CSS pixels.
    #[serde(rename = "redline:circled")]
    Circled { stroke: Vec<Point> },
}

impl Captured {
    /// The elements to file: those captured but the ones the filer `removed` (indexes
    /// into `capture.elements`), in the captured order, each with its computed styles
    /// from `styles` (`PageEvent::Styles`).
    pub fn filed_elements(&self, removed: &[usize], styles: &[Option<ElementStyles>]) -> Vec<Element> {
        let elements = self.capture.elements.iter().enumerate().filter(|(i, _)| !removed.contains(i));
        elements
            .map(|(i, element)| Element { styles: styles.get(i).cloned().flatten(), ..element.clone() })
            .collect()
    }

    /// The circle's bounds, or the whole viewport when the outline had none.
    pub fn bounds_or_viewport(&self) -> Rect {
        bounds_or_viewport(self.capture.bounds, self.viewport)
    }
}

/// A circle's `bounds`, or the whole `viewport` when its outline had none.
pub fn bounds_or_viewport(bounds: Option<Rect>, viewport: Viewport) -> Rect {
    bounds.unwrap_or(Rect { x: 0.0, y: 0.0, width: viewport.width, height: viewport.height })
}

/// What the content script tells its overlay frame. The page cannot read these (they
/// go to the extension's origin), but it can post the frame messages of its own, so the
/// capture comes only through the channel handed over in `Port`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum PageEvent {
    /// Posted to the frame's window once it is ready, transferring one end of a
    /// `MessageChannel`; `token` is the secret in the overlay's address, which the page
    /// cannot read. The overlay takes the port only with it.
    #[serde(rename = "redline:port")]
    Port { token: String },
    /// A stroke the mount script's pen took over the page before the overlay was up (the
    /// pointer's positions, viewport CSS pixels): the overlay takes it as if drawn on its
    /// lasso. Sent only through that port.
    #[serde(rename = "redline:drawn")]
    Drawn { stroke: Vec<Point> },
    /// A screenshot of the viewport (a PNG `data:` URL), posted through that port as soon
    /// as it is taken, ahead of the stroke, so that a release does not wait for it to
    /// cross to the overlay: a capture names it by `id`. Each one posted is newer than
    /// those before it.
    #[serde(rename = "redline:screenshot")]
    Screenshot { id: u32, image: String },
    /// What was circled, where, and how it looked: sent only through that port.
    #[serde(rename = "redline:captured")]
    Captured(Box<Captured>),
    /// The computed styles of the capture just sent, read after it was handed over so
    /// that the composer does not wait for them: `elements[i]` are those of the
    /// capture's `elements[i]` (none past the list's end). One follows every capture.
    #[serde(rename = "redline:styles")]
    Styles { elements: Vec<Option<ElementStyles>> },
}

/// The page side of one circle: elements, context and the screenshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Captured {
    pub capture: Capture,
    pub route: String,
    pub locale: Option<String>,
    pub viewport: Viewport,
    pub git_sha: Option<String>,
    /// What the page logged as errors since it loaded (stages with console capture on).
    pub console_errors: Vec<String>,
    /// The `id` of the viewport's screenshot, posted on the channel before this
    /// (`PageEvent::Screenshot`), or why there is none.
    pub screenshot: Result<u32, String>,
    /// The origins of circled frames Redline could not look inside (the person has not
    /// granted them): each frame element is captured instead, and the composer says why.
    #[serde(default)]
    pub unreadable_frames: Vec<String>,
}

/// The command name of the `Alt+Shift+C` shortcut in `manifest.json`.
pub const START_CIRCLE_COMMAND: &str = "start-circle";

/// The script `chrome.scripting` injects on a gesture (see `static/content.js`).
pub const CONTENT_SCRIPT_FILE: &str = "content.js";

/// Run before [`CONTENT_SCRIPT_FILE`] on an enabled stage's page load: has it put the
/// overlay in the page hidden, to be shown by a gesture (see `static/ahead.js`).
pub const AHEAD_SCRIPT_FILE: &str = "ahead.js";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn overlay_events_are_namespaced() {
        assert_eq!(serde_json::to_value(OverlayEvent::Close).unwrap(), json!({"type": "redline:close"}));
        assert!(serde_json::from_value::<OverlayEvent>(json!({"type": "close"})).is_err());
    }

    #[test]
    fn the_elements_not_removed_are_filed_in_order_with_the_styles_that_came_after() {
        let element = |id: &str| Element { test_id: Some(id.into()), ..Element::default() };
        let captured = Captured {
            capture: Capture {
                stroke: Vec::new(),
                bounds: None,
                elements: vec![element("a"), element("b"), element("c")],
                device_pixel_ratio: None,
                scroll: None,
                failed_requests: Vec::new(),
            },
            route: "/".into(),
            locale: None,
            viewport: Viewport { width: 800.0, height: 600.0 },
            git_sha: None,
            console_errors: Vec::new(),
            screenshot: Ok(1),
            unreadable_frames: Vec::new(),
        };
        let red = ElementStyles { changed: [("color", "rgb(255, 0, 0)")].into(), ..ElementStyles::default() };
        // Styles for the first two only (the rest were past the styled maximum); the
        // filer removed `b`.
        let filed = captured.filed_elements(&[1], &[Some(red.clone()), None]);
        assert_eq!(filed, vec![Element { styles: Some(red), ..element("a") }, element("c")]);
        assert_eq!(captured.filed_elements(&[], &[]), captured.capture.elements, "no styles came");
        assert_eq!(captured.filed_elements(&[7], &[]).len(), 3, "an index past the capture removes nothing");
    }

    #[test]
    fn the_styles_after_a_capture_keep_each_element_in_its_place() {
        let message = PageEvent::Styles { elements: vec![None, Some(ElementStyles::default())] };
        let written = serde_json::to_value(&message).unwrap();
        assert_eq!(written["type"], "redline:styles");
        assert_eq!(written["elements"][0], serde_json::Value::Null);
        assert_eq!(serde_json::from_value::<PageEvent>(written).unwrap(), message);
    }
}
