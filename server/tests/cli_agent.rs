//! The agent CLI (`redline next|claim|show|ask|reply|shot|done|list|file`) run as the
//! real binary against a real server.

mod cli_support;
mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use cli_support::*;
use common::TestServer;
use serde_json::{Value, json};

/// The whole loop: next --claim, show, ask with options, the answer's event waking
/// `next --claimed-by`, shot, reply, done with the checkout's commit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_agent_loop() {
    let s = real_time_server().await;
    let shot_key = s
        .ok(
            &s.ann,
            "uploadShot",
            json!({"projectId": s.project_id, "contentType": "image/png", "imageBase64": PNG_B64}),
        )
        .await["screenshotKey"]
        .clone();
    s.ok(
        &s.ann,
        "createChange",
        json!({
            "stageId": s.stage_id,
            "title": "Total ignores tax",
            "body": "The order total should include VAT.",
            "route": "/orders",
            "viewport": {"width": 1280, "height": 720},
            "screenshotKey": shot_key,
            "consoleErrors": ["TypeError: tax is undefined"],
            "capture": {"stroke": [], "bounds": null, "elements": [{
                "testId": "orders.total", "componentTestId": "order-summary",
                "sourceAnchor": "src/routes/app.orders.tsx:42", "cssPath": "main > div.total",
                "text": "Total: 42", "tag": "div",
                "rect": {"x": 10.2, "y": 300, "width": 200, "height": 24}
            }]}
        }),
    )
    .await;
    file(&s, &s.ann, "Save button is grey", "/orders").await;
    release(&s, &s.ann).await;
    let agent = Agent::new(&s, &s.agent);

    // next --claim takes both as one group named after their route.
    let out =
        agent.run(&["next", "--claim", "--claimed-by", "agent-a", "--timeout", "10", "--json"]).await.ok();
    let claimed = out.json();
    assert_eq!(claimed["group"]["title"], "Changes on /orders");
    assert_eq!(claimed["group"]["claimedBy"], "agent-a");
    assert_eq!(claimed["changes"].as_array().unwrap().len(), 2);

    // show: everything about #1, and the screenshot saved to a file.
    let out = agent.run(&["show", "#1"]).await.ok();
    for expected in [
        "#1 Total ignores tax",
        "Status:   claimed (claimed by agent-a until",
        "Group:    ",
        "Route:    /orders  (https://demo.example.com/orders)",
        "Viewport: 1280x720",
        "The order total should include VAT.",
        "test id:   orders.total",
        "component: order-summary",
        "source:    src/routes/app.orders.tsx:42 as of a91c4e2",
        "css:       main > div.total",
        "text:      \"Total: 42\"",
        "- TypeError: tax is undefined",
    ] {
        assert!(out.stdout.contains(expected), "missing {expected:?} in:\n{}", out.stdout);
    }
    assert!(out.stdout.contains("rect:      x 10 y 300, 200x24 (CSS px in the viewport)"), "{}", out.stdout);
    let path = out.stdout.lines().find_map(|l| l.strip_prefix("Screenshot: ")).expect("a screenshot path");
    assert_eq!(std::fs::read(path).unwrap(), png_bytes());
    // Saved once, in the agent's cache, private, at the same path every time.
    assert!(Path::new(path).starts_with(agent.home.path().join(".cache/redline/images")), "{path}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(path).unwrap().permissions().mode() & 0o777, 0o600);
    }
    let shown = agent.run(&["show", "--change-id", "1", "--json"]).await.ok().json();
    assert_eq!(shown["change"]["title"], "Total ignores tax");
    assert_eq!(shown["screenshotPath"].as_str().unwrap(), path, "the screenshot is saved once, at one path");

    // ask with options: the item waits for an answer.
    let asked = agent
        .run(&[
            "ask",
            "1",
            "Which tax rate?",
            "--option",
            "Standard VAT",
            "--option",
            "Reduced VAT",
            "--json",
        ])
        .await
        .ok()
        .json();
    let options = asked["message"]["attachments"].as_array().unwrap().clone();
    assert_eq!(options.len(), 2);
    assert_eq!(asked["message"]["authorName"], "agent-a");
    let item = s.ok(&s.agent, "getChange", json!({"changeId": "1", "projectId": s.project_id})).await;
    assert_eq!(item["change"]["status"], "needs_answer");

    // The answer's event wakes `next --claimed-by` (its timeout, 30 s, is far off).
    let mut waiting = agent.spawn(&["next", "--claimed-by", "agent-a", "--timeout", "30"]);
    waiting.wait_until_only_an_event_wakes_it().await;
    let answer = json!({
        "changeId": "1", "projectId": s.project_id, "body": "The standard one", "chosenOption": options[0]["key"]
    });
    s.ok(&s.ann, "answerChangeQuestion", answer).await;
    let (out, seen) = waiting.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert!(seen.iter().any(|l| l.contains("event wakes next")), "woken by the answer's event: {seen:#?}");
    assert!(out.stdout.contains("1 item answered:\n  #1  Total ignores tax"), "{}", out.stdout);
    assert!(out.stdout.contains("Question (answered): Which tax rate?"), "{}", out.stdout);
    assert!(out.stdout.contains("1. Standard VAT  (key "), "{}", out.stdout);
    assert!(out.stdout.contains("  <- chosen\n"), "{}", out.stdout);
    // The server repeats the chosen label in the answer's words.
    assert!(out.stdout.contains("Answer:   Ann: Standard VAT: The standard one"), "{}", out.stdout);

    // shot and reply land in the thread, under the claim's fence.
    let shot = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(shot.path(), png_bytes()).unwrap();
    let shot_path = shot.path().to_str().unwrap();
    let out =
        agent.run(&["shot", "1", "--image", shot_path, "--label", "After the fix", "--json"]).await.ok();
    assert_eq!(out.json()["message"]["attachments"][0]["kind"], "evidence");
    let out =
        agent.run(&["shot", "1", "--image", shot_path, "--label", "Option B", "--kind", "option"]).await.ok();
    assert!(out.stdout.starts_with("Attached option \"Option B\" to #1"), "{}", out.stdout);
    let out =
        agent.run(&["reply", "1", "--message", "Fixed in the next build", "--image", shot_path]).await.ok();
    assert_eq!(out.stdout.trim(), "Replied on #1.");
    let not_image = agent.run(&["shot", "1", "--image", "/etc/hostname", "--label", "x"]).await;
    assert_eq!(not_image.code, 1);
    assert!(not_image.stderr.contains("is not a png, jpeg or webp image"), "{not_image:?}");

    // done records the branch and the commit whose trailer names the item.
    let (repo, _) = git_repo();
    let sha = commit(repo.path(), "fix(orders): #1 add the tax\n\nChange: #1");
    let done = agent.run_in(repo.path(), &["done", "1", "--note", "Tax added", "--json"]).await.ok().json();
    assert_eq!(done["change"]["status"], "done");
    assert_eq!(done["change"]["headCommit"], sha.as_str());
    assert_eq!(done["change"]["branch"], "main");
    // On a detached HEAD no branch is recorded.
    let second = commit(repo.path(), "fix(orders): #2 colour the save button\n\nChange: #2");
    git(repo.path(), &["checkout", "-q", "--detach"]);
    let out = agent.run_in(repo.path(), &["done", "#2"]).await.ok();
    assert_eq!(
        out.stdout.trim(),
        format!(
            "#2 is done in {}. It goes live when the stage deploys a build that contains it.",
            &second[..7]
        )
    );
    let item = s.ok(&s.agent, "getChange", json!({"changeId": "2", "projectId": s.project_id})).await;
    assert_eq!(item["change"]["headCommit"], second.as_str());
    assert_eq!(item["change"]["branch"], serde_json::Value::Null);

    // The thread holds the question, the answer, the shots, the reply and the note.
    let out = agent.run(&["show", "1"]).await.ok();
    assert!(out.stdout.contains("Thread (6):"), "{}", out.stdout);
    assert!(
        out.stdout.contains("option") && out.stdout.contains("Standard VAT  <- chosen"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("agent agent-a (note): Tax added"), "{}", out.stdout);
    assert!(out.stdout.contains(&format!("Fixed in: {} on main", &sha[..7])), "{}", out.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exit_codes() {
    let s = real_time_server().await;
    let agent = Agent::new(&s, &s.agent);
    // 2: nothing to do (once, or before the timeout).
    let out = agent.run(&["next", "--once"]).await;
    assert_eq!((out.code, out.stderr.trim()), (2, "redline: no work"), "{out:?}");
    let started = Instant::now();
    let out = agent.run(&["wait", "--timeout", "1"]).await;
    assert_eq!(out.code, 2, "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // 0: work printed.
    file(&s, &s.ann, "Broken link", "/help").await;
    release(&s, &s.ann).await;
    let out = agent.run(&["next", "--once"]).await.ok();
    assert!(out.stdout.starts_with("1 item to claim:\n  #1 "), "{}", out.stdout);
    assert!(out.stdout.contains("redline claim --change-ids 1 --claimed-by NAME"), "{}", out.stdout);
    // 3: the session is refused (bad token, missing scope) or there is none.
    let bad = Agent::new(&s, "rl_not_a_token");
    for args in [&["next", "--once"][..], &["list"], &["show", "1"]] {
        let out = bad.run(args).await;
        assert_eq!(out.code, 3, "{args:?}: {out:?}");
        assert!(out.stderr.contains("Sign in again: redline login"), "{out:?}");
        assert!(!out.stderr.contains("rl_not_a_token"), "the token must never be printed");
    }
    let reader = Agent::new(&s, &s.reader);
    let out = reader.run(&["claim", "--change-ids", "1", "--claimed-by", "r"]).await;
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("changes:project:write"), "{out:?}");
    let nobody = Agent::bare();
    let out = nobody.run(&["list", "--api-url", &s.base]).await;
    assert_eq!(out.code, 3, "{out:?}");
    assert!(out.stderr.contains("not signed in to http://127.0.0.1"), "{out:?}");
    // 1: anything else, with the message; a usage error too (2 would read as "no work").
    let out = agent.run(&["next", "--no-such-flag"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    let out = agent.run(&["show", "99"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("no item 99 in this project (404 not_found)"), "{out:?}");
    let out = agent.run(&["show", "abc"]).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("\"abc\" is not an item"), "{out:?}");
    let out = agent.run(&["list", "--api-url", "http://example.com"]).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("refusing plain http to example.com"), "{out:?}");
    let out = agent.run(&["list", "--api-url", "http://127.0.0.1:9"]).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("cannot connect"), "{out:?}");
}

/// A held batch: `next` sleeps until the hold ends (+1 s) and does not poll meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_sleeps_until_a_held_batch_is_released() {
    let s = real_time_server().await;
    // File as if 57 s ago: the 60 s hold ends 3 s from now.
    s.clock.advance_millis(-57_000);
    let filed = file(&s, &s.ann, "Typo in header", "/").await;
    s.clock.advance_millis(57_000);
    let held_until = redline_protocol::Timestamp::parse(filed["heldUntil"].as_str().unwrap()).unwrap();
    let agent = Agent::new(&s, &s.agent);
    let out = agent.run(&["next", "--once"]).await;
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("1 held by their filer, claimable from"), "{out:?}");
    let waiting = agent.spawn(&["next", "--timeout", "20", "--interval", "5"]);
    let (out, seen) = waiting.finish(Duration::from_secs(20)).await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("#1    open         Typo in header"), "{}", out.stdout);
    let after_hold = now - held_until.unix_millis();
    assert!((900..2_500).contains(&after_hold), "woke {after_hold} ms after the hold ended");
    // The first look, one after the stream connected, one at the hold's end: no polls.
    assert!(Running::looks(&seen) <= 3, "{seen:#?}");
}

