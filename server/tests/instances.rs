//! Several `redline serve` processes on one Postgres database, as a deployment behind a
//! load balancer runs them: claims raced through all three never claim an item twice,
//! an event filed through one reaches a stream on another, and a screenshot uploaded
//! through one loads from the others (images in the database, the signing secret
//! shared). `crash.rs` kills one of three under load.

mod common;

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use redline_protocol::Scope;
use redline_server::{Clock, admin};
use serde_json::{Value, json};
use tokio::process::Child;

/// Three server processes on a fresh database, with a project, a stage and tokens.
struct Three {
    urls: Vec<String>,
    _servers: Vec<Child>,
    _dir: tempfile::TempDir,
    http: reqwest::Client,
    project_id: String,
    stage_id: String,
    /// read + file.
    ann: String,
    /// read + write, one per agent.
    agents: Vec<String>,
}

const AGENTS: usize = 12;

impl Three {
    async fn start() -> Three {
        let dir = tempfile::tempdir().unwrap();
        let store = common::open_store(dir.path()).await;
        let url = store
            .postgres_url()
            .expect("this test needs REDLINE_TEST_DATABASE_URL naming a Postgres server")
            .to_owned();
        let now = Clock::System.now();
        // No grace: a filed item is claimable at once.
        let (project_id, stage_id) = common::add_demo(&store, Some(0), now).await;
        let token = |scopes: &'static [Scope], name: String| {
            let store = store.clone();
            async move { admin::create_token(&store, "demo", scopes, &name, None, now).await.unwrap().token }
        };
        let ann = token(&[Scope::Read, Scope::File], "Ann".to_owned()).await;
        let mut agents = Vec::new();
        for i in 0..AGENTS {
            agents.push(token(&[Scope::Read, Scope::Write], format!("agent {i}")).await);
        }
        store.close().await;
        // Nothing but the database URL: images and signing secret live in it.
        let args = ["--database-url".to_owned(), url];
        let (mut urls, mut servers) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            let (child, url) = common::serve(&args).await;
            servers.push(child);
            urls.push(url);
        }
        Three {
            urls,
            _servers: servers,
            _dir: dir,
            http: common::http_client(),
            project_id,
            stage_id,
            ann,
            agents,
        }
    }

    async fn call(&self, instance: usize, token: &str, name: &str, data: Value) -> (u16, Value) {
        let res = self
            .http
            .post(format!("{}/rpc/{name}", self.urls[instance % 3]))
            .bearer_auth(token)
            .json(&data)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.json().await.unwrap())
    }

    async fn ok(&self, instance: usize, token: &str, name: &str, data: Value) -> Value {
        let (status, body) = self.call(instance, token, name, data).await;
        assert_eq!(status, 200, "{name} on instance {instance}: {body}");
        body
    }

    async fn file(&self, instance: usize, title: &str) -> String {
        let filed =
            self.ok(instance, &self.ann, "createChange", json!({"stageId": self.stage_id, "title": title}));
        filed.await["change"]["changeId"].as_str().unwrap().to_owned()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Postgres: `cargo xtask test` runs it in its Postgres phase; by hand, \
            REDLINE_TEST_DATABASE_URL=postgres://… cargo test -p redline-server --tests -- --ignored postgres_"]
async fn postgres_claims_raced_through_three_instances_claim_each_item_once() {
    let three = Three::start().await;
    let mut ids = Vec::new();
    for i in 0..60 {
        ids.push(three.file(i, &format!("item {i}")).await);
    }
    // Every agent tries to claim every item, one at a time, each from its own starting
    // point and through the three instances in turn.
    let three = std::sync::Arc::new(three);
    let ids = std::sync::Arc::new(ids);
    let agents: Vec<_> = (0..AGENTS)
        .map(|agent| {
            let (three, ids) = (three.clone(), ids.clone());
            tokio::spawn(async move {
                let mut won = Vec::new();
                for k in 0..ids.len() {
                    let id = &ids[(agent * 5 + k) % ids.len()];
                    let claim = json!({"projectId": three.project_id, "changeIds": [id],
                                       "claimedBy": format!("agent {agent}")});
                    let token = &three.agents[agent];
                    match three.call(agent + k, token, "claimChanges", claim).await {
                        (200, out) => {
                            assert_eq!(out["changes"][0]["changeId"], json!(id));
                            assert_eq!(out["group"]["claimedBy"], format!("agent {agent}"));
                            won.push((id.clone(), out["group"]["groupId"].clone()));
                        }
                        (409, body) => assert_eq!(body["code"], "not_claimable", "{body}"),
                        (status, body) => panic!("claimChanges: {status} {body}"),
                    }
                }
                (agent, won)
            })
        })
        .collect();
    let mut claimed_by: HashMap<String, Vec<(usize, Value)>> = HashMap::new();
    for agent in agents {
        let (agent, won) = agent.await.unwrap();
        for (id, group) in won {
            claimed_by.entry(id).or_default().push((agent, group));
        }
    }
    let doubles: Vec<_> = claimed_by.iter().filter(|(_, agents)| agents.len() > 1).collect();
    assert!(doubles.is_empty(), "claimed twice: {doubles:?}");
    assert_eq!(claimed_by.len(), ids.len(), "every item was claimed once");
    // What the store says agrees: each item is claimed, in the group of the agent that
    // won it.
    for (id, won) in &claimed_by {
        let change = three.ok(0, &three.ann, "getChange", json!({"changeId": id})).await;
        assert_eq!(change["change"]["status"], "claimed");
        assert_eq!(change["change"]["groupId"], won[0].1, "{id}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Postgres: `cargo xtask test` runs it in its Postgres phase; by hand, \
            REDLINE_TEST_DATABASE_URL=postgres://… cargo test -p redline-server --tests -- --ignored postgres_"]
async fn postgres_an_event_filed_on_one_instance_reaches_streams_on_the_others() {
    let three = Three::start().await;
    for listening in 0..3 {
        let mut stream = three
            .http
            .get(format!("{}/events/changes:{}", three.urls[listening], three.project_id))
            .bearer_auth(&three.ann)
            .send()
            .await
            .unwrap();
        assert_eq!(stream.status(), 200);
        let mut text = String::new();
        common::read_sse(&mut stream, &mut text, |t| t.contains(": connected")).await;
        // Each other instance files; the stream hears both.
        let others = [(listening + 1) % 3, (listening + 2) % 3];
        let mut filed = Vec::new();
        for other in others {
            filed.push(three.file(other, &format!("filed on {other} for {listening}")).await);
        }
        common::read_sse(&mut stream, &mut text, |t| filed.iter().all(|id| t.contains(id.as_str()))).await;
        let events = common::data_lines(&text);
        for id in &filed {
            assert!(events.iter().any(|e| e["type"] == "filed" && e["changeId"] == json!(id)), "{text}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Postgres: `cargo xtask test` runs it in its Postgres phase; by hand, \
            REDLINE_TEST_DATABASE_URL=postgres://… cargo test -p redline-server --tests -- --ignored postgres_"]
async fn postgres_a_screenshot_uploaded_on_one_instance_loads_from_the_others() {
    let three = Three::start().await;
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    png.extend((0..700_000).map(|i| (i % 253) as u8));
    let upload = json!({"projectId": three.project_id, "contentType": "image/png",
                        "imageBase64": STANDARD.encode(&png)});
    let key = three.ok(1, &three.ann, "uploadShot", upload).await["screenshotKey"].clone();
    let filed = json!({"stageId": three.stage_id, "title": "with a screenshot", "screenshotKey": key});
    let change = three.ok(1, &three.ann, "createChange", filed).await;
    let id = change["change"]["changeId"].clone();
    let signed_by_1 = change["change"]["screenshotUrl"].as_str().unwrap().to_owned();
    let path = signed_by_1.strip_prefix(&three.urls[1]).expect("a link to the instance that answered");
    for reader in [0, 2] {
        // The link instance 1 signed works on the others (one secret, in the database)...
        let res = three.http.get(format!("{}{path}", three.urls[reader])).send().await.unwrap();
        assert_eq!(res.status(), 200, "instance {reader}");
        assert!(res.bytes().await.unwrap() == png, "instance {reader} sent other bytes");
        // ...and so does the link each signs itself.
        let read = three.ok(reader, &three.ann, "getChange", json!({"changeId": id})).await;
        let url = read["change"]["screenshotUrl"].as_str().unwrap();
        assert!(url.starts_with(&three.urls[reader]), "{url}");
        let res = three.http.get(url).send().await.unwrap();
        assert_eq!(res.status(), 200, "instance {reader}'s own link");
        assert!(res.bytes().await.unwrap() == png);
    }
}
