//! `redline guard`: verified fixes become guards. After a deploy it opens each verified
//! item's page on the stage in headless Chromium, finds its elements as "Show on page"
//! does, frames a shot of them as the panel framed the verified after-shot, and compares
//! the two (`guard::compare`). An item whose element is gone or changed beyond the
//! tolerance is reopened with `reportRegression` ("Regressed in <sha>", the verified
//! image, today's and their difference), which wakes its agent as a "still wrong" does.
//! A page that does not load is reported, never reopened.

mod browser;
pub mod compare;
mod pixels;

use base64::Engine;
use redline_protocol::after_shot::{centring_scroll, crop_rect, union};
use redline_protocol::element_path::{frame_parts, shadow_parts};
use redline_protocol::locate::{Attempt, attempts};
use redline_protocol::*;
use serde::Serialize;
use serde_json::{Value, json};

pub use self::browser::Programs;
use self::browser::{Driver, Page, PageFound};
use self::compare::{Finding, Pixels, Tolerance, boxes_in_crop, compare};
use super::client::{Error, exit};
use super::rules::pick_stage;
use super::session::{Ctx, ServerChoice};

/// The exit status when nothing regressed but some page could not be checked.
pub const UNCHECKED: i32 = 4;

/// What `redline guard` checks, and how strictly (the command line's `GuardArgs`).
#[derive(Debug, Clone)]
pub struct Guard {
    /// The stage (id or branch) whose verified items to check.
    pub stage_id: String,
    /// Where to open the pages instead of the stage's URL (the item's route is kept).
    pub base_url: Option<String>,
    /// Report only: reopen nothing.
    pub dry_run: bool,
    pub tolerance: Tolerance,
    pub programs: Programs,
}

/// What the guard said about one item.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Checked {
    change_id: String,
    short_id: String,
    url: Option<String>,
    /// `unchanged`, `regressed` or `unchecked`.
    outcome: &'static str,
    said: String,
    /// Whether the item was reopened (not with `--dry-run`).
    reopened: bool,
}

/// What one look at the page found.
enum Look {
    Compared { finding: Finding, today: Pixels, difference: Option<Pixels>, git_sha: Option<String> },
    Unchecked(String),
}

pub async fn run(a: Guard, server: &ServerChoice, json: bool) -> Result<i32, Error> {
    let ctx = Ctx::connect(server, json).await?;
    let stages = ctx.stages().await?;
    let stage = pick_stage(&stages, &a.stage_id).map_err(Error::Local)?.clone();
    let base = a
        .base_url
        .clone()
        .or(stage.url.clone())
        .ok_or_else(|| Error::Local(format!("stage {} has no URL: pass --base-url", stage.stage_id)))?;
    let input = ListChangesInput {
        stage_id: Some(stage.stage_id.clone()),
        status: Some(vec![ChangeStatus::Done]),
        include_done: true,
        ..ListChangesInput::default()
    };
    let verified: Vec<Change> =
        ctx.list_all(input).await?.changes.into_iter().filter(|c| c.verified_at.is_some()).collect();
    let mut results = Vec::new();
    if !verified.is_empty() {
        let driver = Driver::start(&a.programs).await.map_err(Error::Local)?;
        for change in &verified {
            results.push(check(&ctx, &driver, change, &base, &stage, a.tolerance, a.dry_run).await?);
        }
    }
    let regressed = results.iter().any(|r| r.outcome == "regressed");
    let unchecked = results.iter().any(|r| r.outcome == "unchecked");
    ctx.print(&json!({ "stageId": stage.stage_id, "checked": results }), || text(&results, a.dry_run));
    Ok(if regressed {
        exit::FAILED
    } else if unchecked {
        UNCHECKED
    } else {
        exit::OK
    })
}

