//! `redline guard` (issue #35, part 3) with the real binary, a real server, headless
//! Chromium and a real stage: a static server serving a real git checkout at the commit
//! deployed. Three fixes are verified on one build; a later commit undoes one of them and
//! removes another's page. The guard reopens exactly the undone one ("Regressed in
//! <sha>", the verified, today's and a difference image, a `regressed` event, its agent
//! woken), leaves the unchanged one verified, and reports the page that failed to load
//! without reopening it.

mod cli_support;
mod common;

use std::path::{Path, PathBuf};

use base64::Engine;
use cli_support::*;
use common::TestServer;
use redline_agent::guard::{Programs, after_shot};
use redline_protocol::{Element, Viewport};
use serde_json::{Value, json};

const VIEWPORT: Viewport = Viewport { width: 800.0, height: 600.0 };

fn page(export_colour: &str) -> String {
    format!(
        "<!doctype html><html><head><meta charset=\"utf-8\">\
         <meta name=\"fabric-git-sha\" content=\"{{{{GIT_SHA}}}}\"><style>\
         body {{ margin: 0; font: 16px sans-serif; }} button {{ display: block; margin: 160px 40px; \
         padding: 12px 24px; border: 0; color: #fff; }}</style></head><body>\
         <button data-testid=\"orders.export\" style=\"background: {export_colour}\">Export</button>\
         <button data-testid=\"orders.print\" style=\"background: #16a34a\">Print</button>\
         </body></html>"
    )
}

const ABOUT: &str = "<!doctype html><html><head><meta name=\"fabric-git-sha\" content=\"{{GIT_SHA}}\"></head>\
                     <body><h1 data-testid=\"about.title\">About</h1></body></html>";

/// Serves the checkout in `dir` as the stage: its files as they are at the commit
/// checked out, with `{{GIT_SHA}}` replaced by that commit (as `xtask serve-stage` and
/// the demo's build state theirs).
async fn serve_checkout(dir: PathBuf) -> String {
    use axum::extract::{Request, State};
    use axum::http::StatusCode;
    use axum::response::{Html, IntoResponse};
    async fn file(State(dir): State<PathBuf>, request: Request) -> axum::response::Response {
        let path = match request.uri().path() {
            "/" => "index.html".to_owned(),
            p => p.trim_start_matches('/').to_owned(),
        };
        match std::fs::read_to_string(dir.join(&path)) {
            Ok(text) if !path.contains("..") => {
                Html(text.replace("{{GIT_SHA}}", &git(&dir, &["rev-parse", "HEAD"]))).into_response()
            }
            _ => (StatusCode::NOT_FOUND, "no such page").into_response(),
        }
    }
    let app = axum::Router::new().fallback(file).with_state(dir);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    url
}

fn programs() -> Programs {
    Programs {
        chromedriver: std::env::var_os("REDLINE_CHROMEDRIVER").map_or("chromedriver".into(), PathBuf::from),
        chromium: Some(std::env::var_os("CHROMIUM").map_or("/usr/bin/chromium".into(), PathBuf::from)),
    }
}

fn element(test_id: &str, tag: &str) -> Element {
    Element { test_id: Some(test_id.into()), tag: tag.into(), ..Element::default() }
}

/// Files an item circling `element` on `route`; returns its number.
async fn file_item(s: &TestServer, title: &str, route: &str, element: &Element) -> String {
    let capture = json!({"stroke": [], "bounds": null, "elements": [element], "devicePixelRatio": 1.0});
    let input = json!({"stageId": s.stage_id, "title": title, "route": route,
                       "viewport": VIEWPORT, "capture": capture});
    s.ok(&s.ann, "createChange", input).await["change"]["shortId"].as_str().unwrap().to_owned()
}

/// The person checks the fix on the stage and says "fixed", with the after-shot.
async fn verify(s: &TestServer, n: &str, url: &str, element: &Element) {
    let shot = after_shot(&programs(), url, std::slice::from_ref(element), VIEWPORT, 1.0).await.unwrap();
    let image = base64::engine::general_purpose::STANDARD.encode(shot);
    let upload = json!({"projectId": s.project_id, "contentType": "image/png", "imageBase64": image});
    let key = s.ok(&s.ann, "uploadShot", upload).await["screenshotKey"].clone();
    let verdict = json!({"changeId": n, "projectId": s.project_id, "verdict": "fixed", "screenshotKey": key});
    s.ok(&s.ann, "verifyChange", verdict).await;
}

async fn item(s: &TestServer, n: &str) -> Value {
    s.ok(&s.ann, "getChange", json!({"changeId": n, "projectId": s.project_id})).await
}