/// "Send now": releasing the batch wakes `next` at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_wakes_when_the_filer_sends_now() {
    let s = real_time_server().await;
    file(&s, &s.ann, "Logo blurry", "/").await;
    let agent = Agent::new(&s, &s.agent);
    let mut waiting = agent.spawn(&["next", "--claim", "--claimed-by", "agent-a", "--timeout", "30"]);
    waiting.wait_until_only_an_event_wakes_it().await;
    release(&s, &s.ann).await;
    let (out, seen) = waiting.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert!(seen.iter().any(|l| l.contains("event wakes next")), "woken by the release's event: {seen:#?}");
    assert!(out.stdout.starts_with("Claimed 1 item as \"Changes on /\" for agent-a"), "{}", out.stdout);
}

/// Two agents woken by the same release: one claims the item, the other (refused with
/// `not_claimable`) goes back to waiting.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_agents_claim_an_item_once() {
    let s = real_time_server().await;
    file(&s, &s.ann, "Only one of you", "/").await;
    let (a, b) = (Agent::new(&s, &s.agent), Agent::new(&s, &s.agent));
    let mut first = a.spawn(&["next", "--claim", "--claimed-by", "agent-a", "--timeout", "5"]);
    let mut second = b.spawn(&["next", "--claim", "--claimed-by", "agent-b", "--timeout", "5"]);
    first.wait_for("event stream connected", Duration::from_secs(10)).await;
    second.wait_for("event stream connected", Duration::from_secs(10)).await;
    release(&s, &s.ann).await;
    let (one, _) = first.finish(Duration::from_secs(15)).await;
    let (two, _) = second.finish(Duration::from_secs(15)).await;
    let mut codes = [one.code, two.code];
    codes.sort();
    assert_eq!(codes, [0, 2], "{one:?}\n{two:?}");
    let groups = s.ok(&s.agent, "listChanges", json!({"projectId": s.project_id})).await["groups"].clone();
    assert_eq!(groups.as_array().unwrap().len(), 1, "{groups}");
}

