//! Agents sharing one queue, as the real `redline` binary against a real server:
//! `wait --claim` takes one changeset (the ready items of one route, oldest route
//! first), so two agents each take a route and a third finds nothing, whether they call
//! one after another or at once; `--all` takes every route, `--route` one named route;
//! `release` gives a group up, and the last item done (or dismissed) ends its lease.

mod cli_support;
mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use cli_support::*;
use common::TestServer;
use serde_json::{Value, json};

/// The queue: three items on `/`, then two on `/customers`, claimable now.
async fn two_routes() -> TestServer {
    let s = real_time_server().await;
    for (title, route) in [
        ("Header too dark", "/"),
        ("Logo blurry", "/"),
        ("Footer overlaps", "/"),
        ("Table cut off", "/customers"),
        ("Search is slow", "/customers"),
    ] {
        file(&s, &s.ann, title, route).await;
    }
    release(&s, &s.ann).await;
    s
}

/// A claim's group title and its items' numbers, from `--json`.
fn claimed(out: &Out) -> (String, Vec<String>) {
    let v = out.json();
    let numbers = v["changes"].as_array().unwrap().iter().map(|c| c["shortId"].as_str().unwrap().to_owned());
    (v["group"]["title"].as_str().unwrap().to_owned(), numbers.collect())
}

fn wait_claim<'a>(name: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    [&["wait", "--claim", "--claimed-by", name, "--once", "--json"], more].concat()
}