fn checked<'a>(out: &'a Value, n: &str) -> &'a Value {
    out["checked"].as_array().unwrap().iter().find(|c| c["shortId"] == n).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guard_reopens_the_one_fix_a_later_commit_undid() {
    let s = real_time_server().await;
    let (repo, _) = git_repo();
    let dir: &Path = repo.path();
    std::fs::write(dir.join("index.html"), page("#2563eb")).unwrap();
    std::fs::write(dir.join("about.html"), ABOUT).unwrap();
    git(dir, &["add", "-A"]);
    let fixed = commit(dir, "fix: export is blue, about has a title");
    let stage = serve_checkout(dir.to_owned()).await;

    let (export, print, about) =
        (element("orders.export", "button"), element("orders.print", "button"), element("about.title", "h1"));
    let a = file_item(&s, "Export should be blue", "/", &export).await;
    let b = file_item(&s, "Print should be green", "/", &print).await;
    let c = file_item(&s, "About needs a title", "/about.html", &about).await;
    release(&s, &s.ann).await;
    let agent = Agent::new(&s, &s.agent);
    agent.run(&["next", "--claim", "--all", "--claimed-by", "agent-a", "--once"]).await.ok();
    for n in [&a, &b, &c] {
        agent.run(&["done", n, "--commit", &fixed[..7]]).await.ok();
    }
    verify(&s, &a, &format!("{stage}/"), &export).await;
    verify(&s, &b, &format!("{stage}/"), &print).await;
    verify(&s, &c, &format!("{stage}/about.html"), &about).await;

    // A later commit puts the export button's old colour back and removes the about page.
    std::fs::write(dir.join("index.html"), page("#dc2626")).unwrap();
    std::fs::remove_file(dir.join("about.html")).unwrap();
    git(dir, &["add", "-A"]);
    let undone = commit(dir, "restyle the toolbar");
    let guard = |extra: &'static [&'static str]| {
        let mut args =
            vec!["guard", "--stage-id", s.stage_id.as_str(), "--base-url", stage.as_str(), "--json"];
        args.extend_from_slice(extra);
        args
    };
    let chromium = programs().chromium.unwrap();
    let with_browser = |args: Vec<&str>| {
        let mut args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        args.extend(["--chromium".to_owned(), chromium.display().to_string()]);
        args
    };

    // A dry run reports and reopens nothing.
    let args = with_browser(guard(&["--dry-run"]));
    let dry = agent.run(&args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(dry.code, 1, "{dry:?}");
    let report = dry.json();
    assert_eq!(checked(&report, &a)["outcome"], "regressed", "{report:#}");
    assert_eq!(checked(&report, &a)["reopened"], false);
    assert_eq!(item(&s, &a).await["change"]["status"], "done");

    let args = with_browser(guard(&[]));
    let out = agent.run(&args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(out.code, 1, "exit 1 when anything regressed: {out:?}");
    let report = out.json();
    let said = checked(&report, &a)["said"].as_str().unwrap();
    assert!(said.starts_with(&format!("regressed in {}: ", &undone[..7])), "{said}");
    assert_eq!(checked(&report, &a)["reopened"], true);
    assert_eq!(checked(&report, &b)["outcome"], "unchanged", "{report:#}");
    assert_eq!(checked(&report, &c)["outcome"], "unchecked", "{report:#}");
    assert!(
        checked(&report, &c)["said"].as_str().unwrap().ends_with("/about.html answered 404"),
        "{report:#}"
    );

    // Only the undone fix is reopened, with the three images in its thread.
    let reopened = item(&s, &a).await;
    assert_eq!(reopened["change"]["status"], "open");
    assert_eq!(reopened["change"]["verifiedAt"], Value::Null);
    let message = reopened["thread"].as_array().unwrap().last().unwrap();
    assert_eq!(message["type"], "verdict");
    let body = message["body"].as_str().unwrap();
    assert!(body.starts_with(&format!("Regressed in {}: ", &undone[..7])), "{body}");
    let labels: Vec<&str> =
        message["attachments"].as_array().unwrap().iter().map(|a| a["label"].as_str().unwrap()).collect();
    assert_eq!(labels, ["verified", "today", "difference"]);
    for n in [&b, &c] {
        let left = item(&s, n).await;
        assert_eq!(left["change"]["status"], "done", "#{n}");
        assert_ne!(left["change"]["verifiedAt"], Value::Null, "#{n}");
    }
    let events: Vec<String> =
        sqlx::query_scalar("SELECT event_type FROM events WHERE event_type = 'regressed'")
            .fetch_all(s.store.pool())
            .await
            .unwrap();
    assert_eq!(events.len(), 1);

    // Its agent is woken as for a "still wrong".
    let woken = agent.run(&["next", "--claimed-by", "agent-a", "--once"]).await.ok();
    assert!(woken.stdout.contains(&format!("#{a}")) && woken.stdout.contains("Regressed in"), "{woken:?}");

    // Run again: the reopened item is no longer verified, so nothing regresses now.
    let args = with_browser(guard(&[]));
    let again = agent.run(&args.iter().map(String::as_str).collect::<Vec<_>>()).await;
    assert_eq!(again.code, 4, "a page could not be checked, nothing regressed: {again:?}");
    assert_eq!(again.json()["checked"].as_array().unwrap().len(), 2);
}