fn text(results: &[Checked], dry_run: bool) -> String {
    if results.is_empty() {
        return "No verified item on this stage.".to_owned();
    }
    let lines: Vec<String> = results
        .iter()
        .map(|r| {
            let action = match (r.outcome, r.reopened, dry_run) {
                ("regressed", true, _) => ", reopened",
                ("regressed", _, true) => " (dry run: not reopened)",
                _ => "",
            };
            format!("#{} {}: {}{action}", r.short_id, r.outcome, r.said)
        })
        .collect();
    lines.join("\n")
}

async fn check(
    ctx: &Ctx,
    driver: &Driver,
    change: &Change,
    base: &str,
    stage: &Stage,
    tolerance: Tolerance,
    dry_run: bool,
) -> Result<Checked, Error> {
    let got = ctx.get_change(&change.change_id, None).await?;
    let url = check_url(Some(base), got.change.route.as_deref());
    let mut checked = Checked {
        change_id: change.change_id.clone(),
        short_id: change.short_id.clone(),
        url: url.clone(),
        outcome: "unchecked",
        said: String::new(),
        reopened: false,
    };
    let after = verified_shot(&got.thread);
    let verified = match after {
        Some((_, Some(link))) => match ctx.api.download(link).await {
            Ok(bytes) => Some(pixels::decode(&bytes).map_err(Error::Local)?),
            Err(e) => {
                checked.said = format!("could not read the verified after-shot: {e}");
                return Ok(checked);
            }
        },
        _ => None,
    };
    let Some(url) = url else {
        checked.said = "the stage has no URL".to_owned();
        return Ok(checked);
    };
    let elements = got.change.capture.as_ref().map(|c| c.elements.clone()).unwrap_or_default();
    let look = look(
        driver,
        &url,
        &elements,
        got.change.viewport,
        got.change.capture.as_ref(),
        verified.as_ref(),
        tolerance,
    )
    .await;
    let (finding, today, difference, git_sha) = match look {
        Look::Unchecked(why) => {
            checked.said = why;
            return Ok(checked);
        }
        Look::Compared { finding, today, difference, git_sha } => (finding, today, difference, git_sha),
    };
    let sha = git_sha.or(stage.git_sha.clone()).unwrap_or_default();
    checked.outcome = if finding.regressed() { "regressed" } else { "unchanged" };
    checked.said = match (finding.regressed(), short_sha(&sha)) {
        (true, "") => finding.sentence(),
        (true, short) => format!("regressed in {short}: {}", finding.sentence()),
        (false, _) => finding.sentence(),
    };
    if finding.regressed() && !dry_run {
        let mut images = vec![image("today", &today)?];
        if let Some(difference) = &difference {
            images.push(image("difference", difference)?);
        }
        let input = ReportRegressionInput {
            change_id: change.change_id.clone(),
            project_id: Some(ctx.project_id.clone()),
            git_sha: sha.clone(),
            body: format!("{} (at {url})", finding.sentence()),
            verified_key: after.map(|(key, _)| key.to_owned()),
            images: Some(images),
        };
        ctx.api.call::<ReportRegression>(input).await?;
        checked.reopened = true;
    }
    Ok(checked)
}

/// The key and link of the after-shot of the `fixed` verdict that verified the item:
/// the latest verdict's image labelled "after".
fn verified_shot(thread: &[Message]) -> Option<(&str, Option<&str>)> {
    let verdict = thread.iter().rev().find(|m| m.role() == MessageType::Verdict)?;
    let shot = verdict.attachments.iter().find(|a| a.label == VERDICT_SHOT_LABEL)?;
    Some((shot.key.as_str(), shot.url.as_deref()))
}

fn image(label: &str, pixels: &Pixels) -> Result<OptionImage, Error> {
    let png = pixels::encode_png(pixels).map_err(Error::Local)?;
    Ok(OptionImage {
        label: label.to_owned(),
        content_type: "image/png".to_owned(),
        image_base64: base64::engine::general_purpose::STANDARD.encode(png),
    })
}

