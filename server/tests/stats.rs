//! `getStats` (ours): the loop's numbers over a scripted history whose every figure is
//! known, for the project, per agent and per filer; and `redline stats`, which prints them.

mod cli_support;
mod common;

use cli_support::Agent;
use common::TestServer;
use serde_json::{Value, json};

const MIN: i64 = 60;
const DAY: i64 = 24 * 3600;

/// Files `title` as `token` at the server's now; returns its number.
async fn file(s: &TestServer, token: &str, title: &str) -> String {
    let out = s.ok(token, "createChange", json!({"stageId": s.stage_id, "title": title})).await;
    out["change"]["shortId"].as_str().unwrap().to_owned()
}

async fn call(s: &TestServer, token: &str, rpc: &str, item: &str, extra: Value) -> Value {
    let mut input = json!({"changeId": item, "projectId": s.project_id});
    input.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
    s.ok(token, rpc, input).await
}

async fn ask_and_answer(s: &TestServer, item: &str) {
    call(s, &s.agent, "askChangeQuestion", item, json!({"question": "Which?", "authorName": "agent-a"}))
        .await;
    call(s, &s.ann, "answerChangeQuestion", item, json!({"body": "That one"})).await;
}

async fn done(s: &TestServer, item: &str, agent: &str) {
    call(s, &s.agent, "completeChange", item, json!({"authorName": agent})).await;
}

async fn verdict(s: &TestServer, token: &str, item: &str, verdict: &str) {
    call(s, token, "verifyChange", item, json!({"verdict": verdict, "body": "checked"})).await;
}

fn durations(count: u64, median_min: Option<i64>, p90_min: Option<i64>) -> Value {
    let ms = |m: Option<i64>| m.map(|m| m * MIN * 1000);
    json!({"count": count, "medianMs": ms(median_min), "p90Ms": ms(p90_min)})
}

/// The scripted history, minute by minute from T0 (all items filed at T0; #1 a month
/// earlier):
/// - Ann files #1 (31 days before T0, left open), #2, #3, #4; Bob files #5 and #6.
/// - agent-a claims #2, #3, #5 and agent-b #4; agent-a asks twice on #2 (10, 25) and
///   once on #5 (10), each answered.
/// - done: #3 at 20 and #2 at 30 (agent-a), #4 at 60 (agent-b), #5 at 90 (agent-a).
/// - Ann verifies #2 and #3 fixed at 120; Bob finds #5 still wrong at 150; agent-a does
///   it again at 240 and Bob verifies it fixed at 300. Bob dismisses #6. #4 is never
///   verified.
async fn history() -> TestServer {
    let s = TestServer::start().await;
    file(&s, &s.ann, "Old one").await;
    s.advance_secs(31 * DAY);
    for title in ["Tax", "Save button", "Header"] {
        file(&s, &s.ann, title).await;
    }
    for title in ["Footer", "Logo"] {
        file(&s, &s.bob, title).await;
    }
    for filer in [&s.ann, &s.bob] {
        s.ok(filer, "releaseChanges", json!({"stageId": s.stage_id})).await;
    }
    for (agent, items) in [("agent-a", json!(["2", "3", "5"])), ("agent-b", json!(["4"]))] {
        let claim =
            json!({"projectId": s.project_id, "changeIds": items, "claimedBy": agent, "leaseMinutes": 600});
        s.ok(&s.agent, "claimChanges", claim).await;
    }
    s.advance_secs(10 * MIN);
    ask_and_answer(&s, "2").await;
    ask_and_answer(&s, "5").await;
    s.advance_secs(10 * MIN);
    done(&s, "3", "agent-a").await;
    s.advance_secs(5 * MIN);
    ask_and_answer(&s, "2").await;
    s.advance_secs(5 * MIN);
    done(&s, "2", "agent-a").await;
    s.advance_secs(30 * MIN);
    done(&s, "4", "agent-b").await;
    s.advance_secs(30 * MIN);
    done(&s, "5", "agent-a").await;
    s.advance_secs(30 * MIN);
    verdict(&s, &s.ann, "2", "fixed").await;
    verdict(&s, &s.ann, "3", "fixed").await;
    s.advance_secs(30 * MIN);
    verdict(&s, &s.bob, "5", "still_wrong").await;
    s.advance_secs(90 * MIN);
    done(&s, "5", "agent-a").await;
    s.advance_secs(60 * MIN);
    verdict(&s, &s.bob, "5", "fixed").await;
    call(&s, &s.bob, "setChangeStatus", "6", json!({"status": "dismissed"})).await;
    s
}

