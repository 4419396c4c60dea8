//! The largest answer of each list-like RPC stays under the bound
//! docs/protocol-additions.md ("Lists are summaries") derives from the input limits:
//! every field at its limit, in the characters JSON writes longest (a control
//! character is escaped as `\u0001`, six bytes; a link may not hold one, and takes a
//! four-byte character instead).

mod common;

use common::TestServer;
use serde_json::{Value, json};

const KIB: usize = 1024;
/// One summary: its free text at six bytes a character (title 200, gitSha, deploymentId,
/// locale, branch, headCommit and completedBy 200 each: 8,400 B), its route and two links
/// at four (a path or link may hold no control character: 24,576 B), the filer's and verifier's names (2,400 B), the screenshot's
/// signed link (≤ 2,048 B with the server's URL) and the ids, numbers and keys (< 1.5 KiB).
const SUMMARY_MAX: usize = 42 * KIB;
/// One group: its title and claimant at six bytes a character, ids and numbers.
const GROUP_MAX: usize = 3 * KIB;
const LIST_MAX: usize = 200 * (SUMMARY_MAX + GROUP_MAX) + KIB;
const CLAIM_ALL_MAX: usize = 50 * SUMMARY_MAX + GROUP_MAX + KIB;
/// A message: its body (20,000 characters at six bytes), its author, and its
/// attachments' labels and signed links.
const MESSAGE_MAX: usize = 136 * KIB;
/// The item's re-found elements (`refind`): 50 of a 200-character label and a
/// 500-character path at six bytes a character and their keys, the build and the
/// finder's name (200 characters each at six bytes) and the time.
const REFIND_MAX: usize = 50 * (200 * 6 + 500 * 6 + 64) + 2 * 1_200 + 200;
/// `getChange`: the capture as stored (at most `createChange`'s 5 MiB body), the body and
/// console errors (120,000 B and 300,000 B at six bytes a character), the rest of the
/// item, a page of 200 messages and the item's re-found elements.
const GET_MAX: usize = 5 * KIB * KIB + 420_000 + SUMMARY_MAX + 200 * MESSAGE_MAX + REFIND_MAX + KIB;
/// `countChanges`: 20 waiting items (title at six bytes a character, two ids) and the counts.
const COUNT_MAX: usize = 20 * 1_400 + KIB;

/// The bytes of an RPC's answer, as sent.
async fn answer_bytes(s: &TestServer, token: &str, name: &str, data: Value) -> (usize, Value) {
    let res =
        s.http.post(format!("{}/rpc/{name}", s.base)).bearer_auth(token).json(&data).send().await.unwrap();
    assert_eq!(res.status(), 200, "{name}");
    let text = res.text().await.unwrap();
    (text.len(), serde_json::from_str(&text).unwrap())
}

fn escaped(n: usize) -> String {
    "\u{1}".repeat(n)
}

fn link(n: usize) -> String {
    format!("https://{}", "𝄞".repeat(n - 8))
}

fn check(name: &str, bytes: usize, max: usize) {
    println!("{name}: {bytes} bytes (bound {max})");
    assert!(bytes <= max, "{name}: {bytes} bytes over its bound of {max}");
}

