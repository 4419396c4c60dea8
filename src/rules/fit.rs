//! A filing cut to the server's limits before it is sent, so that a page cannot block
//! filing. Pure; used when a draft is made (`compose`) and again when the outbox sends
//! one it held from before (`outbox`).

use redline_protocol::styles::{
    FAILED_REQUESTS_MAX, REQUEST_METHOD_MAX_CHARS, REQUEST_STATUS_MAX, STYLE_NAME_MAX_CHARS,
    STYLE_PROPERTIES_MAX, STYLE_VALUE_MAX_CHARS,
};
use redline_protocol::{
    CONSOLE_ERROR_MAX_CHARS, CONSOLE_ERRORS_MAX, CSS_PATH_MAX_CHARS, Capture, CreateChangeInput,
    ELEMENT_ATTR_MAX_CHARS, ELEMENT_TEXT_MAX_CHARS, ELEMENT_WORD_MAX_CHARS, ELEMENTS_MAX, SHORT_MAX_CHARS,
    STROKE_POINTS_MAX, TEXT_MAX_CHARS, TITLE_MAX_CHARS, URL_MAX_CHARS,
};

/// `input` cut to the server's limits (`redline_protocol::rules`), so that nothing a
/// page holds can make its filing a 400: the page writes most of what is filed (test
/// ids, anchors, text, CSS paths through its ids and classes, console errors, its
/// commit's meta tag). What can be read in part is cut, marked with `…` where it is
/// text (a test id cut still says where to look); what would be wrong in part is left
/// out (a CSS path, a route, a commit, a style property's name); of lists the latest
/// entries are kept (console errors, failed requests), of the elements the first (the
/// outermost, as `pick` orders them), and a longer stroke is thinned. U+0000, which the
/// server refuses, is removed from every string.
pub fn within_limits(mut input: CreateChangeInput) -> CreateChangeInput {
    cut(&mut input.title, TITLE_MAX_CHARS);
    cut_opt(&mut input.body, TEXT_MAX_CHARS);
    for exact in [&mut input.deployment_id, &mut input.git_sha, &mut input.locale] {
        drop_longer(exact, SHORT_MAX_CHARS);
    }
    drop_longer(&mut input.route, URL_MAX_CHARS);
    if let Some(errors) = &mut input.console_errors {
        errors.drain(..errors.len().saturating_sub(CONSOLE_ERRORS_MAX));
        errors.iter_mut().for_each(|e| cut(e, CONSOLE_ERROR_MAX_CHARS));
    }
    if let Some(capture) = &mut input.capture {
        capture_within_limits(capture);
    }
    input
}

fn capture_within_limits(capture: &mut Capture) {
    if capture.stroke.len() > STROKE_POINTS_MAX {
        // Every n-th point, and the last, which closes the outline.
        let step = capture.stroke.len().div_ceil(STROKE_POINTS_MAX - 1);
        let last = capture.stroke.last().copied();
        capture.stroke = capture.stroke.iter().step_by(step).copied().chain(last).collect();
    }
    capture.elements.truncate(ELEMENTS_MAX);
    for e in &mut capture.elements {
        for attribute in [&mut e.test_id, &mut e.component_test_id, &mut e.source_anchor] {
            cut_opt(attribute, ELEMENT_ATTR_MAX_CHARS);
        }
        drop_longer(&mut e.css_path, CSS_PATH_MAX_CHARS);
        cut_opt(&mut e.text, ELEMENT_TEXT_MAX_CHARS);
        cut_opt(&mut e.name, ELEMENT_TEXT_MAX_CHARS);
        cut_opt(&mut e.role, ELEMENT_WORD_MAX_CHARS);
        cut(&mut e.tag, ELEMENT_WORD_MAX_CHARS);
        if let Some(styles) = &mut e.styles {
            for half in [&mut styles.changed, &mut styles.unchanged] {
                half.0
                    .retain(|(name, _)| name.chars().count() <= STYLE_NAME_MAX_CHARS && !name.contains('\0'));
                half.0.truncate(STYLE_PROPERTIES_MAX);
                half.0.iter_mut().for_each(|(_, value)| cut(value, STYLE_VALUE_MAX_CHARS));
            }
        }
    }
    let failed = &mut capture.failed_requests;
    failed.drain(..failed.len().saturating_sub(FAILED_REQUESTS_MAX));
    for request in failed {
        cut(&mut request.method, REQUEST_METHOD_MAX_CHARS);
        drop_nul(&mut request.url);
        if request.url.chars().count() > URL_MAX_CHARS {
            request.url = request.url.chars().take(URL_MAX_CHARS).collect();
        }
        request.status = request.status.min(REQUEST_STATUS_MAX);
    }
}

