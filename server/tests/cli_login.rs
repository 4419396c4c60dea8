//! The agent CLI's configuration (`redline login`, stored tokens, API URLs), the help
//! text, and `redline stage deploy`, run as the real binary against a real server.

mod cli_support;
mod common;

use cli_support::*;
use common::{TestServer, connect, data_lines, read_sse};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_with_a_token_stores_it_privately() {
    let s = TestServer::start().await;
    let me = Agent::bare();
    let out = me.run(&["login", "--api-url", &format!("{}/", s.base), "--token", &s.agent]).await.ok();
    assert!(out.stdout.starts_with(&format!("Signed in to {} as agent (project demo;", s.base)), "{out:?}");
    assert!(
        !out.stdout.contains(&s.agent) && !out.stderr.contains(&s.agent),
        "the token must never be printed"
    );
    let path = me.config_dir().join("credentials.json");
    let creds: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(creds["lastApiUrl"], s.base.as_str());
    assert_eq!(creds["servers"][&s.base]["token"], s.agent.as_str());
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);

    // Later commands use the last login: no URL, no token in the environment.
    s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "Hello"})).await;
    let out = me.run(&["list"]).await.ok();
    assert!(out.stdout.starts_with("#1    open         Hello"), "{out:?}");
    // REDLINE_TOKEN wins over the stored token.
    let mut other = Agent::bare();
    other.home = me.home;
    other.cwd = other.home.path().to_owned();
    other.env.push(("REDLINE_TOKEN".into(), "rl_wrong".into()));
    assert_eq!(other.run(&["list"]).await.code, 3);

    // A refused token is not stored, and exits 3.
    let fresh = Agent::bare();
    let out = fresh.run(&["login", "--api-url", &s.base, "--token", "rl_wrong"]).await;
    assert_eq!(out.code, 3, "{out:?}");
    assert!(!fresh.config_dir().join("credentials.json").exists());
    // Plain http off loopback is refused before anything is sent.
    let out = fresh.run(&["login", "--api-url", "http://192.0.2.1:7878", "--token", "rl_x"]).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("refusing plain http to 192.0.2.1"), "{out:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_with_a_code() {
    let s = TestServer::start().await;
    let me = Agent::bare();
    let out = login_with_code(&s, &me, &["login", "--api-url", &s.base], "agent-c").await;
    let first = out.stdout.lines().next().unwrap();
    assert!(first.contains(&format!("{}/auth/verify", s.base)), "{first}");
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stdout.contains(&format!("Signed in to {} as agent-c", s.base)), "{out:?}");
    me.run(&["list"]).await.ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn help_reads_well() {
    let me = Agent::bare();
    let out = me.run(&["--help"]).await.ok();
    for cmd in ["login", "wait", "claim", "show", "ask", "reply", "shot", "done", "list", "file", "serve"] {
        assert!(out.stdout.contains(&format!("\n  {cmd} ")), "{cmd} missing from:\n{}", out.stdout);
    }
    assert!(out.stdout.contains("[alias: next]"), "`next` stays, as the older name: {}", out.stdout);
    for wait in ["wait", "next"] {
        let out = me.run(&[wait, "--help"]).await.ok();
        assert!(out.stdout.contains("Exit status: 0 work printed, 2 nothing"), "{}", out.stdout);
    }
    for cmd in ["claim", "show", "ask", "reply", "shot", "done", "list", "file", "login"] {
        let out = me.run(&[cmd, "--help"]).await.ok();
        assert!(out.stdout.contains("--api-url <URL>"), "{cmd}: {}", out.stdout);
    }
    let out = me.run(&["stage", "deploy", "--help"]).await.ok();
    assert!(out.stdout.contains("--sha <SHA>"), "{}", out.stdout);
}

/// `stage deploy` marks done items live when the deployed commit contains theirs, and
/// the running server tells its subscribers, though the deploy ran in another process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stage_deploy_marks_contained_items_live() {
    let s = TestServer::start().await;
    for title in ["Old fix", "New fix", "Unknown fix"] {
        s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": title})).await;
    }
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let (repo, c1) = git_repo();
    let c2 = commit(repo.path(), "second");
    let c3 = commit(repo.path(), "fix: #2 third\n\nChange: #2");
    let agent = Agent::new(&s, &s.agent);
    agent.run(&["claim", "--claimed-by", "agent-a"]).await.ok();
    agent.run_in(repo.path(), &["done", "1", "--commit", &c1]).await.ok();
    agent.run_in(repo.path(), &["done", "2"]).await.ok();
    let unknown = "0123456789abcdef0123456789abcdef01234567";
    agent.run_in(repo.path(), &["done", "3", "--commit", unknown]).await.ok();
    let mut events = connect(&s, None, false).await;
    let mut seen = String::new();
    read_sse(&mut events, &mut seen, |t| t.contains(": connected")).await;
    // `--data DIR`, or `--database-url URL` when the suite runs on Postgres.
    let store = s.store_args();
    let (store_flag, store_value) = (store[0].as_str(), store[1].as_str());
    let out = agent
        .run_in(repo.path(), &["stage", "deploy", "--stage", "main", "--sha", &c2, store_flag, store_value])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(
        out.stdout,
        format!(
            "stage main now serves {}\nlive: #1\nnot in this build: #2\nunknown to this checkout (left as they were): #3\n",
            &c2[..7]
        )
    );
    let list = agent.run(&["list", "--all", "--json"]).await.ok().json();
    let live: Vec<_> = list["changes"].as_array().unwrap().iter().map(|c| c["live"].clone()).collect();
    assert_eq!(live, [json!(true), json!(false), json!(false)]);
    // A `status` event for each item whose `live` changed: #1 (#2 was not live before
    // either, #3 was left alone).
    let status = |t: &str| data_lines(t).into_iter().filter(|e| e["type"] == "status").collect::<Vec<_>>();
    read_sse(&mut events, &mut seen, |t| !status(t).is_empty()).await;
    assert_eq!(status(&seen)[0]["shortId"], "1");
    // Deploying the newest commit (by any name git knows) makes #2 live too.
    let out = agent
        .run_in(
            repo.path(),
            &[
                "stage",
                "deploy",
                "--stage",
                "https://demo.example.com",
                "--sha",
                "HEAD",
                store_flag,
                store_value,
                "--json",
            ],
        )
        .await
        .ok()
        .json();
    assert_eq!(out["stage"]["gitSha"], c3.as_str());
    assert_eq!(out["live"], json!(["1", "2"]));
    read_sse(&mut events, &mut seen, |t| status(t).len() >= 2).await;
    let shorts: Vec<_> = status(&seen).iter().map(|e| e["shortId"].clone()).collect();
    assert_eq!(shorts, ["1", "2"], "only #2 changed");
    let out = agent
        .run_in(repo.path(), &["stage", "deploy", "--stage", "nope", "--sha", &c3, store_flag, store_value])
        .await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("no stage \"nope\""), "{out:?}");
}
