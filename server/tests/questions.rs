//! Questions and answers (`shared/protocol.md`, "Options (ours, precisely)"): option keys
//! are unique, option shots labelled like a text option are its image, an answer names
//! an option of the open question and repeats its label, every message says what it is,
//! and threads stored with colliding keys are re-keyed by migration 0008.

mod common;

use std::collections::BTreeSet;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::TestServer;
use redline_server::Store;
use serde_json::{Value, json};

fn png() -> String {
    STANDARD.encode(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-not-a-real-image-but-the-magic-is-right")
}

impl TestServer {
    /// Files an item, ends its hold, and returns its `changeId`.
    async fn released_item(&self, title: &str) -> Value {
        let change =
            self.ok(&self.ann, "createChange", json!({"stageId": self.stage_id, "title": title})).await;
        self.ok(&self.ann, "releaseChanges", json!({"stageId": self.stage_id})).await;
        change["change"]["changeId"].clone()
    }

    /// Asks `question` with `options`; returns the question's message.
    async fn ask(&self, id: &Value, question: &str, options: &[&str]) -> Value {
        let input = json!({"changeId": id, "question": question, "authorName": "agent", "option": options});
        self.ok(&self.agent, "askChangeQuestion", input).await["message"].clone()
    }

    /// Attaches an option shot labelled `label`; returns its key.
    async fn option_shot(&self, id: &Value, label: &str) -> String {
        let input = json!({"changeId": id, "label": label, "kind": "option", "contentType": "image/png",
            "imageBase64": png(), "authorName": "agent"});
        self.ok(&self.agent, "attachChangeShot", input).await["key"].as_str().unwrap().to_owned()
    }

    async fn thread(&self, id: &Value) -> Vec<Value> {
        self.ok(&self.agent, "getChange", json!({"changeId": id})).await["thread"].as_array().unwrap().clone()
    }
}

fn keys(message: &Value) -> Vec<String> {
    message["attachments"].as_array().unwrap().iter().map(|a| a["key"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn every_option_gets_a_key_of_its_own() {
    let s = TestServer::start().await;
    let id = s.released_item("header colour").await;
    let first = keys(&s.ask(&id, "Which header?", &["Dark", "Light", "Keep it dark, add an accent"]).await);
    assert_eq!(first.iter().collect::<BTreeSet<_>>().len(), 3, "three distinct keys: {first:?}");
    let again =
        keys(&s.ask(&id, "Which header, then?", &["Dark", "Light", "Keep it dark, add an accent"]).await);
    let all: BTreeSet<&String> = first.iter().chain(&again).collect();
    assert_eq!(all.len(), 6, "a later question's keys are new too: {first:?} {again:?}");
}

#[tokio::test]
async fn an_option_shot_labelled_like_an_option_is_that_option() {
    let s = TestServer::start().await;
    let id = s.released_item("header colour").await;
    let asked = s.ask(&id, "Which header?", &["Dark", "Light", "Keep it dark, add an accent"]).await;
    let options = keys(&asked);
    let mut shots = Vec::new();
    for label in ["dark", " Light", "Keep it dark, add an accent"] {
        shots.push(s.option_shot(&id, label).await);
    }

    let answer = s
        .ok(&s.ann, "answerChangeQuestion", json!({"changeId": id, "body": "", "chosenOption": shots[1]}))
        .await["message"]
        .clone();
    assert_eq!(answer["chosenOption"], options[1].as_str(), "the text option's key is recorded");
    assert_eq!(answer["body"], "Light", "an answer without words is the chosen label");
    assert_eq!(answer["type"], "answer");
    let thread = s.thread(&id).await;
    assert_eq!(thread.last().unwrap()["chosenOption"], options[1].as_str());
    assert_eq!(s.ok(&s.agent, "getChange", json!({"changeId": id})).await["change"]["status"], "in_progress");

    // Words that do not say the label get it in front; words that do are kept as they are.
    s.ask(&id, "And the footer?", &["Dark", "Light"]).await;
    let shot = s.option_shot(&id, "DARK").await;
    let answer = s
        .ok(
            &s.ann,
            "answerChangeQuestion",
            json!({"changeId": id, "body": "but keep the logo", "chosenOption": shot}),
        )
        .await["message"]
        .clone();
    assert_eq!(answer["body"], "Dark: but keep the logo");
    let footer = s.ask(&id, "And the sidebar?", &["Dark", "Light"]).await;
    let answer = s
        .ok(
            &s.ann,
            "answerChangeQuestion",
            json!({"changeId": id, "body": "The light one", "chosenOption": keys(&footer)[1]}),
        )
        .await["message"]
        .clone();
    assert_eq!(answer["body"], "The light one");
}

#[tokio::test]
async fn an_answer_names_an_option_of_the_open_question() {
    let s = TestServer::start().await;
    let id = s.released_item("header colour").await;
    let early_shot = s.option_shot(&id, "Before anything was asked").await;
    let first = keys(&s.ask(&id, "Which header?", &["Dark", "Light"]).await);
    s.ok(&s.ann, "answerChangeQuestion", json!({"changeId": id, "body": "", "chosenOption": first[0]})).await;
    let second = keys(&s.ask(&id, "Which footer?", &["Tall", "Short"]).await);

    for stale in [first[1].as_str(), "opt-unknown", early_shot.as_str(), ""] {
        let body = s
            .err(
                &s.ann,
                "answerChangeQuestion",
                json!({"changeId": id, "body": "x", "chosenOption": stale}),
                400,
                "bad_input",
            )
            .await;
        assert!(body["message"].as_str().unwrap().starts_with("chosenOption:"), "{stale:?}: {body}");
    }
    s.err(&s.ann, "answerChangeQuestion", json!({"changeId": id, "body": " "}), 400, "bad_input").await;
    let answer = s
        .ok(&s.ann, "answerChangeQuestion", json!({"changeId": id, "body": "", "chosenOption": second[1]}))
        .await["message"]
        .clone();
    assert_eq!(
        (answer["chosenOption"].as_str(), answer["body"].as_str()),
        (Some(second[1].as_str()), Some("Short"))
    );
    // Words alone answer a question without options.
    s.ask(&id, "Anything else?", &[]).await;
    let answer = s.ok(&s.ann, "answerChangeQuestion", json!({"changeId": id, "body": " No, thanks "})).await
        ["message"]
        .clone();
    assert_eq!((answer["body"].as_str(), answer["chosenOption"].as_str()), (Some("No, thanks"), None));
}

#[tokio::test]
async fn every_message_says_what_it_is() {
    let s = TestServer::start().await;
    let id = s.released_item("header colour").await;
    let options = keys(&s.ask(&id, "Which header?", &["Dark", "Light"]).await);
    s.option_shot(&id, "Dark").await;
    s.ok(&s.ann, "answerChangeQuestion", json!({"changeId": id, "body": "", "chosenOption": options[0]}))
        .await;
    s.ok(&s.agent, "replyToChange", json!({"changeId": id, "body": "On it", "authorName": "agent"})).await;
    s.ok(&s.agent, "completeChange", json!({"changeId": id, "note": "Made it dark", "authorName": "agent"}))
        .await;
    let thread = s.thread(&id).await;
    let types: Vec<&str> = thread.iter().map(|m| m["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["question", "shot", "answer", "reply", "note"]);
}

/// A question arrives whole: its option images are attachments of the question message
/// itself, written in one write with one `asked` event, each that option's image.
#[tokio::test]
async fn a_question_carries_its_option_images() {
    let s = TestServer::start().await;
    let id = s.released_item("Which red?").await;
    let mut events = common::connect(&s, Some("0"), false).await;
    let image = |label: &str| json!({"label": label, "contentType": "image/png", "imageBase64": png()});
    let input = json!({"changeId": id, "question": "Which one?", "authorName": "agent",
        "option": ["Red", "Blue", "Green"], "optionImages": [image("red"), image(" Blue ")]});
    let asked = s.ok(&s.agent, "askChangeQuestion", input).await["message"].clone();
    let attachments = asked["attachments"].as_array().unwrap();
    let images: Vec<(&str, bool)> = attachments
        .iter()
        .filter(|a| !a["url"].is_null())
        .map(|a| (a["label"].as_str().unwrap(), a["url"].as_str().unwrap().contains("/blobs/")))
        .collect();
    assert_eq!(images, [("Red", true), ("Blue", true)], "labelled as the options they show");
    let thread = s.thread(&id).await;
    assert_eq!(thread.len(), 1, "one message: {thread:?}");
    let mut text = String::new();
    common::read_sse(&mut events, &mut text, |t| t.contains("\"asked\"")).await;
    let asked_events = common::data_lines(&text).into_iter().filter(|e| e["type"] == "asked").count();
    assert_eq!(asked_events, 1);
    // Picking the image's key answers with the text option it shows.
    let blue_image = attachments.iter().find(|a| a["label"] == "Blue" && !a["url"].is_null()).unwrap();
    let answer = json!({"changeId": id, "body": "", "chosenOption": blue_image["key"]});
    let answered = s.ok(&s.ann, "answerChangeQuestion", answer).await["message"].clone();
    let blue_option = attachments.iter().find(|a| a["label"] == "Blue" && a["url"].is_null()).unwrap();
    assert_eq!(answered["chosenOption"], blue_option["key"]);
    assert_eq!(answered["body"], "Blue");
    assert_eq!(s.stored_images(2).await.len(), 2);
}

#[tokio::test]
async fn option_images_must_be_images_and_fit_together() {
    let s = TestServer::start().await;
    let id = s.released_item("Which red?").await;
    let ask = |images: Vec<Value>| {
        json!({"changeId": id, "question": "Which?", "authorName": "agent", "option": ["Red", "Blue"],
            "optionImages": images})
    };
    let bad = json!({"label": "Red", "contentType": "image/png", "imageBase64": STANDARD.encode(b"GIF89a")});
    s.err(&s.agent, "askChangeQuestion", ask(vec![bad]), 415, "unsupported_media_type").await;
    // Two images of 4.2 MiB are over one image's bytes together (and their body is
    // within the cap, which refuses more while reading).
    let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
    big.resize(42 * (1 << 20) / 10, 0);
    let big = json!({"label": "Red", "contentType": "image/png", "imageBase64": STANDARD.encode(&big)});
    let mut blue = big.clone();
    blue["label"] = json!("Blue");
    let e = s.err(&s.agent, "askChangeQuestion", ask(vec![big, blue]), 413, "too_large").await;
    assert!(e["message"].as_str().unwrap().contains("optionImages"), "{e}");
    // Nothing was asked, and no image was kept.
    assert!(s.thread(&id).await.is_empty());
    assert!(s.stored_images(0).await.is_empty());
}

/// An image whose label names no option is a further choice, as an option shot with a
/// new label is.
#[tokio::test]
async fn an_option_image_naming_no_option_is_a_choice_of_its_own() {
    let s = TestServer::start().await;
    let id = s.released_item("Which red?").await;
    let input = json!({"changeId": id, "question": "Which one?", "authorName": "agent", "option": ["Red"],
        "optionImages": [{"label": "Crimson", "contentType": "image/png", "imageBase64": png()}]});
    let asked = s.ok(&s.agent, "askChangeQuestion", input).await["message"].clone();
    let labels: Vec<(&str, bool)> = asked["attachments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["label"].as_str().unwrap(), !a["url"].is_null()))
        .collect();
    assert_eq!(labels, [("Red", false), ("Crimson", true)]);
    let crimson = &asked["attachments"][1]["key"];
    let answer = json!({"changeId": id, "body": "", "chosenOption": crimson});
    assert_eq!(s.ok(&s.ann, "answerChangeQuestion", answer).await["message"]["body"], "Crimson");
}

/// What a wait has shown an agent is kept per claimant and item: `getChange` with
/// `claimedBy` says which messages were shown, `acknowledgeChangeMessages` adds to it.
#[tokio::test]
async fn what_was_shown_is_kept_per_claimant() {
    let s = TestServer::start().await;
    let id = s.released_item("Which red?").await;
    let other = s.released_item("Another").await;
    let question = s.ask(&id, "Which?", &["Red"]).await;
    let answer = json!({"changeId": id, "body": "", "chosenOption": keys(&question)[0]});
    let answered = s.ok(&s.ann, "answerChangeQuestion", answer).await["message"].clone();
    let shown = async |by: &str| {
        let input = json!({"changeId": id, "claimedBy": by});
        s.ok(&s.agent, "getChange", input).await["shownMessageIds"].clone()
    };
    assert_eq!(shown("agent-a").await, json!([]));
    assert!(s.ok(&s.agent, "getChange", json!({"changeId": id})).await.get("shownMessageIds").is_none());
    let ack = json!({"changeId": id, "claimedBy": "agent-a", "messageIds": [answered["messageId"]]});
    let out = s.ok(&s.agent, "acknowledgeChangeMessages", ack.clone()).await;
    assert_eq!(out["shownMessageIds"], json!([answered["messageId"]]));
    s.ok(&s.agent, "acknowledgeChangeMessages", ack).await;
    assert_eq!(shown("agent-a").await, json!([answered["messageId"]]));
    assert_eq!(shown("agent-b").await, json!([]), "another claimant was shown nothing");
    // Only messages of the item's own thread, by a token that may write.
    let stray = json!({"changeId": other, "claimedBy": "agent-a", "messageIds": [answered["messageId"]]});
    let e = s.err(&s.agent, "acknowledgeChangeMessages", stray, 404, "not_found").await;
    assert!(e["message"].as_str().unwrap().starts_with("messageIds"), "{e}");
    let ack = json!({"changeId": id, "claimedBy": "agent-a", "messageIds": [question["messageId"]]});
    s.err(&s.reader, "acknowledgeChangeMessages", ack, 403, "forbidden").await;
}

/// Opens the test server's store again, as a restarted server would (and so migrates).
async fn reopen(s: &TestServer) -> Store {
    match s.store.postgres_url() {
        Some(url) => Store::open_url(url).await.unwrap(),
        None => Store::open_dir(s.dir.path()).await.unwrap(),
    }
}

async fn exec(store: &Store, sql: &str, binds: &[&str]) {
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql.to_owned()));
    for b in binds {
        query = query.bind(b.to_string());
    }
    query.execute(store.pool()).await.unwrap();
}

#[tokio::test]
async fn migration_0008_gives_colliding_option_keys_new_ones() {
    let s = TestServer::start().await;
    // Two items whose threads hold what the old code stored: the options of a question
    // sharing one key (a time-ordered id's prefix), a later question reusing it, an
    // answer that chose it, and an option shot (whose key is its image's).
    let a = s.released_item("three options, one key").await;
    let b = s.released_item("the same key in another item").await;
    let first = s.ask(&a, "Which header?", &["Dark", "Light", "Accent"]).await;
    let shot = s.option_shot(&a, "Dark").await;
    s.ok(&s.ann, "answerChangeQuestion", json!({"changeId": a, "body": "", "chosenOption": keys(&first)[0]}))
        .await;
    let later = s.ask(&a, "And the footer?", &["Tall"]).await;
    let other = s.ask(&b, "Which?", &["Only"]).await;
    let old = "opt-01a231e0";
    let options = |labels: &[&str]| {
        let all: Vec<Value> =
            labels.iter().map(|l| json!({"key": old, "label": l, "kind": "option", "url": null})).collect();
        serde_json::to_string(&all).unwrap()
    };
    let set = "UPDATE messages SET attachments = $1 WHERE message_id = $2";
    exec(&s.store, set, &[&options(&["Dark", "Light", "Accent"]), first["messageId"].as_str().unwrap()])
        .await;
    exec(&s.store, set, &[&options(&["Tall"]), later["messageId"].as_str().unwrap()]).await;
    exec(&s.store, set, &[&options(&["Only"]), other["messageId"].as_str().unwrap()]).await;
    exec(&s.store, "UPDATE messages SET chosen_option = $1 WHERE author_kind = 'user'", &[old]).await;
    exec(&s.store, "DELETE FROM data_steps WHERE name = 'unique_option_keys'", &[]).await;

    reopen(&s).await.close().await;
    let thread = s.thread(&a).await;
    let options_of = |m: &Value| -> Vec<(String, String)> {
        m["attachments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| (o["key"].as_str().unwrap().to_owned(), o["label"].as_str().unwrap().to_owned()))
            .collect()
    };
    let (asked, shown, answer, again) =
        (options_of(&thread[0]), options_of(&thread[1]), &thread[2], options_of(&thread[3]));
    assert_eq!(asked[0].0, old, "the first keeps its key");
    assert_eq!(answer["chosenOption"], old, "so the answer still names it");
    let labels: Vec<&str> = asked.iter().chain(&again).map(|(_, l)| l.as_str()).collect();
    assert_eq!(labels, ["Dark", "Light", "Accent", "Tall"]);
    let all: BTreeSet<&str> = asked.iter().chain(&again).chain(&shown).map(|(k, _)| k.as_str()).collect();
    assert_eq!(all.len(), 5, "every key in the thread is unique: {asked:?} {again:?} {shown:?}");
    assert_eq!(shown[0].0, shot, "an image's key is its file's and stays");
    assert_eq!(
        keys(&s.thread(&b).await[0]),
        [old],
        "keys are unique within an item; another item keeps its own"
    );

    // Recorded: a second start does not run the step again (a collision made now stays).
    exec(&s.store, set, &[&options(&["Tall"]), later["messageId"].as_str().unwrap()]).await;
    reopen(&s).await.close().await;
    assert_eq!(keys(&s.thread(&a).await[3]), [old]);
}