/// Every item's group, asserting each item is in one.
async fn groups_of_items(s: &TestServer) -> Vec<(String, String)> {
    let listed = s.ok(&s.agent, "listChanges", json!({"projectId": s.project_id, "limit": 200})).await;
    let items = listed["changes"].as_array().unwrap();
    items
        .iter()
        .map(|c| {
            let group = c["groupId"].as_str().unwrap_or_else(|| panic!("unclaimed: {c}"));
            (c["shortId"].as_str().unwrap().to_owned(), group.to_owned())
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_each_claim_one_route_and_a_third_finds_nothing() {
    let s = two_routes().await;
    let (a, b, c) = (Agent::new(&s, &s.agent), Agent::new(&s, &s.agent), Agent::new(&s, &s.agent));
    let first = a.run(&wait_claim("agent-a", &[])).await.ok();
    assert_eq!(claimed(&first), ("Changes on /".to_owned(), vec!["1".into(), "2".into(), "3".into()]));
    let second = b.run(&wait_claim("agent-b", &[])).await.ok();
    assert_eq!(claimed(&second), ("Changes on /customers".to_owned(), vec!["4".into(), "5".into()]));
    // Fabric's `-p` names the project.
    let third = c.run(&["wait", "--claim", "--claimed-by", "agent-c", "--once", "-p", &s.project_id]).await;
    assert_eq!(third.code, 2, "{third:?}");
    assert!(third.stderr.contains("no work"), "{third:?}");

    // The text says the claim is one changeset of the queue.
    let help = a.run(&["wait", "--help"]).await.ok().stdout;
    assert!(
        help.contains("--all") && help.contains("as Fabric's `pikku changes wait --claim` does"),
        "{help}"
    );
}

/// Two agents woken by the same release claim at once: each gets a route, no item is
/// claimed twice, none is left.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_agents_claiming_at_once_get_different_routes() {
    let s = real_time_server().await;
    for (title, route) in [("Header too dark", "/"), ("Logo blurry", "/"), ("Table cut off", "/customers")] {
        file(&s, &s.ann, title, route).await;
    }
    let (a, b) = (Agent::new(&s, &s.agent), Agent::new(&s, &s.agent));
    let mut first = a.spawn(&["wait", "--claim", "--claimed-by", "agent-a", "--timeout", "20", "--json"]);
    let mut second = b.spawn(&["wait", "--claim", "--claimed-by", "agent-b", "--timeout", "20", "--json"]);
    first.wait_for("event stream connected", Duration::from_secs(10)).await;
    second.wait_for("event stream connected", Duration::from_secs(10)).await;
    release(&s, &s.ann).await;
    let (one, _) = first.finish(Duration::from_secs(30)).await;
    let (two, _) = second.finish(Duration::from_secs(30)).await;
    let (one, two) = (claimed(&one.ok()), claimed(&two.ok()));
    let titles: BTreeSet<&str> = [one.0.as_str(), two.0.as_str()].into();
    assert_eq!(titles, ["Changes on /", "Changes on /customers"].into(), "{one:?} {two:?}");
    let mut numbers = [one.1, two.1].concat();
    numbers.sort();
    assert_eq!(numbers, ["1", "2", "3"], "each item claimed once");
    let groups: BTreeSet<String> = groups_of_items(&s).await.into_iter().map(|(_, g)| g).collect();
    assert_eq!(groups.len(), 2, "{groups:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_claims_every_route_and_route_claims_the_one_named() {
    let s = two_routes().await;
    let agent = Agent::new(&s, &s.agent);
    let out =
        agent.run(&wait_claim("agent-a", &["--route", "/customers", "--title", "Customers"])).await.ok();
    assert_eq!(claimed(&out), ("Customers".to_owned(), vec!["4".into(), "5".into()]));
    let nothing =
        agent.run(&["wait", "--claim", "--claimed-by", "agent-b", "--route", "/customers", "--once"]).await;
    assert_eq!(nothing.code, 2, "the route's items are taken: {nothing:?}");

    let out = agent.run(&wait_claim("agent-b", &["--all"])).await.ok();
    assert_eq!(claimed(&out), ("Changes on /".to_owned(), vec!["1".into(), "2".into(), "3".into()]));
    let s = two_routes().await;
    let agent = Agent::new(&s, &s.agent);
    let out = agent.run(&wait_claim("agent-a", &["--all"])).await.ok();
    let numbers: Vec<String> = (1..=5).map(|n| n.to_string()).collect();
    assert_eq!(claimed(&out), ("Changes batch".to_owned(), numbers));
    // --all without --claim is refused, as clap says.
    let refused = agent.run(&["wait", "--all", "--once"]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
}

/// `release` gives a group up: its items not done are claimable at once, by the next
/// agent's `wait --claim`; only its claimant may.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_released_group_goes_back_to_the_queue() {
    let s = two_routes().await;
    let (a, b) = (Agent::new(&s, &s.agent), Agent::new(&s, &s.agent));
    let mine = a.run(&wait_claim("agent-a", &[])).await.ok().json();
    let group = mine["group"]["groupId"].as_str().unwrap();
    let refused = b.run(&["release", "--group-id", group, "--claimed-by", "agent-b"]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("claimed by someone else"), "{refused:?}");

    let out = a.run(&["release", "--group-id", group, "--claimed-by", "agent-a"]).await.ok();
    assert!(
        out.stdout.contains("its lease has ended; #1, #2, #3 are back in the queue for any agent."),
        "{out:?}"
    );
    let taken = b.run(&wait_claim("agent-b", &[])).await.ok();
    assert_eq!(claimed(&taken), ("Changes on /".to_owned(), vec!["1".into(), "2".into(), "3".into()]));
}

/// The lease ends when the group's last item is done, and a renewal then keeps it ended.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_item_done_ends_the_groups_lease() {
    let s = two_routes().await;
    let agent = Agent::new(&s, &s.agent);
    let out = agent.run(&wait_claim("agent-a", &["--route", "/customers"])).await.ok().json();
    let group = out["group"]["groupId"].as_str().unwrap().to_owned();
    let lease_of = async |s: &TestServer| -> Value {
        let listed = s
            .ok(
                &s.agent,
                "listChanges",
                json!({"projectId": s.project_id, "groupId": group, "includeDone": true}),
            )
            .await;
        listed["groups"][0]["claimExpiresAt"].clone()
    };
    let leased = lease_of(&s).await;
    let done = |n: &str| json!({"changeId": n, "projectId": s.project_id, "authorName": "agent-a"});
    s.ok(&s.agent, "completeChange", done("4")).await;
    assert_eq!(lease_of(&s).await, leased, "one item is left: the lease goes on");
    s.ok(&s.agent, "completeChange", done("5")).await;
    let ended = lease_of(&s).await;
    assert!(ended.as_str().unwrap() < leased.as_str().unwrap(), "{ended} {leased}");
    let renewed = agent.run(&["claim", "--group-id", &group, "--claimed-by", "agent-a", "--json"]).await.ok();
    assert_eq!(renewed.json()["group"]["claimExpiresAt"], ended, "nothing left to do: not renewed");
}

/// A group whose last item left to do is dismissed by a person has nothing left either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dismissing_the_last_item_left_ends_the_groups_lease() {
    let s = two_routes().await;
    let agent = Agent::new(&s, &s.agent);
    agent.run(&wait_claim("agent-a", &["--route", "/customers"])).await.ok();
    let lease_end = async || {
        let input = json!({"projectId": s.project_id, "route": "/customers", "includeDone": true});
        s.ok(&s.agent, "listChanges", input).await["groups"][0]["claimExpiresAt"].as_str().unwrap().to_owned()
    };
    let leased = lease_end().await;
    let done = json!({"changeId": "4", "projectId": s.project_id, "authorName": "agent-a"});
    s.ok(&s.agent, "completeChange", done).await;
    let dismiss = json!({"changeId": "5", "projectId": s.project_id, "status": "dismissed"});
    s.ok(&s.ann, "setChangeStatus", dismiss).await;
    let ended = lease_end().await;
    assert!(ended < leased, "{ended} {leased}");
}