/// With the stream up, `next` does not poll: over 12 s with `--interval 5` it looks
/// only at the start and once the stream connects.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_does_not_poll_while_the_stream_is_up() {
    let s = real_time_server().await;
    let agent = Agent::new(&s, &s.agent);
    let waiting = agent.spawn(&["next", "--timeout", "12", "--interval", "5"]);
    let (out, seen) = waiting.finish(Duration::from_secs(20)).await;
    assert_eq!(out.code, 2, "{out:?}");
    assert!(seen.iter().any(|l| l.contains("event stream connected")), "{seen:#?}");
    assert!(Running::looks(&seen) <= 2, "{seen:#?}");
}

/// A proxy in front of the test server that has no event stream (404 for `/events/…`),
/// like a server without server-sent events.
async fn proxy_without_events(base: String) -> String {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    let http = reqwest::Client::new();
    let app = axum::Router::new().fallback(move |req: axum::extract::Request| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            if req.uri().path().starts_with("/events/") {
                return (StatusCode::NOT_FOUND, "no event streams here").into_response();
            }
            let path = req.uri().path_and_query().map_or("/", |p| p.as_str());
            let mut forward = http.request(req.method().clone(), format!("{base}{path}"));
            for (name, value) in req.headers() {
                if name != header::HOST {
                    forward = forward.header(name, value);
                }
            }
            let body = axum::body::to_bytes(req.into_body(), 16 << 20).await.unwrap();
            let res = forward.body(body).send().await.unwrap();
            let status = res.status();
            (status, res.bytes().await.unwrap()).into_response()
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    url
}

/// Without a stream, `next` polls every `--interval` seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_polls_when_the_server_has_no_stream() {
    let s = real_time_server().await;
    let mut agent = Agent::bare();
    agent.env.push(("REDLINE_API_URL".into(), proxy_without_events(s.base.clone()).await));
    agent.env.push(("REDLINE_TOKEN".into(), s.agent.clone()));
    let mut waiting = agent.spawn(&["next", "--timeout", "20", "--interval", "5"]);
    waiting.wait_for("no event stream; polling", Duration::from_secs(10)).await;
    // The first look found nothing: the item is found by the poll after it.
    waiting.wait_for("waiting for an event", Duration::from_secs(10)).await;
    file(&s, &s.ann, "Found by polling", "/").await;
    release(&s, &s.ann).await;
    let started = waiting.started;
    let (out, seen) = waiting.finish(Duration::from_secs(20)).await;
    let took = started.elapsed();
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("Found by polling"), "{out:?}");
    assert!(took > Duration::from_millis(4_500) && took < Duration::from_secs(8), "found after {took:?}");
    assert_eq!(Running::looks(&seen), 2, "{seen:#?}");
}

