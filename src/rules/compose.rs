//! Turning what the filer typed by a circle into an item to file. Pure.

use redline_protocol::{CreateChangeInput, Element, ResolvedStage};

use crate::messages::Captured;
use crate::rules::outbox::{Draft, Image};

/// The protocol's limit on a title.
pub const MAX_TITLE_CHARS: usize = 200;

/// Why the composer cannot file yet, in words for the filer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ComposeError {
    Empty,
    TitleTooLong(usize),
}

impl std::fmt::Display for ComposeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ComposeError::Empty => f.write_str("Say what is wrong: the first line is the title."),
            ComposeError::TitleTooLong(n) => write!(
                f,
                "The first line is the title and has {n} characters; keep it to {MAX_TITLE_CHARS} and put the rest below it."
            ),
        }
    }
}

/// The first non-empty line is the title; everything after it is the body.
pub fn title_and_body(text: &str) -> Result<(String, Option<String>), ComposeError> {
    let text = text.trim();
    let (title, rest) = text.split_once('\n').unwrap_or((text, ""));
    let title = title.trim();
    if title.is_empty() {
        return Err(ComposeError::Empty);
    }
    let length = title.chars().count();
    if length > MAX_TITLE_CHARS {
        return Err(ComposeError::TitleTooLong(length));
    }
    let body = rest.trim();
    Ok((title.to_owned(), (!body.is_empty()).then(|| body.to_owned())))
}

/// The draft for one circle: what was typed, the elements the filer kept, the page's
/// context and the screenshot, under the `change_id` made when Enter was pressed.
pub fn draft(
    stage: &ResolvedStage,
    captured: &Captured,
    kept: Vec<Element>,
    text: &str,
    change_id: String,
    screenshot: Option<Image>,
) -> Result<Draft, ComposeError> {
    let (title, body) = title_and_body(text)?;
    let mut capture = captured.capture.clone();
    capture.elements = kept;
    Ok(Draft {
        change_id: change_id.clone(),
        project_id: stage.project_id.clone(),
        // Cut here, before the draft crosses to the worker: the worker reads it with the
        // protocol's bounded fields and would refuse it whole.
        input: crate::rules::fit::within_limits(CreateChangeInput {
            stage_id: stage.stage_id.clone(),
            title,
            body,
            route: Some(captured.route.clone()),
            git_sha: captured.git_sha.clone(),
            locale: captured.locale.clone(),
            viewport: Some(captured.viewport),
            capture: Some(capture),
            console_errors: (!captured.console_errors.is_empty()).then(|| captured.console_errors.clone()),
            change_id: Some(change_id),
            ..CreateChangeInput::default()
        }),
        screenshot,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use redline_protocol::{Capture, Point, Viewport};

    #[test]
    fn the_first_line_is_the_title() {
        assert_eq!(title_and_body("  Total is wrong  ").unwrap(), ("Total is wrong".into(), None));
        assert_eq!(
            title_and_body("\n Total is wrong\n\nIt adds VAT twice.\n").unwrap(),
            ("Total is wrong".into(), Some("It adds VAT twice.".into()))
        );
        assert_eq!(title_and_body(" \n \n"), Err(ComposeError::Empty));
        assert_eq!(title_and_body(&"x".repeat(201)), Err(ComposeError::TitleTooLong(201)));
        assert!(title_and_body(&"é".repeat(200)).is_ok(), "characters, not bytes");
    }

    #[test]
    fn a_draft_carries_the_kept_elements_and_the_page_context() {
        let stage = ResolvedStage {
            project_id: "p1".into(),
            stage_id: "s1".into(),
            branch: "main".into(),
            git_sha: None,
        };
        let captured = Captured {
            capture: Capture {
                stroke: vec![Point { x: 1.0, y: 2.0 }],
                bounds: None,
                elements: vec![Element::default(), Element::default()],
                device_pixel_ratio: Some(2.0),
                scroll: None,
                failed_requests: vec![redline_protocol::FailedRequest::new("GET", "/api/totals", 404)],
            },
            route: "/orders?page=2".into(),
            locale: Some("en".into()),
            viewport: Viewport { width: 1280.0, height: 720.0 },
            git_sha: Some("a91c4e2".into()),
            console_errors: vec!["TypeError: x is undefined".into()],
            screenshot: Err("no permission".into()),
            unreadable_frames: Vec::new(),
        };
        let kept = vec![Element { test_id: Some("orders.export".into()), ..Element::default() }];
        let id = "0b7e6a86-4a53-4c53-9a3f-0f0c1c7e1a11".to_owned();
        let draft =
            draft(&stage, &captured, kept.clone(), "Export is hidden\nOn mobile", id.clone(), None).unwrap();
        assert_eq!(draft.change_id, id);
        assert_eq!(draft.project_id, "p1");
        assert_eq!(draft.input.stage_id, "s1");
        assert_eq!(draft.input.title, "Export is hidden");
        assert_eq!(draft.input.body.as_deref(), Some("On mobile"));
        assert_eq!(draft.input.route.as_deref(), Some("/orders?page=2"));
        assert_eq!(draft.input.git_sha.as_deref(), Some("a91c4e2"));
        assert_eq!(draft.input.change_id.as_deref(), Some(id.as_str()));
        assert_eq!(draft.input.console_errors, Some(vec!["TypeError: x is undefined".to_owned()]));
        let mut noisy = captured.clone();
        noisy.console_errors = vec!["e".repeat(1_200); 60];
        let noisy = super::draft(&stage, &noisy, kept.clone(), "Noisy", id.clone(), None).unwrap();
        assert_eq!(
            noisy.input.console_errors.map(|e| e.len()),
            Some(redline_protocol::CONSOLE_ERRORS_MAX),
            "cut in the draft"
        );
        let capture = draft.input.capture.unwrap();
        assert_eq!(capture.elements, kept);
        assert_eq!(capture.device_pixel_ratio, Some(2.0));
        assert_eq!(
            capture.failed_requests, captured.capture.failed_requests,
            "filed beside the console errors"
        );
    }
}