/// The elements as `find.js` reads them: a label, the frames their path enters (each
/// split at shadow roots) and their attempts in order.
pub fn page_elements(elements: &[Element]) -> Value {
    let list: Vec<Value> = elements
        .iter()
        .map(|e| {
            let frames: Vec<Vec<&str>> = match e.css_path.as_deref() {
                Some(path) => {
                    let parts = frame_parts(path);
                    parts[..parts.len() - 1].iter().map(|p| shadow_parts(p)).collect()
                }
                None => Vec::new(),
            };
            let tried: Vec<Value> = attempts(e)
                .iter()
                .map(|attempt| match attempt {
                    Attempt::Selector(by, selector) => json!({"kind": "selector", "matchedBy": by, "selector": selector}),
                    Attempt::CssPath(path) => {
                        let inner = frame_parts(path).last().copied().unwrap_or_default();
                        json!({"kind": "cssPath", "matchedBy": attempt.matched_by(), "parts": shadow_parts(inner)})
                    }
                    Attempt::Text { tag, text } => {
                        json!({"kind": "text", "matchedBy": attempt.matched_by(), "tag": tag, "text": text})
                    }
                })
                .collect();
            json!({"label": label(e), "frames": frames, "attempts": tried})
        })
        .collect();
    Value::Array(list)
}

/// How an element is named in the report: its test id, anchor, CSS path or tag.
fn label(e: &Element) -> &str {
    [e.test_id.as_deref(), e.source_anchor.as_deref(), e.css_path.as_deref()]
        .into_iter()
        .flatten()
        .find(|s| !s.is_empty())
        .unwrap_or(&e.tag)
}

/// Opens `url` at the filed viewport and pixel ratio and compares with `verified`.
async fn look(
    driver: &Driver,
    url: &str,
    elements: &[Element],
    viewport: Option<Viewport>,
    capture: Option<&Capture>,
    verified: Option<&Pixels>,
    tolerance: Tolerance,
) -> Look {
    let viewport = viewport.unwrap_or(Viewport { width: 1280.0, height: 720.0 });
    let scale = capture.and_then(|c| c.device_pixel_ratio).filter(|r| *r > 0.0).unwrap_or(1.0);
    let page = match driver.session(viewport, scale).await {
        Ok(page) => page,
        Err(e) => return Look::Unchecked(e),
    };
    let look = look_in(&page, url, elements, verified, tolerance).await;
    page.close().await;
    look.unwrap_or_else(Look::Unchecked)
}

/// What the page shows of the elements, framed as the panel frames its after-shot.
enum Framed {
    Gone { labels: Vec<String>, today: Pixels, git_sha: Option<String> },
    Found { today: Pixels, boxes: Vec<Rect>, git_sha: Option<String> },
}

/// Loads `url`, finds the elements and, when all are there, scrolls them to the middle
/// of the viewport and crops the screenshot around them (the after-shot's framing).
async fn framed(page: &Page, url: &str, elements: &[Element]) -> Result<Framed, String> {
    page.open(url).await?;
    let wanted = page_elements(elements);
    let found = page.find(&wanted).await?;
    loaded(&found, url)?;
    if !found.all_found() {
        let labels =
            found.located.iter().filter(|l| l.matched_by.is_none()).map(|l| l.label.clone()).collect();
        return Ok(Framed::Gone { labels, today: page.screenshot().await?, git_sha: found.git_sha });
    }
    if let Some(to) = centring_scroll(&found.boxes, found.scroll, found.viewport) {
        page.scroll_to(to).await?;
    }
    let found: PageFound = page.find(&wanted).await?;
    let shot = page.screenshot().await?;
    let whole = Rect { x: 0.0, y: 0.0, width: found.viewport.width, height: found.viewport.height };
    let region = union(&found.boxes).unwrap_or(whole);
    let crop = crop_rect(region, found.device_pixel_ratio, f64::from(shot.width), f64::from(shot.height));
    let boxes = boxes_in_crop(&found.boxes, crop, found.device_pixel_ratio);
    Ok(Framed::Found { today: shot.cropped(crop), boxes, git_sha: found.git_sha })
}