/// 409 `not_claimable`: why, per item, with local HH:MM, and what to do instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_explains_what_cannot_be_claimed() {
    let s = real_time_server().await;
    let held = file(&s, &s.ann, "Held item", "/a").await;
    let a = Agent::new(&s, &s.agent);
    let out = a.run(&["claim", "--change-ids", "1,#99", "--claimed-by", "agent-a"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    let at = hhmm_utc(held["heldUntil"].as_str().unwrap());
    assert!(
        out.stderr
            .contains(&format!("#1 is held: its filer is still adding to the batch; claimable at {at}")),
        "{out:?}"
    );
    assert!(out.stderr.contains("#99 was not found in this project"), "{out:?}");
    assert!(
        out.stderr.contains("Wait for claimable work instead: redline wait --claim --claimed-by agent-a")
    );

    // Inside another agent's lease: by whom, and until when.
    release(&s, &s.ann).await;
    let b = Agent::new(&s, &s.agent);
    let claimed =
        b.run(&["claim", "--change-ids", "1", "--claimed-by", "agent-b", "--json"]).await.ok().json();
    let until = hhmm_utc(claimed["group"]["claimExpiresAt"].as_str().unwrap());
    let out = a.run(&["claim", "--change-ids", "1", "--claimed-by", "agent-a", "--json"]).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains(&format!(
            "#1 is inside another group's lease (claimed by agent-b); claimable at {until}"
        )),
        "{out:?}"
    );
    let body = out.json();
    assert_eq!(body["code"], "not_claimable");
    assert_eq!(body["items"][0]["reason"], "leased");

    // Renewing by group id keeps the fence.
    let group_id = claimed["group"]["groupId"].as_str().unwrap();
    let renewed = b
        .run(&["claim", "--group-id", group_id, "--claimed-by", "agent-b", "--lease-minutes", "60", "--json"])
        .await
        .ok()
        .json();
    assert_eq!(renewed["group"]["fence"], claimed["group"]["fence"]);
}