#[tokio::test]
async fn the_largest_answers_stay_under_their_stated_bounds() {
    let s = TestServer::start_with(|state| {
        state.rate_limit = redline_server::limit::RateLimit { per_second: 1e9, burst: 1e9 };
    })
    .await;
    let png = {
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        png.resize(100, 0);
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, png)
    };
    for _ in 0..200 {
        let shot = json!({"projectId": s.project_id, "contentType": "image/png", "imageBase64": png});
        let key = s.ok(&s.ann, "uploadShot", shot).await["screenshotKey"].clone();
        let data = json!({
            "stageId": s.stage_id, "title": escaped(200), "route": format!("/{}", "𝄞".repeat(2_047)), "gitSha": escaped(200),
            "deploymentId": escaped(200), "locale": escaped(200), "screenshotKey": key,
            "viewport": {"width": 1.2345678901234567e300, "height": -1.2345678901234567e300},
        });
        s.ok(&s.ann, "createChange", data).await;
    }
    let (bytes, released) = answer_bytes(&s, &s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    assert_eq!(released["changes"].as_array().unwrap().len(), 200);
    check("releaseChanges, a batch of 200", bytes, 200 * SUMMARY_MAX + KIB);

    let claim = |ids: Option<Vec<String>>| {
        let mut data = json!({"projectId": s.project_id, "claimedBy": escaped(200), "title": escaped(200)});
        if let Some(ids) = ids {
            data["changeIds"] = json!(ids);
        }
        data
    };
    let (bytes, all) = answer_bytes(&s, &s.agent, "claimChanges", claim(None)).await;
    assert_eq!(all["changes"].as_array().unwrap().len(), 50);
    check("claimChanges, any 50", bytes, CLAIM_ALL_MAX);
    let mut groups = vec![(all["group"].clone(), (1..=50).collect::<Vec<u64>>())];
    for n in 51..=200u64 {
        let out = s.ok(&s.agent, "claimChanges", claim(Some(vec![n.to_string()]))).await;
        groups.push((out["group"].clone(), vec![n]));
    }
    for (group, items) in &groups {
        for n in items {
            let done = json!({
                "changeId": n.to_string(), "groupId": group["groupId"], "fence": group["fence"],
                "authorName": escaped(200), "branch": escaped(200), "headCommit": "f".repeat(40),
                "commitUrl": link(2_048), "pullRequestUrl": link(2_048),
            });
            s.ok(&s.agent, "completeChange", done).await;
        }
    }
    let list = json!({"projectId": s.project_id, "includeDone": true, "limit": 200});
    let (bytes, listed) = answer_bytes(&s, &s.agent, "listChanges", list).await;
    assert_eq!(
        (listed["changes"].as_array().unwrap().len(), listed["groups"].as_array().unwrap().len()),
        (200, 151)
    );
    check("listChanges, 200 items in 151 groups", bytes, LIST_MAX);

    // 20 questions waiting for Ann, with the longest titles.
    for _ in 0..20 {
        s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": escaped(200)})).await;
    }
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    for n in 201..=220 {
        s.ok(&s.agent, "claimChanges", claim(Some(vec![n.to_string()]))).await;
        let ask = json!({"changeId": n.to_string(), "question": "q", "authorName": escaped(200)});
        s.ok(&s.agent, "askChangeQuestion", ask).await;
    }
    let (bytes, counted) = answer_bytes(&s, &s.ann, "countChanges", json!({"projectId": s.project_id})).await;
    assert_eq!(counted["waiting"].as_array().unwrap().len(), 20);
    check("countChanges, 20 waiting", bytes, COUNT_MAX);

    // The largest capture the field limits allow in ASCII, and 200 of the longest messages.
    let data = json!({"stageId": s.stage_id, "title": escaped(200), "body": escaped(20_000),
                      "consoleErrors": vec![escaped(1_000); 50], "capture": largest_capture()});
    let id = s.ok(&s.ann, "createChange", data).await["change"]["changeId"].clone();
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    for _ in 0..200 {
        let reply = json!({"changeId": id, "body": escaped(20_000), "authorName": escaped(200)});
        s.ok(&s.agent, "replyToChange", reply).await;
    }
    let refound = json!({"label": escaped(200), "whereabouts": "moved", "cssPath": escaped(500)});
    let refind = json!({"changeId": id, "gitSha": escaped(200), "elements": vec![refound; 50]});
    s.ok(&s.ann, "recordRefind", refind).await;
    let get = json!({"changeId": id, "messageLimit": 200});
    let (bytes, got) = answer_bytes(&s, &s.agent, "getChange", get).await;
    assert_eq!(got["thread"].as_array().unwrap().len(), 200);
    assert_eq!(got["refind"]["elements"].as_array().unwrap().len(), 50);
    check(
        "getChange, the largest capture, 200 of the longest messages and 50 re-found elements",
        bytes,
        GET_MAX,
    );
}

/// A capture with every field at its limit, in ASCII (at six bytes a character it would
/// not fit `createChange`'s body cap).
fn largest_capture() -> Value {
    let styles = |i: usize| {
        (i < 20).then(|| {
            let set = |from: usize, to: usize| -> serde_json::Map<String, Value> {
                redline_protocol::styles::STYLE_PROPERTIES[from..to]
                    .iter()
                    .map(|(name, _)| ((*name).to_owned(), json!("v".repeat(100))))
                    .collect()
            };
            json!({"changed": set(0, 7), "unchanged": set(7, 14)})
        })
    };
    let element = |i: usize| {
        json!({
            "testId": "t".repeat(200), "sourceAnchor": "s".repeat(200), "cssPath": "c".repeat(500),
            "text": "x".repeat(500), "name": "n".repeat(500), "componentTestId": "k".repeat(200),
            "role": "r".repeat(50), "tag": "g".repeat(50), "styles": styles(i),
            "rect": {"x": 1.2345678901234567e300, "y": 1.2345678901234567e300, "width": 1e300, "height": 1e300},
        })
    };
    let point = json!({"x": 1.2345678901234567e300, "y": -1.2345678901234567e300});
    let failed = json!({"method": "m".repeat(20), "url": "u".repeat(2_048), "status": 999});
    json!({
        "stroke": vec![point; 10_000],
        "bounds": {"x": 1.5, "y": 2.5, "width": 300.25, "height": 200.75},
        "elements": (0..500).map(element).collect::<Vec<_>>(),
        "devicePixelRatio": 2, "scroll": {"x": 0, "y": 1234.5},
        "failedRequests": vec![failed; 50],
    })
}