/// `text` without U+0000 and at most `max` characters, the last of them `…` when cut.
fn cut(text: &mut String, max: usize) {
    drop_nul(text);
    if let Some((at, _)) = text.char_indices().nth(max) {
        text.truncate(at);
        text.pop();
        text.push('…');
    }
}

fn cut_opt(text: &mut Option<String>, max: usize) {
    if let Some(text) = text {
        cut(text, max);
    }
}

/// Leaves out `value` when it is longer than `max` characters, which only whole is right.
fn drop_longer(value: &mut Option<String>, max: usize) {
    if let Some(v) = value {
        drop_nul(v);
    }
    if value.as_ref().is_some_and(|v| v.chars().count() > max) {
        *value = None;
    }
}

fn drop_nul(text: &mut String) {
    if text.contains('\0') {
        text.retain(|c| c != '\0');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redline_protocol::Element;

    #[test]
    fn what_a_page_writes_is_cut_to_the_servers_limits_before_filing() {
        use redline_protocol::{ElementStyles, FailedRequest, StyleValues, validate_create_change};
        let long = |n: usize| "x".repeat(n);
        let element = Element {
            test_id: Some(long(300)),
            source_anchor: Some(long(201)),
            component_test_id: Some("é".repeat(250)),
            css_path: Some(format!("[data-testid=\"{}\"]", long(600))),
            text: Some(long(600)),
            name: Some(long(501)),
            role: Some(long(51)),
            tag: long(60),
            styles: Some(ElementStyles {
                changed: StyleValues((0..20).map(|i| (format!("p{i}"), long(150))).collect()),
                unchanged: StyleValues(vec![(long(40), "1px".into()), ("color".into(), "red\0".into())]),
            }),
            ..Element::default()
        };
        let input = CreateChangeInput {
            stage_id: "s1".into(),
            title: "Export is hidden\0".into(),
            route: Some(format!("/{}", long(3000))),
            git_sha: Some(long(201)),
            locale: Some("en".into()),
            console_errors: Some((0..60).map(|i| format!("error {i} {}", long(1200))).collect()),
            capture: Some(Capture {
                stroke: (0..25_000).map(|i| redline_protocol::Point { x: i as f64, y: 0.0 }).collect(),
                elements: vec![element; 520],
                failed_requests: (0..70).map(|i| FailedRequest::new("GET", &format!("/{i}"), 404)).collect(),
                bounds: None,
                device_pixel_ratio: None,
                scroll: None,
            }),
            ..CreateChangeInput::default()
        };
        let fitted = within_limits(input.clone());
        assert_eq!(validate_create_change(&fitted), Ok(()));

        assert_eq!(fitted.title, "Export is hidden");
        assert_eq!((fitted.route, fitted.git_sha, fitted.locale.as_deref()), (None, None, Some("en")));
        let errors = fitted.console_errors.unwrap();
        assert_eq!(errors.len(), CONSOLE_ERRORS_MAX);
        assert!(errors[0].starts_with("error 10 "), "the latest are kept");
        assert!(errors.iter().all(|e| e.chars().count() == CONSOLE_ERROR_MAX_CHARS && e.ends_with('…')));
        let capture = fitted.capture.unwrap();
        assert!(capture.stroke.len() <= STROKE_POINTS_MAX);
        assert_eq!(capture.stroke.last(), input.capture.as_ref().unwrap().stroke.last(), "still closed");
        assert_eq!(capture.elements.len(), ELEMENTS_MAX);
        assert_eq!(capture.failed_requests.len(), FAILED_REQUESTS_MAX);
        assert_eq!(capture.failed_requests[0].url, "/20");
        let e = &capture.elements[0];
        assert_eq!(e.test_id.as_deref(), Some(format!("{}…", long(ELEMENT_ATTR_MAX_CHARS - 1)).as_str()));
        assert_eq!(e.component_test_id.as_ref().map(|t| t.chars().count()), Some(ELEMENT_ATTR_MAX_CHARS));
        assert_eq!(e.css_path, None, "a path cut would name something else");
        assert_eq!(e.text.as_ref().map(|t| t.chars().count()), Some(ELEMENT_TEXT_MAX_CHARS));
        let styles = e.styles.as_ref().unwrap();
        assert_eq!(styles.changed.len(), STYLE_PROPERTIES_MAX);
        assert_eq!(styles.unchanged, StyleValues::from([("color", "red")]));

        let fine = CreateChangeInput {
            stage_id: "s1".into(),
            title: "t".into(),
            route: Some("/orders".into()),
            console_errors: Some(vec!["boom".into()]),
            capture: Some(Capture {
                stroke: Vec::new(),
                bounds: None,
                elements: vec![Element::default()],
                device_pixel_ratio: None,
                scroll: None,
                failed_requests: Vec::new(),
            }),
            ..CreateChangeInput::default()
        };
        assert_eq!(within_limits(fine.clone()), fine, "what fits is sent as it is");
    }
}
