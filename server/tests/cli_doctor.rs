//! `redline doctor`, run as the real binary against a real server: a set-up missing
//! its optional pieces (notes, exit 0), the same set-up once they are added, a folder
//! outside any checkout, a token that cannot claim, and a server that is not there
//! (failures, exit 1).

mod cli_support;
mod common;

use std::time::{Duration, Instant};

use cli_support::*;
use common::TestServer;
use serde_json::Value;

/// The line of check `name`, asserting it passed (`ok`) or failed.
#[track_caller]
fn line<'a>(out: &'a Out, name: &str, ok: bool) -> &'a str {
    marked(out, name, if ok { "ok  " } else { "FAIL" })
}

/// The line of check `name`, asserting its mark (`ok  `, `note` or `FAIL`).
#[track_caller]
fn marked<'a>(out: &'a Out, name: &str, mark: &str) -> &'a str {
    let prefix = format!("{mark} {name}: ");
    out.stdout
        .lines()
        .find(|l| l.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line: {out:?}"))
}

/// The fix printed under check `name`, its lines joined.
#[track_caller]
fn fix_of(out: &Out, name: &str) -> String {
    let start = out
        .stdout
        .lines()
        .position(|l| l.starts_with(&format!("FAIL {name}: ")) || l.starts_with(&format!("note {name}: ")))
        .unwrap();
    let fix: Vec<&str> =
        out.stdout.lines().skip(start + 1).take_while(|l| l.starts_with("     ")).map(str::trim).collect();
    assert!(fix.first().is_some_and(|l| l.starts_with("fix: ")), "{out:?}");
    fix.join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bare_checkout_gets_notes_until_its_remote_skill_and_mcp_are_added() {
    let s = TestServer::start().await;
    let agent = Agent::new(&s, &s.agent);
    let (repo, _) = git_repo();

    // What is required works: the rest is advice, and doctor passes.
    let out = agent.run_in(repo.path(), &["doctor"]).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert!(line(&out, "server", true).contains(&format!("{} answers GET /healthz", s.base)));
    assert!(line(&out, "sign-in", true).contains("changes:project:write"), "{out:?}");
    line(&out, "event stream", true);
    let checkout = marked(&out, "git checkout", "note");
    assert!(checkout.contains("has no remote") && checkout.contains("without their links"), "{out:?}");
    assert!(fix_of(&out, "git checkout").contains("git remote add origin URL"), "{out:?}");
    marked(&out, "skill", "note");
    assert_eq!(fix_of(&out, "skill"), "fix: redline skill install");
    marked(&out, "mcp", "note");
    let fix = fix_of(&out, "mcp");
    assert!(fix.contains(r#"{"mcpServers": {"redline": {"command": "redline", "args": ["mcp"]}}}"#), "{fix}");
    assert!(fix.contains("claude mcp add redline -- redline mcp"), "{fix}");

    git(repo.path(), &["remote", "add", "origin", "https://user:secret@example.com/team/app.git"]);
    agent.run_in(repo.path(), &["skill", "install"]).await.ok();
    let mcp_json = r#"{"mcpServers": {"redline": {"command": "redline", "args": ["mcp"]}}}"#;
    std::fs::write(repo.path().join(".mcp.json"), mcp_json).unwrap();
    // From a folder below the top, as an agent may run it.
    let sub = repo.path().join("src");
    std::fs::create_dir(&sub).unwrap();

    let out = agent.run_in(&sub, &["doctor"]).await.ok();
    for name in ["server", "sign-in", "event stream", "git checkout", "skill", "mcp"] {
        line(&out, name, true);
    }
    assert_eq!(out.stdout.lines().count(), 6, "{out:?}");
    assert!(line(&out, "git checkout", true).ends_with("remote origin https://example.com/team/app.git"));
    assert!(line(&out, "skill", true).contains("(the same as this redline's)"), "{out:?}");
    assert!(line(&out, "mcp", true).contains(".mcp.json: redline)"), "{out:?}");
    assert!(!out.stdout.contains("secret") && !out.stdout.contains(&s.agent), "{out:?}");

    // --json: the same checks, every one passed.
    let out = agent.run_in(&sub, &["doctor", "--json"]).await.ok();
    let checks = out.json()["checks"].as_array().unwrap().clone();
    let names: Vec<&str> = checks.iter().map(|c| c["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["server", "sign-in", "event stream", "git checkout", "skill", "mcp"]);
    assert!(checks.iter().all(|c| c["ok"] == true && c["fix"] == Value::Null), "{checks:?}");
}

/// Outside a checkout `done` cannot record a commit: a failure, whatever the notes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_a_checkout_doctor_fails() {
    let s = TestServer::start().await;
    let agent = Agent::new(&s, &s.agent);
    let outside = tempfile::tempdir().unwrap();
    let out = agent.run_in(outside.path(), &["doctor", "--json"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    let checks = out.json()["checks"].clone();
    let status: Vec<(&str, &str)> = checks
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        status,
        [
            ("server", "ok"),
            ("sign-in", "ok"),
            ("event stream", "ok"),
            ("git checkout", "fail"),
            ("skill", "note"),
            ("mcp", "note")
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_token_cannot_claim() {
    let s = TestServer::start().await;
    let agent = Agent::new(&s, &s.reader);
    let (repo, _) = git_repo();
    let out = agent.run_in(repo.path(), &["doctor", "--json"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    let checks = out.json()["checks"].clone();
    let sign_in = &checks[1];
    assert_eq!((sign_in["name"].as_str(), sign_in["ok"].as_bool()), (Some("sign-in"), Some(false)));
    let detail = sign_in["detail"].as_str().unwrap();
    assert!(detail.ends_with("no changes:project:write, so an agent cannot claim"), "{detail}");
    let fix = sign_in["fix"].as_str().unwrap();
    assert!(fix.contains("--scope changes:project:read,changes:project:write"), "{fix}");
    // Reading the stream needs no more than the token has.
    assert_eq!(checks[2]["ok"], true, "{checks}");
    assert!(!out.stdout.contains(&s.reader));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_is_not_there_fails_at_once() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let mut agent = Agent::bare();
    agent.env.push(("REDLINE_API_URL".into(), format!("http://127.0.0.1:{port}")));
    agent.env.push(("REDLINE_TOKEN".into(), "rl_unused".into()));
    let started = Instant::now();
    let out = agent.run(&["doctor"]).await;
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(out.code, 1, "{out:?}");
    assert!(line(&out, "server", false).contains("cannot connect"), "{out:?}");
    assert!(
        fix_of(&out, "server").contains(&format!("the server runs at http://127.0.0.1:{port}")),
        "{out:?}"
    );
    assert!(line(&out, "sign-in", false).contains("not checked"), "{out:?}");
    line(&out, "event stream", false);
}