/// What a claimant called itself and what a server says in an error reach the terminal
/// without control characters: a name or a message cannot clear the screen or rewrite
/// what the agent's person reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claimants_names_and_server_errors_print_without_control_characters() {
    let s = real_time_server().await;
    file(&s, &s.ann, "Header wraps", "/").await;
    release(&s, &s.ann).await;
    let evil = "evil\u{1b}[2J\u{1b}]0;owned\u{7}\r";
    let claim = json!({"projectId": s.project_id, "changeIds": ["1"], "claimedBy": evil});
    s.ok(&s.agent, "claimChanges", claim).await;
    let a = Agent::new(&s, &s.agent);
    let refused = a.run(&["claim", "--change-ids", "1", "--claimed-by", "agent-a"]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
    let shown = a.run(&["show", "1"]).await.ok();
    let listed = a.run(&["list"]).await.ok();
    for (out, said) in
        [(&refused.stderr, "claimed by evil[2J]0;owned"), (&shown.stdout, "claimed by evil[2J]0;owned")]
    {
        assert!(out.contains(said), "{out:?}");
    }
    for out in [&refused.stderr, &shown.stdout, &listed.stdout] {
        assert!(!out.contains(['\u{1b}', '\u{7}', '\r']), "{out:?}");
    }

    // A server whose error message holds escape sequences.
    let app = axum::Router::new().fallback(|| async {
        let body = json!({"message": "gone\u{1b}[2J\u{1b}[31m red", "code": "bad\u{1b}[0m_input"});
        (axum::http::StatusCode::BAD_REQUEST, axum::Json(body))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut b = Agent::bare();
    b.env.push(("REDLINE_API_URL".into(), url));
    b.env.push(("REDLINE_TOKEN".into(), "rl_x".into()));
    let out = b.run(&["show", "1"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("gone[2J[31m red (400 bad[0m_input)"), "{out:?}");
    assert!(!out.stderr.contains('\u{1b}'), "{out:?}");
}

/// A superseded agent is refused (409 `lease_lost`) and told so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_superseded_agent_is_refused() {
    let s = real_time_server().await;
    file(&s, &s.ann, "Footer overlaps", "/").await;
    release(&s, &s.ann).await;
    let a = Agent::new(&s, &s.agent);
    let b = Agent::new(&s, &s.agent);
    a.run(&["claim", "--change-ids", "1", "--claimed-by", "agent-a", "--lease-minutes", "1"]).await.ok();
    // a's lease lapses and b claims the item.
    s.advance_secs(61);
    b.run(&["next", "--claim", "--claimed-by", "agent-b", "--once"]).await.ok();
    let (repo, _) = git_repo();
    commit(repo.path(), "fix(footer): #1 stop the overlap\n\nChange: #1");
    for args in [&["done", "1"][..], &["reply", "1", "--message", "still on it"], &["ask", "1", "Really?"]] {
        let out = a.run_in(repo.path(), args).await;
        assert_eq!(out.code, 1, "{args:?}: {out:?}");
        assert!(out.stderr.contains("your lease is lost (409 lease_lost)"), "{out:?}");
        assert!(out.stderr.contains("Another agent has claimed this item since"), "{out:?}");
    }
    // b, the current claimant, may.
    b.run_in(repo.path(), &["done", "1"]).await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_and_file() {
    let s = real_time_server().await;
    let ann = Agent::new(&s, &s.ann);
    let out = ann.run(&["file", "Menu does not close", "--body", "On mobile", "--route", "/menu"]).await.ok();
    assert!(
        out.stdout.starts_with("Filed #1 \"Menu does not close\" on main; held until "),
        "{}",
        out.stdout
    );
    let filed =
        ann.run(&["file", "Second", "--stage", "https://demo.example.com/x", "--json"]).await.ok().json();
    assert_eq!(filed["change"]["shortId"], "2");
    assert_eq!(filed["change"]["source"], "cli");
    let held_until = hhmm_utc(filed["change"]["heldUntil"].as_str().unwrap());
    let agent = Agent::new(&s, &s.agent);
    let out = agent.run(&["list"]).await.ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{}", out.stdout);
    assert_eq!(
        lines[0],
        format!(
            "#1    open         Menu does not close  /menu  (held by its filer, claimable at {held_until})"
        )
    );
    // --all adds done and dismissed items.
    s.ok(&s.ann, "withdrawChange", json!({"changeId": "2", "projectId": s.project_id})).await;
    assert_eq!(agent.run(&["list"]).await.ok().stdout.lines().count(), 1);
    let all = agent.run(&["list", "--all", "--json"]).await.ok().json();
    assert_eq!(all["changes"].as_array().unwrap().len(), 2);
    assert_eq!(all["changes"][1]["status"], "dismissed");
    let out = agent.run(&["list", "--stage", "nope"]).await;
    assert_eq!(out.code, 1);
    assert!(
        out.stderr.contains("no stage \"nope\": the project has main (https://demo.example.com)"),
        "{out:?}"
    );
    // An agent token cannot file.
    let out = agent.run(&["file", "x"]).await;
    assert_eq!(out.code, 3, "{out:?}");
}

/// An agent's item, claimed, asked "Red or Blue?": its options' keys by label.
async fn asked_red_or_blue(s: &TestServer, agent: &Agent, extra: &[&str]) -> Vec<(String, String)> {
    file(s, &s.ann, "Which colour?", "/orders").await;
    release(s, &s.ann).await;
    agent.run(&["claim", "--change-ids", "1", "--claimed-by", "agent-a"]).await.ok();
    let ask =
        [&["ask", "1", "Red or Blue?", "--option", "Red", "--option", "Blue", "--json"], extra].concat();
    let asked = agent.run(&ask).await.ok().json();
    asked["message"]["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["url"].is_null())
        .map(|a| (a["label"].as_str().unwrap().to_owned(), a["key"].as_str().unwrap().to_owned()))
        .collect()
}

async fn answer(s: &TestServer, key: &str) {
    let answer = json!({"changeId": "1", "projectId": s.project_id, "body": "", "chosenOption": key});
    s.ok(&s.ann, "answerChangeQuestion", answer).await;
}

fn png_file() -> tempfile::NamedTempFile {
    let shot = tempfile::Builder::new().suffix(".png").tempfile().unwrap();
    std::fs::write(shot.path(), png_bytes()).unwrap();
    shot
}

/// `wait --claimed-by --once`: exit 0 with the answer printed the first time, then exit 2.
async fn answer_reaches_the_agent_once(agent: &Agent, label: &str) {
    let out = agent.run(&["wait", "--claimed-by", "agent-a", "--once"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("1 item answered:"), "{}", out.stdout);
    assert!(out.stdout.contains(&format!("Answer:   Ann: {label}")), "{}", out.stdout);
    let again = agent.run(&["wait", "--claimed-by", "agent-a", "--once"]).await;
    assert_eq!((again.code, again.stderr.trim()), (2, "redline: no work"), "shown once: {again:?}");
}

/// The reported loss: the filer answered before the agent attached its last option
/// image, so the agent spoke last; the answer still reaches it, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_before_the_last_option_shot_still_wakes_the_agent() {
    let s = real_time_server().await;
    let agent = Agent::new(&s, &s.agent);
    let keys = asked_red_or_blue(&s, &agent, &[]).await;
    let shot = png_file();
    let shot = shot.path().to_str().unwrap();
    agent.run(&["shot", "1", "--image", shot, "--label", "Red", "--kind", "option"]).await.ok();
    answer(&s, &keys[1].1).await;
    agent.run(&["shot", "1", "--image", shot, "--label", "Blue", "--kind", "option"]).await.ok();
    answer_reaches_the_agent_once(&agent, "Blue").await;
    // A later reply of the agent's changes nothing; a new answer wakes it again.
    agent.run(&["reply", "1", "--message", "On it"]).await.ok();
    assert_eq!(agent.run(&["wait", "--claimed-by", "agent-a", "--once"]).await.code, 2);
    agent.run(&["ask", "1", "Darker?", "--option", "Yes"]).await.ok();
    let yes = s.ok(&s.agent, "getChange", json!({"changeId": "1", "projectId": s.project_id})).await;
    let question = yes["thread"].as_array().unwrap().last().unwrap().clone();
    answer(&s, question["attachments"][0]["key"].as_str().unwrap()).await;
    answer_reaches_the_agent_once(&agent, "Yes").await;
}

/// The question with its images in one step, answered at once; and an answer
/// given after the shots, as before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_arrives_with_its_images_and_its_answer_reaches_the_agent() {
    let s = real_time_server().await;
    let agent = Agent::new(&s, &s.agent);
    let red = png_file();
    let red_image = format!("Red={}", red.path().display());
    let keys = asked_red_or_blue(&s, &agent, &["--option-image", &red_image]).await;
    let item = s.ok(&s.agent, "getChange", json!({"changeId": "1", "projectId": s.project_id})).await;
    let thread = item["thread"].as_array().unwrap();
    assert_eq!(thread.len(), 1, "the question and its image are one message: {thread:?}");
    let images: Vec<&Value> =
        thread[0]["attachments"].as_array().unwrap().iter().filter(|a| !a["url"].is_null()).collect();
    assert_eq!(images.len(), 1);
    assert_eq!(images[0]["label"], "Red");
    // `show` lists each choice once, its image beside it, as the panel does.
    let shown = agent.run(&["show", "1"]).await.ok().stdout;
    let options: Vec<&str> = shown.lines().filter(|l| l.trim_start().starts_with("option ")).collect();
    assert_eq!(options.len(), 2, "Red and Blue, not Red's image as a third: {shown}");
    assert!(options[0].contains(": Red  /") && options[0].ends_with(".png"), "{shown}");
    answer(&s, &keys[0].1).await;
    let out = agent.run(&["wait", "--claimed-by", "agent-a", "--once"]).await.ok();
    assert!(out.stdout.contains("1. Red  (key "), "{}", out.stdout);
    assert!(out.stdout.contains("  image "), "the option's image is saved and named: {}", out.stdout);
    let stray = agent
        .run(&[
            "ask",
            "1",
            "Again?",
            "--option",
            "Red",
            "--option-image",
            &format!("Green={}", red.path().display()),
        ])
        .await;
    assert_eq!(stray.code, 1);
    assert!(stray.stderr.contains("names no option"), "{stray:?}");
}

/// What was shown is the server's: an answer given before a restart reaches the agent
/// from another server process on the same store, and only once across both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_survives_a_restart_and_is_shown_once_across_instances() {
    let s = real_time_server().await;
    let agent = Agent::new(&s, &s.agent);
    let keys = asked_red_or_blue(&s, &agent, &[]).await;
    answer(&s, &keys[0].1).await;
    let (_restarted, url) = common::serve(&s.store_args()).await;
    let mut other = Agent::new(&s, &s.agent);
    other.env.retain(|(k, _)| k != "REDLINE_API_URL");
    other.env.push(("REDLINE_API_URL".into(), url));
    let out = other.run(&["wait", "--claimed-by", "agent-a", "--once"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains("Answer:   Ann: Red"), "{}", out.stdout);
    let here = agent.run(&["wait", "--claimed-by", "agent-a", "--once"]).await;
    assert_eq!(here.code, 2, "shown by the other instance: {here:?}");
}

/// `listAgents`: an agent is waiting while its `wait` is open, and no longer once it
/// ends; its writes move when it was last seen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_agent_is_waiting_while_its_wait_is_open_and_seen_when_it_writes() {
    let s = real_time_server().await;
    let agent = Agent::new(&s, &s.agent);
    let agents = || async {
        s.ok(&s.reader, "listAgents", json!({"projectId": s.project_id})).await["agents"].clone()
    };
    assert_eq!(agents().await, json!([]));
    let mut waiting = agent.spawn(&["wait", "--claimed-by", "agent-a", "--timeout", "30"]);
    waiting.wait_for("event stream connected", Duration::from_secs(10)).await;
    let listed = agents().await;
    assert_eq!(listed[0]["name"], "agent-a");
    assert_eq!(listed[0]["waiting"], true, "{listed}");
    drop(waiting);
    let deadline = Instant::now() + Duration::from_secs(5);
    while agents().await[0]["waiting"] == true {
        assert!(Instant::now() < deadline, "still waiting after its wait ended");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // A claim and a reply as agent-b: seen, not waiting.
    file(&s, &s.ann, "Logo blurry", "/").await;
    release(&s, &s.ann).await;
    agent.run(&["claim", "--change-ids", "1", "--claimed-by", "agent-b"]).await.ok();
    agent.run(&["reply", "1", "--message", "Looking"]).await.ok();
    let listed = agents().await;
    let names: Vec<(&str, bool)> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["name"].as_str().unwrap(), a["waiting"] == true))
        .collect();
    assert_eq!(names, [("agent-b", false), ("agent-a", false)], "the latest seen first");
    // A name that cannot be an agent's is refused.
    let long = "a".repeat(201);
    let res = s
        .http
        .get(format!("{}/events/changes:{}?claimedBy={long}", s.base, s.project_id))
        .bearer_auth(&s.agent)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 400);
}