async fn look_in(
    page: &Page,
    url: &str,
    elements: &[Element],
    verified: Option<&Pixels>,
    tolerance: Tolerance,
) -> Result<Look, String> {
    match framed(page, url, elements).await? {
        Framed::Gone { labels, today, git_sha } => {
            Ok(Look::Compared { finding: Finding::Gone { labels }, today, difference: None, git_sha })
        }
        Framed::Found { today, boxes, git_sha } => {
            let verified = verified.ok_or("its verdict has no after-shot to compare with")?;
            let (finding, difference) = compare(verified, &today, &boxes, tolerance);
            Ok(Look::Compared { finding, today, difference: Some(difference), git_sha })
        }
    }
}

/// The shot the panel's "Check on stage" would upload as the after-shot of `elements` on
/// `url` (PNG, where the panel uploads WebP), taken by the guard's browser: how a test
/// plays the person who verified a fix.
pub async fn after_shot(
    programs: &Programs,
    url: &str,
    elements: &[Element],
    viewport: Viewport,
    scale: f64,
) -> Result<Vec<u8>, String> {
    let driver = Driver::start(programs).await?;
    let page = driver.session(viewport, scale).await?;
    let framed = framed(&page, url, elements).await;
    page.close().await;
    match framed? {
        Framed::Found { today, .. } => pixels::encode_png(&today),
        Framed::Gone { labels, .. } => Err(format!("not on the page: {}", labels.join(", "))),
    }
}

/// Whether the page loaded: not the browser's error page, and not an HTTP error.
fn loaded(found: &PageFound, url: &str) -> Result<(), String> {
    if found.url.starts_with("chrome-error:") {
        return Err(format!("{url} did not load"));
    }
    match found.status {
        Some(status) if status >= 400 => Err(format!("{url} answered {status}")),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_reach_the_page_with_their_attempts_in_order_and_their_frames_split() {
        let element = Element {
            test_id: Some("orders.export".into()),
            css_path: Some("iframe#pay |> pay-form >>> button.submit".into()),
            text: Some(" Pay ".into()),
            tag: "button".into(),
            ..Element::default()
        };
        let page = page_elements(&[element]);
        assert_eq!(page[0]["label"], "orders.export");
        assert_eq!(page[0]["frames"], json!([["iframe#pay"]]));
        let attempts = &page[0]["attempts"];
        assert_eq!(
            attempts[0],
            json!({"kind": "selector", "matchedBy": "testId", "selector": "[data-testid=\"orders.export\"]"})
        );
        assert_eq!(
            attempts[1],
            json!({"kind": "cssPath", "matchedBy": "cssPath", "parts": ["pay-form", "button.submit"]})
        );
        assert_eq!(attempts[2], json!({"kind": "text", "matchedBy": "text", "tag": "button", "text": "Pay"}));
    }

    #[test]
    fn an_error_page_or_status_is_a_page_that_did_not_load() {
        let found = |url: &str, status: Option<u16>| PageFound {
            located: vec![],
            boxes: vec![],
            scroll: Point { x: 0.0, y: 0.0 },
            viewport: Viewport { width: 1.0, height: 1.0 },
            device_pixel_ratio: 1.0,
            git_sha: None,
            url: url.into(),
            status,
            ready: true,
        };
        assert!(loaded(&found("http://s/", Some(200)), "http://s/").is_ok());
        assert_eq!(
            loaded(&found("http://s/", Some(404)), "http://s/").unwrap_err(),
            "http://s/ answered 404"
        );
        assert!(loaded(&found("chrome-error://chromewebdata/", None), "http://s/").is_err());
    }
}