#[tokio::test]
async fn stats_count_the_loop_per_project_agent_and_filer() {
    let s = history().await;
    let stats = s.ok(&s.reader, "getStats", json!({"projectId": s.project_id})).await;
    let since = s.clock.now().unix_millis() - 30 * DAY * 1000;
    assert_eq!(stats["since"], redline_protocol::Timestamp::from_unix_millis(since).to_string());
    assert_eq!(
        stats["total"],
        json!({
            "name": null, "filed": 5, "done": 4, "dismissed": 1, "verified": 3, "stillWrong": 1,
            "stillWrongRate": 1.0 / 3.0, "questionsPerItem": 0.6,
            // 20, 30, 60, 240 minutes; 120, 120, 300.
            "toDone": durations(4, Some(30), Some(240)),
            "toVerified": durations(3, Some(120), Some(300)),
        })
    );
    assert_eq!(
        stats["agents"],
        json!([
            {
                "name": "agent-a", "filed": 3, "done": 3, "dismissed": 0, "verified": 3, "stillWrong": 1,
                "stillWrongRate": 1.0 / 3.0, "questionsPerItem": 1.0,
                "toDone": durations(3, Some(30), Some(240)),
                "toVerified": durations(3, Some(120), Some(300)),
            },
            {
                "name": "agent-b", "filed": 1, "done": 1, "dismissed": 0, "verified": 0, "stillWrong": 0,
                "stillWrongRate": null, "questionsPerItem": 0.0,
                "toDone": durations(1, Some(60), Some(60)),
                "toVerified": durations(0, None, None),
            },
        ])
    );
    assert_eq!(
        stats["filers"],
        json!([
            {
                "name": "Ann", "filed": 3, "done": 3, "dismissed": 0, "verified": 2, "stillWrong": 0,
                "stillWrongRate": 0.0, "questionsPerItem": 2.0 / 3.0,
                "toDone": durations(3, Some(30), Some(60)),
                "toVerified": durations(2, Some(120), Some(120)),
            },
            {
                "name": "Bob", "filed": 2, "done": 1, "dismissed": 1, "verified": 1, "stillWrong": 1,
                "stillWrongRate": 1.0, "questionsPerItem": 0.5,
                "toDone": durations(1, Some(240), Some(240)),
                "toVerified": durations(1, Some(300), Some(300)),
            },
        ])
    );

    // Sixty days reach Ann's open item of a month before.
    let longer = s.ok(&s.reader, "getStats", json!({"projectId": s.project_id, "sinceDays": 60})).await;
    assert_eq!((&longer["total"]["filed"], &longer["total"]["done"]), (&json!(6), &json!(4)));
    assert_eq!((&longer["filers"][0]["name"], &longer["filers"][0]["filed"]), (&json!("Ann"), &json!(4)));
    assert_eq!(longer["total"]["questionsPerItem"], 0.5);
}

#[tokio::test]
async fn stats_refuse_a_window_out_of_range_and_another_project() {
    let s = TestServer::start().await;
    for days in [0, redline_protocol::STATS_MAX_DAYS + 1] {
        let body = s
            .err(
                &s.reader,
                "getStats",
                json!({"projectId": s.project_id, "sinceDays": days}),
                400,
                "bad_input",
            )
            .await;
        assert!(body["message"].as_str().unwrap().starts_with("sinceDays:"), "{body}");
    }
    s.err(&s.reader, "getStats", json!({"projectId": "another"}), 403, "forbidden").await;
    // No items: zeros, and no rates or durations.
    let empty = s.ok(&s.reader, "getStats", json!({"projectId": s.project_id})).await;
    assert_eq!(
        empty["total"],
        json!({
            "name": null, "filed": 0, "done": 0, "dismissed": 0, "verified": 0, "stillWrong": 0,
            "stillWrongRate": null, "questionsPerItem": null,
            "toDone": durations(0, None, None), "toVerified": durations(0, None, None),
        })
    );
    assert_eq!((&empty["agents"], &empty["filers"]), (&json!([]), &json!([])));
}

/// `redline stats` prints the same figures as a table, `--json` as `getStats` answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_prints_the_numbers() {
    let s = history().await;
    let reader = Agent::new(&s, &s.reader);
    let out = reader.run(&["stats"]).await.ok();
    let lines: Vec<String> =
        out.stdout.lines().map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
    assert_eq!(
        lines[1..],
        [
            "FILED DONE DISMISSED VERIFIED STILL WRONG QUESTIONS/ITEM TO DONE TO VERIFIED",
            "all items 5 4 1 3 1 (33%) 0.60 30m / 4h 2h / 5h",
            "by agent:",
            "agent-a 3 3 0 3 1 (33%) 1.00 30m / 4h 2h / 5h",
            "agent-b 1 1 0 0 0 0.00 1h / 1h -",
            "by filer:",
            "Ann 3 3 0 2 0 (0%) 0.67 30m / 1h 2h / 2h",
            "Bob 2 1 1 1 1 (100%) 0.50 4h / 4h 5h / 5h",
        ],
        "{}",
        out.stdout
    );
    assert!(lines[0].starts_with("Items filed in the last 30 days (since "), "{}", out.stdout);

    let json = reader.run(&["stats", "--project", "demo", "--since", "60d", "--json"]).await.ok().json();
    assert_eq!((&json["total"]["filed"], &json["filers"][0]["filed"]), (&json!(6), &json!(4)));
    let refused = reader.run(&["stats", "--since", "0d"]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("is not a number of days from 1 to 3650"), "{refused:?}");
}