/// `done` in a checkout whose remote is on GitHub records the commit's page, and the
/// pull request's from `--pr` or from the commit's `PR:` trailer; `show` prints both,
/// the server refuses links that are not https, and a reopening keeps them with
/// `headCommit`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn done_links_the_commit_and_pull_request_on_github() {
    let s = real_time_server().await;
    for title in ["Total ignores tax", "Save button is grey", "Header overlaps"] {
        file(&s, &s.ann, title, "/orders").await;
    }
    release(&s, &s.ann).await;
    let agent = Agent::new(&s, &s.agent);
    agent.run(&["next", "--claim", "--claimed-by", "agent-a", "--timeout", "10"]).await.ok();
    let (repo, _) = git_repo();
    git(repo.path(), &["remote", "add", "origin", "git@github.com:acme/shop.git"]);
    let get = async |n: &str| {
        s.ok(&s.agent, "getChange", json!({"changeId": n, "projectId": s.project_id})).await["change"].clone()
    };

    let first = commit(repo.path(), "fix: tax\n\nChange: #1");
    agent.run_in(repo.path(), &["done", "1"]).await.ok();
    let one = get("1").await;
    assert_eq!(one["commitUrl"], format!("https://github.com/acme/shop/commit/{first}"));
    assert_eq!(one.get("pullRequestUrl"), None, "{one}");

    let second = commit(repo.path(), "fix: save button\n\nChange: #2");
    agent.run_in(repo.path(), &["done", "2", "--pr", "12"]).await.ok();
    let two = get("2").await;
    assert_eq!(two["commitUrl"], format!("https://github.com/acme/shop/commit/{second}"));
    assert_eq!(two["pullRequestUrl"], "https://github.com/acme/shop/pull/12");
    let shown = agent.run(&["show", "2"]).await.ok().stdout;
    assert!(shown.contains(&format!("Commit: https://github.com/acme/shop/commit/{second}\n")), "{shown}");
    assert!(shown.contains("Pull request: https://github.com/acme/shop/pull/12\n"), "{shown}");

    commit(repo.path(), "fix: header\n\nChange: #3\nPR: #40");
    agent.run_in(repo.path(), &["done", "3"]).await.ok();
    assert_eq!(get("3").await["pullRequestUrl"], "https://github.com/acme/shop/pull/40");

    // Still wrong: the item reopens with its commit, and so with its links.
    let verdict =
        json!({"changeId": "2", "projectId": s.project_id, "verdict": "still_wrong", "body": "still grey"});
    s.ok(&s.ann, "verifyChange", verdict).await;
    let reopened = get("2").await;
    assert_eq!((reopened["status"].as_str(), &reopened["headCommit"]), (Some("open"), &two["headCommit"]));
    assert_eq!(
        (&reopened["commitUrl"], &reopened["pullRequestUrl"]),
        (&two["commitUrl"], &two["pullRequestUrl"])
    );

    for (field, url) in
        [("commitUrl", "http://github.com/acme/shop/commit/1"), ("pullRequestUrl", "https://a b")]
    {
        let input = json!({"changeId": "1", "projectId": s.project_id, field: url});
        let body = s.err(&s.agent, "completeChange", input, 400, "bad_input").await;
        assert!(body["message"].as_str().unwrap().starts_with(&format!("{field}:")), "{body}");
    }
}
