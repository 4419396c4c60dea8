//! Commits found by trailer, changesets (`claim --worktree`, `merge`) and `redline run`,
//! as the real binary against a real server, in real git checkouts.

mod cli_support;
mod common;

use std::path::{Path, PathBuf};

use cli_support::*;
use common::{TestServer, until};
use serde_json::{Value, json};

/// An agent whose git commits and merges have an author (its HOME has no git config).
fn agent(s: &TestServer) -> Agent {
    let mut a = Agent::new(s, &s.agent);
    for (k, v) in [
        ("GIT_AUTHOR_NAME", "Agent"),
        ("GIT_AUTHOR_EMAIL", "agent@example.com"),
        ("GIT_COMMITTER_NAME", "Agent"),
        ("GIT_COMMITTER_EMAIL", "agent@example.com"),
    ] {
        a.env.push((k.into(), v.into()));
    }
    a
}

async fn get(s: &TestServer, item: &str) -> Value {
    s.ok(&s.agent, "getChange", json!({"changeId": item, "projectId": s.project_id})).await
}

/// Files items on `routes` (one each, titled after their number) and releases them.
async fn file_on(s: &TestServer, routes: &[&str]) -> Vec<Value> {
    let mut filed = Vec::new();
    for (i, route) in routes.iter().enumerate() {
        filed.push(file(s, &s.ann, &format!("Item {} on {route}", i + 1), route).await);
    }
    release(s, &s.ann).await;
    filed
}

/// The folder changesets of `repo` are made in, as git names it.
fn changesets_dir(repo: &Path) -> PathBuf {
    let top = PathBuf::from(git(repo, &["rev-parse", "--show-toplevel"]));
    top.with_file_name(format!("{}-changesets", top.file_name().unwrap().to_string_lossy()))
}

/// The branches named `name` (it, or nothing).
fn branches(repo: &Path, name: &str) -> String {
    git(repo, &["branch", "--list", "--format=%(refname:short)", name])
}

/// Removes the changesets folder beside `repo` (its temp dir does not hold it).
struct RemoveChangesets(PathBuf);

impl Drop for RemoveChangesets {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `done` records the commit whose trailer names the item, not HEAD, so items close in
/// any order, never another item's; with no such commit it refuses and says the trailer
/// to add.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn done_finds_the_commit_by_its_trailer() {
    let s = real_time_server().await;
    let filed = file_on(&s, &["/a", "/a", "/a"]).await;
    let a = agent(&s);
    a.run(&["claim", "--claimed-by", "agent-a"]).await.ok();
    let (repo, _) = git_repo();
    let id1 = filed[0]["changeId"].as_str().unwrap();
    let c1 = commit(repo.path(), &format!("fix(a): #1 first\n\nChange-Id: {id1}"));
    let c2 = commit(repo.path(), "fix(a): #2 second\n\nChange: #2");
    // Another item's commit (its Change-Id says so) and a #3 in another trailer are not #3's.
    commit(
        repo.path(),
        "chore: unrelated\n\nChange-Id: 00000000-0000-4000-8000-000000000000\nChange: #3\nRefs: #3",
    );

    // #2 first, then #1: each gets its own commit, neither HEAD.
    let done = a.run_in(repo.path(), &["done", "--change-id", "2", "--json"]).await.ok().json();
    assert_eq!(done["change"]["headCommit"], c2.as_str());
    assert_eq!(done["change"]["branch"], "main");
    a.run_in(repo.path(), &["done", "1"]).await.ok();
    assert_eq!(get(&s, "1").await["change"]["headCommit"], c1.as_str());

    // #3 has no commit: refused, naming the item and the exact trailer.
    let refused = a.run_in(repo.path(), &["done", "3"]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
    let id3 = filed[2]["changeId"].as_str().unwrap();
    assert!(refused.stderr.contains("no commit on this branch is #3 (\"Item 3 on /a\")"), "{refused:?}");
    assert!(refused.stderr.contains(&format!("Change-Id: {id3}")), "{refused:?}");
    assert!(refused.stderr.contains("type(scope): #3 subject"), "{refused:?}");
    assert_eq!(get(&s, "3").await["change"]["status"], "claimed", "nothing was recorded");
    // --commit still names the commit outright.
    let head = git(repo.path(), &["rev-parse", "HEAD"]);
    let done = a.run_in(repo.path(), &["done", "3", "--commit", "HEAD", "--json"]).await.ok().json();
    assert_eq!(done["change"]["headCommit"], head.as_str());
}

/// `claim --worktree` makes the changeset; `merge` refuses while an item is not done and
/// on the changeset's own branch, then merges with one `--no-ff` commit carrying the
/// `Changeset:` trailer and removes the worktree and the branch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claim_worktree_then_merge() {
    let s = real_time_server().await;
    file_on(&s, &["/orders", "/orders"]).await;
    let a = agent(&s);
    let (repo, _) = git_repo();
    let _cleanup = RemoveChangesets(changesets_dir(repo.path()));
    let claimed = a
        .run_in(
            repo.path(),
            &["claim", "--claimed-by", "agent-a", "--title", "Changes on /orders", "--worktree", "--json"],
        )
        .await
        .ok()
        .json();
    let group = claimed["group"]["groupId"].as_str().unwrap().to_owned();
    let wt = PathBuf::from(claimed["worktree"].as_str().expect("the worktree's path"));
    assert_eq!(wt, changesets_dir(repo.path()).join("changes-on-orders"));
    assert_eq!(git(&wt, &["rev-parse", "--abbrev-ref", "HEAD"]), "changeset/changes-on-orders");
    assert_eq!(git(&wt, &["rev-parse", "HEAD"]), git(repo.path(), &["rev-parse", "HEAD"]), "made from HEAD");

    // Another agent's group of the same title gets a branch of its own.
    file_on(&s, &["/orders"]).await;
    let text = agent(&s)
        .run_in(repo.path(), &["next", "--claim", "--worktree", "--claimed-by", "agent-b", "--once"])
        .await;
    let other = s.ok(&s.agent, "listChanges", json!({"projectId": s.project_id})).await;
    let other_group = other["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["claimedBy"] == "agent-b")
        .expect("agent-b's group")["groupId"]
        .as_str()
        .unwrap()
        .to_owned();
    let suffix: String = other_group.chars().filter(char::is_ascii_alphanumeric).take(8).collect();
    let other_wt = changesets_dir(repo.path()).join(format!("changes-on-orders-{}", suffix.to_lowercase()));
    assert!(text.ok().stdout.contains(&format!("Work there: cd {}", other_wt.display())), "{other_wt:?}");
    assert!(other_wt.is_dir());

    std::fs::write(wt.join("total.txt"), "with tax\n").unwrap();
    git(&wt, &["add", "total.txt"]);
    commit(&wt, "fix(orders): #1 add the tax\n\nChange: #1");
    a.run_in(&wt, &["done", "1"]).await.ok();
    let refused = a.run_in(repo.path(), &["merge", "--group-id", &group]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("1 item is of group"), "{refused:?}");
    assert!(refused.stderr.contains("#2 Item 2 on /orders (claimed)"), "{refused:?}");

    commit(&wt, "fix(orders): #2 colour the button\n\nChange: #2");
    a.run_in(&wt, &["done", "2"]).await.ok();
    let own = a.run_in(&wt, &["merge", "--group-id", &group]).await;
    assert_eq!(own.code, 1, "{own:?}");
    assert!(own.stderr.contains("on changeset/changes-on-orders itself"), "{own:?}");

    let merged = a.run_in(repo.path(), &["merge", "--group-id", &group]).await.ok();
    assert!(merged.stdout.starts_with("Merged changeset/changes-on-orders into main"), "{merged:?}");
    let parents = git(repo.path(), &["log", "-1", "--format=%P"]);
    assert_eq!(parents.split(' ').count(), 2, "a --no-ff merge commit");
    let trailer = git(repo.path(), &["log", "-1", "--format=%(trailers:key=Changeset,valueonly)"]);
    assert_eq!(trailer, group);
    assert_eq!(std::fs::read_to_string(repo.path().join("total.txt")).unwrap(), "with tax\n");
    assert!(!wt.exists(), "the worktree is removed");
    assert_eq!(branches(repo.path(), "changeset/changes-on-orders"), "");
    assert!(other_wt.is_dir(), "the other changeset is untouched");
}

/// The agent command `run` starts in each changeset: it reads the work file (which is
/// also its standard input), waits until both agents run, then commits and closes each
/// item with plain `redline done` (the claim comes from its environment) and logs which
/// group touched which item.
const AGENT_SCRIPT: &str = r#"set -e
[ "$(cat)" = "$(cat "$REDLINE_WORK_FILE")" ] || { echo "stdin is not the work file" >&2; exit 7; }
touch "$RUN_DIR/started.$REDLINE_GROUP_ID"
i=0
while [ "$(ls "$RUN_DIR" | grep -c '^started\.')" -lt 2 ]; do
  i=$((i + 1)); [ "$i" -lt 200 ] || { echo "alone" >&2; exit 9; }
  sleep 0.1
done
for id in $(grep -o '"id": "[^"]*"' "$REDLINE_WORK_FILE" | cut -d'"' -f4); do
  echo "$id $REDLINE_GROUP_ID" >> "$RUN_DIR/touched.log"
  echo "$id" > "item-$id.txt"
  git add "item-$id.txt"
  git commit -q -m "fix(page): $id" -m "Change-Id: $id"
  redline done --change-id "$id" --note "done in $REDLINE_WORKTREE"
done
"#;

/// `run --parallel 2 --once`: two routes make two changesets, worked by two agents at
/// once, each item by one of them; both are merged into the checkout's branch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_works_two_changesets_in_parallel_and_merges_both() {
    let s = real_time_server().await;
    let filed = file_on(&s, &["/a", "/b", "/a", "/b"]).await;
    let mut a = agent(&s);
    let (run_dir, exec) = with_script(&mut a, AGENT_SCRIPT);
    let (repo, _) = git_repo();
    let _cleanup = RemoveChangesets(changesets_dir(repo.path()));
    let out = a
        .run_in(repo.path(), &["run", "--exec", &exec, "--parallel", "2", "--once", "--claimed-by", "runner"])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    for event in
        ["claimed #1, #3 as \"Changes on /a\"", "claimed #2, #4 as \"Changes on /b\"", "started the agent on"]
    {
        assert!(out.stdout.contains(event), "no {event:?} in {out:?}");
    }
    assert_eq!(out.stdout.matches("exited with code 0").count(), 2, "{out:?}");
    assert_eq!(out.stdout.matches("Merged changeset/changes-on-").count(), 2, "{out:?}");

    // Each item was touched once, by the agent of its route's group.
    let log = std::fs::read_to_string(run_dir.join("touched.log")).unwrap();
    let mut lines: Vec<&str> = log.lines().collect();
    lines.sort_unstable();
    assert_eq!(lines.len(), 4, "{log}");
    let mut groups = std::collections::BTreeMap::new();
    for c in &filed {
        let id = c["changeId"].as_str().unwrap();
        let touched: Vec<&str> = lines.iter().filter(|l| l.starts_with(id)).copied().collect();
        assert_eq!(touched.len(), 1, "{id} touched {touched:?}");
        let group = touched[0].split(' ').nth(1).unwrap();
        groups.entry(c["route"].as_str().unwrap().to_owned()).or_insert_with(Vec::new).push(group.to_owned());
        let got = get(&s, id).await;
        assert_eq!(got["change"]["status"], "done");
        assert_eq!(got["change"]["completedBy"], "runner", "written as the run's claim");
        assert!(got["change"]["branch"].as_str().unwrap().starts_with("changeset/changes-on-"));
    }
    assert_eq!(groups.len(), 2);
    for (route, by) in &groups {
        assert!(by[0] == by[1], "{route} was worked by two groups: {by:?}");
    }
    assert_ne!(groups["/a"][0], groups["/b"][0]);

    // Both merged into main, each as a --no-ff merge with its group's trailer; the files
    // of all four items are there and the worktrees are gone.
    let trailers = git(repo.path(), &["log", "--merges", "--format=%(trailers:key=Changeset,valueonly)"]);
    let mut merged: Vec<&str> = trailers.lines().filter(|l| !l.is_empty()).collect();
    merged.sort_unstable();
    let mut expected: Vec<&str> = groups.values().map(|g| g[0].as_str()).collect();
    expected.sort_unstable();
    assert_eq!(merged, expected);
    for c in &filed {
        assert!(repo.path().join(format!("item-{}.txt", c["changeId"].as_str().unwrap())).is_file());
    }
    assert_eq!(std::fs::read_dir(changesets_dir(repo.path())).unwrap().count(), 0, "worktrees removed");
}

/// An agent that fails leaves its changeset unmerged, and each item says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_agent_leaves_its_changeset_unmerged() {
    let s = real_time_server().await;
    file_on(&s, &["/a", "/a"]).await;
    let a = agent(&s);
    let (repo, first) = git_repo();
    let _cleanup = RemoveChangesets(changesets_dir(repo.path()));
    let out = a.run_in(repo.path(), &["run", "--exec", "exit 1", "--once", "--claimed-by", "runner"]).await;
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("exited with code 1"), "{out:?}");
    assert!(out.stdout.contains("left changeset/changes-on-a unmerged"), "{out:?}");
    assert!(out.stdout.contains("replied on #1, #2"), "{out:?}");
    for item in ["1", "2"] {
        let got = get(&s, item).await;
        let last = got["thread"].as_array().unwrap().last().cloned().unwrap();
        assert_eq!(last["authorName"], "runner");
        assert_eq!(
            last["body"],
            "The agent runner exited with code 1 before this item was done; its changeset \
             changeset/changes-on-a is left unmerged."
        );
        assert_eq!(got["change"]["status"], "claimed");
    }
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD"]), first, "nothing merged");
    assert!(changesets_dir(repo.path()).join("changes-on-a").is_dir(), "the worktree is kept");
    assert_eq!(branches(repo.path(), "changeset/changes-on-a"), "changeset/changes-on-a");

    // Nothing left to claim: --once says so with exit 2.
    let again = a.run_in(repo.path(), &["run", "--exec", "exit 0", "--once", "--claimed-by", "other"]).await;
    assert_eq!(again.code, 2, "{again:?}");
}

/// The agent command of the `--loop` test: it asks about each item on its first run,
/// fixes them once answered, and runs on ("Sleepy") until it is stopped.
const ASKING_SCRIPT: &str = r#"set -e
ids=$(grep -o '"id": "[^"]*"' "$REDLINE_WORK_FILE" | cut -d'"' -f4)
if grep -q '"title": "Sleepy' "$REDLINE_WORK_FILE"; then
  sleep 120 &
  echo $! > "$RUN_DIR/sleepy.pid"
  wait
elif grep -q '"reason": "answered"' "$REDLINE_WORK_FILE"; then
  grep -q '"answered": true' "$REDLINE_WORK_FILE"
  for id in $ids; do
    echo "$id" > "item-$id.txt"
    git add "item-$id.txt"
    git commit -q -m "fix(page): $id" -m "Change-Id: $id"
    redline done --change-id "$id"
  done
else
  for id in $ids; do
    redline ask --change-id "$id" --question "Red or blue?" --option Red --option Blue
  done
fi
"#;

/// An agent on `a` whose `redline` is the binary under test, with `script` to run and a
/// folder for what it leaves; returns the folder and the `--exec` command.
fn with_script(a: &mut Agent, script: &str) -> (PathBuf, String) {
    let run_dir = a.home.path().join("run");
    std::fs::create_dir_all(&run_dir).unwrap();
    let path = a.home.path().join("agent.sh");
    std::fs::write(&path, script).unwrap();
    let bin_dir = Path::new(env!("CARGO_BIN_EXE_redline")).parent().unwrap().to_owned();
    let search = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    a.env.push(("PATH".into(), search));
    a.env.push(("RUN_DIR".into(), run_dir.display().to_string()));
    (run_dir, format!("sh {}", path.display()))
}

/// `run --loop`: a question parks the item (no "left unmerged" reply on it); the answer
/// starts the agent again in the same changeset, which then merges; Ctrl-C stops `run`
/// (exit 130) and kills the agent it was running, with what that agent started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_loop_takes_answers_and_stops_on_ctrl_c() {
    let s = real_time_server().await;
    file_on(&s, &["/a"]).await;
    let mut a = agent(&s);
    let (run_dir, exec) = with_script(&mut a, ASKING_SCRIPT);
    let (repo, _) = git_repo();
    let _cleanup = RemoveChangesets(changesets_dir(repo.path()));
    let mut command = a.command(&["run", "--exec", &exec, "--loop", "--claimed-by", "runner"]);
    command.current_dir(repo.path());
    let running = a.spawn_command(command);
    let run_pid = running.child.id().unwrap();

    until("question", || async { get(&s, "1").await["change"]["status"] == "needs_answer" }).await;
    let thread = get(&s, "1").await["thread"].clone();
    let question = thread.as_array().unwrap().iter().rev().find(|m| m["type"] == "question").unwrap().clone();
    let answer = json!({"changeId": "1", "projectId": s.project_id, "body": "",
                        "chosenOption": question["attachments"][0]["key"]});
    s.ok(&s.ann, "answerChangeQuestion", answer).await;
    until("merge", || async {
        git(repo.path(), &["log", "--merges", "--format=%(trailers:key=Changeset,valueonly)"]).trim() != ""
    })
    .await;
    let got = get(&s, "1").await;
    assert_eq!(got["change"]["status"], "done");
    let bodies: Vec<&str> =
        got["thread"].as_array().unwrap().iter().filter_map(|m| m["body"].as_str()).collect();
    assert!(
        !bodies.iter().any(|b| b.contains("left unmerged")),
        "a parked item is not told it was left: {bodies:?}"
    );

    // A long agent, stopped by Ctrl-C with everything it started.
    file(&s, &s.ann, "Sleepy", "/b").await;
    release(&s, &s.ann).await;
    let pid_file = run_dir.join("sleepy.pid");
    until("sleeping agent", || async { pid_file.exists() }).await;
    let sleeper = std::fs::read_to_string(&pid_file).unwrap().trim().to_owned();
    std::process::Command::new("kill").args(["-INT", &run_pid.to_string()]).status().unwrap();
    let (out, _) = running.finish(std::time::Duration::from_secs(10)).await;
    assert_eq!(out.code, 130, "{out:?}");
    assert!(out.stderr.contains("stopped; 1 agent(s) killed, their leases lapse"), "{out:?}");
    assert!(out.stdout.contains("parked changeset/changes-on-a until the filer answers #1"), "{out:?}");
    assert!(out.stdout.contains("Merged changeset/changes-on-a into main"), "{out:?}");
    until("sleeper killed", || async {
        // Gone, or a zombie waiting for init to reap it.
        std::fs::read_to_string(format!("/proc/{sleeper}/stat")).map_or(true, |stat| stat.contains(") Z "))
    })
    .await;
    assert_eq!(get(&s, "2").await["change"]["status"], "claimed", "its lease is left to lapse");
}

/// The agent command of the sent-back test: keeps its work file, then commits and
/// closes each item.
const FIXING_SCRIPT: &str = r#"set -e
cp "$REDLINE_WORK_FILE" "$RUN_DIR/work-$REDLINE_GROUP_ID.json"
for id in $(grep -o '"id": "[^"]*"' "$REDLINE_WORK_FILE" | cut -d'"' -f4); do
  echo "$REDLINE_GROUP_ID" >> "item-$id.txt"
  git add "item-$id.txt"
  git commit -q -m "fix(page): $id" -m "Change-Id: $id"
  redline done --change-id "$id"
done
"#;

/// An item a person sends back as still wrong is claimed again by the next `run`, in a
/// new changeset whose work file says so, fixed and merged again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_takes_back_what_a_person_sent_back() {
    let s = real_time_server().await;
    file_on(&s, &["/a"]).await;
    let mut a = agent(&s);
    let (run_dir, exec) = with_script(&mut a, FIXING_SCRIPT);
    let (repo, _) = git_repo();
    let _cleanup = RemoveChangesets(changesets_dir(repo.path()));
    let argv = ["run", "--exec", exec.as_str(), "--once", "--claimed-by", "runner"];
    a.run_in(repo.path(), &argv).await.ok();
    let verdict =
        json!({"changeId": "1", "projectId": s.project_id, "verdict": "still_wrong", "body": "Still red"});
    s.ok(&s.ann, "verifyChange", verdict).await;

    let out = a.run_in(repo.path(), &argv).await.ok();
    assert!(out.stdout.contains("claimed #1 as \"Changes on /a\""), "{out:?}");
    let got = get(&s, "1").await;
    assert_eq!(got["change"]["status"], "done");
    let group = got["change"]["groupId"].as_str().unwrap();
    let work: Value =
        serde_json::from_str(&std::fs::read_to_string(run_dir.join(format!("work-{group}.json"))).unwrap())
            .unwrap();
    assert_eq!(work["reason"], "sentBack");
    assert_eq!(work["items"][0]["sentBack"], true);
    assert_eq!(work["items"][0]["number"], "1");
    let merges = git(repo.path(), &["log", "--merges", "--format=%(trailers:key=Changeset,valueonly)"]);
    assert_eq!(merges.lines().filter(|l| !l.is_empty()).count(), 2, "merged twice: {merges}");
}

/// A changeset that conflicts with what was merged before it is not merged: the merge is
/// undone, so the checkout is as it was, and the changeset stays to be merged by hand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conflicting_merge_leaves_the_checkout_as_it_was() {
    let s = real_time_server().await;
    file_on(&s, &["/a", "/b"]).await;
    let (repo, _) = git_repo();
    let _cleanup = RemoveChangesets(changesets_dir(repo.path()));
    let mut groups = Vec::new();
    for (item, agent_name) in [("1", "agent-a"), ("2", "agent-b")] {
        let a = agent(&s);
        let claim = ["claim", "--change-ids", item, "--claimed-by", agent_name, "--worktree", "--json"];
        let claimed = a.run_in(repo.path(), &claim).await.ok().json();
        let wt = PathBuf::from(claimed["worktree"].as_str().unwrap());
        std::fs::write(wt.join("colour.txt"), format!("{agent_name}\n")).unwrap();
        git(&wt, &["add", "colour.txt"]);
        commit(&wt, &format!("fix(page): #{item} colour\n\nChange: #{item}"));
        a.run_in(&wt, &["done", item]).await.ok();
        groups.push((a, claimed["group"]["groupId"].as_str().unwrap().to_owned(), wt));
    }
    let (a, first, _) = &groups[0];
    a.run_in(repo.path(), &["merge", "--group-id", first]).await.ok();
    let before = git(repo.path(), &["rev-parse", "HEAD"]);
    let (b, second, wt) = &groups[1];
    let refused = b.run_in(repo.path(), &["merge", "--group-id", second]).await;
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("merging changeset/item-2-on-b into main"), "{refused:?}");
    assert!(refused.stderr.contains("CONFLICT"), "{refused:?}");
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD"]), before);
    assert_eq!(git(repo.path(), &["status", "--porcelain"]), "", "no merge left half done");
    assert!(wt.is_dir(), "the changeset stays");
}

/// The agent command of the group-token test: it keeps its environment, tries to read
/// and write both items (one is its group's, the other not), then closes its own.
const SCOPED_SCRIPT: &str = r#"set -e
env > "$RUN_DIR/env-$REDLINE_GROUP_ID"
try() {
  what=$1; shift
  if "$@" >/dev/null 2>>"$RUN_DIR/stderr-$REDLINE_GROUP_ID"; then how=ok; else how=refused; fi
  echo "$REDLINE_GROUP_ID $what $how" >> "$RUN_DIR/tries.log"
}
for n in 1 2; do
  try "show $n" redline show "$n"
  try "reply $n" redline reply --change-id "$n" --message "hello from $REDLINE_GROUP_ID"
done
for id in $(grep -o '"id": "[^"]*"' "$REDLINE_WORK_FILE" | cut -d'"' -f4); do
  echo "$id" > "item-$id.txt"
  git add "item-$id.txt"
  git commit -q -m "fix(page): $id" -m "Change-Id: $id"
  redline done --change-id "$id"
done
"#;

/// The `REDLINE_TOKEN` an agent was started with, from the environment it kept.
fn token_in(env: &str) -> String {
    env.lines().find_map(|l| l.strip_prefix("REDLINE_TOKEN=")).expect("REDLINE_TOKEN is set").to_owned()
}

/// Waits until `token` is refused (its revocation is seen at most a second late).
async fn until_refused(s: &TestServer, token: &str) {
    let read = json!({"changeId": "1", "projectId": s.project_id});
    until("token refused", || async { s.call(token, "getChange", read.clone()).await.0 == 401 }).await;
}

/// `run` gives each agent a token limited to its group, never the person's: it reads
/// and writes its own items, is refused (403) on the other group's, and is revoked once
/// the agent exits. With `--no-merge` the done changesets keep their branches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_gives_each_agent_a_token_for_its_group_only_and_no_merge_keeps_the_changesets() {
    let s = real_time_server().await;
    file_on(&s, &["/a", "/b"]).await;
    let mut a = agent(&s);
    let (run_dir, exec) = with_script(&mut a, SCOPED_SCRIPT);
    let (repo, first) = git_repo();
    let _cleanup = RemoveChangesets(changesets_dir(repo.path()));
    let out = a
        .run_in(repo.path(), &["run", "--exec", &exec, "--once", "--no-merge", "--claimed-by", "runner"])
        .await;
    assert_eq!(out.code, 0, "{out:?}");
    assert_eq!(out.stdout.matches("is left unmerged (--no-merge)").count(), 2, "{out:?}");
    assert_eq!(git(repo.path(), &["rev-parse", "HEAD"]), first, "nothing merged");
    for branch in ["changeset/changes-on-a", "changeset/changes-on-b"] {
        assert_eq!(branches(repo.path(), branch), branch, "{branch} is kept");
    }

    let tries = std::fs::read_to_string(run_dir.join("tries.log")).unwrap();
    for (mine, other) in [("1", "2"), ("2", "1")] {
        let got = get(&s, mine).await;
        assert_eq!(got["change"]["status"], "done");
        let group = got["change"]["groupId"].as_str().unwrap();
        for line in [
            format!("{group} show {mine} ok"),
            format!("{group} reply {mine} ok"),
            format!("{group} show {other} refused"),
            format!("{group} reply {other} refused"),
        ] {
            assert!(tries.lines().any(|l| l == line), "no {line:?} in {tries}");
        }
        let errors = std::fs::read_to_string(run_dir.join(format!("stderr-{group}"))).unwrap();
        assert!(errors.contains(&format!("this token is limited to the items of group {group}")), "{errors}");
        let bodies: Vec<String> = get(&s, other).await["thread"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["body"].as_str().map(str::to_owned))
            .collect();
        assert!(!bodies.contains(&format!("hello from {group}")), "#{other} was written: {bodies:?}");

        let env = std::fs::read_to_string(run_dir.join(format!("env-{group}"))).unwrap();
        assert!(!env.contains(&s.agent), "the person's token reached the agent");
        let token = token_in(&env);
        assert!(token.starts_with("rl_") && token != s.agent, "{token}");
        until_refused(&s, &token).await;
    }
}

/// The agent command of the signal test: keeps its token, then runs until stopped.
const SLEEPY_SCRIPT: &str = r#"echo "$REDLINE_TOKEN" > "$RUN_DIR/token"
sleep 120 &
echo $! > "$RUN_DIR/sleepy.pid"
wait
"#;

/// SIGTERM and SIGHUP stop `run` as Ctrl-C does: exit 128 + the signal, the agent and
/// what it started killed, its lease left to lapse, its token revoked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn run_stops_its_agents_on_sigterm_and_sighup() {
    let s = real_time_server().await;
    let mut a = agent(&s);
    let (run_dir, exec) = with_script(&mut a, SLEEPY_SCRIPT);
    let (repo, _) = git_repo();
    let _cleanup = RemoveChangesets(changesets_dir(repo.path()));
    for (n, signal, code) in [(1, "TERM", 143), (2, "HUP", 129)] {
        file(&s, &s.ann, &format!("Sleepy {signal}"), &format!("/{signal}")).await;
        release(&s, &s.ann).await;
        let pid_file = run_dir.join("sleepy.pid");
        let _ = std::fs::remove_file(&pid_file);
        let mut command = a.command(&["run", "--exec", &exec, "--loop", "--claimed-by", "runner"]);
        command.current_dir(repo.path());
        let running = a.spawn_command(command);
        let run_pid = running.child.id().unwrap();
        until("sleeping agent", || async { pid_file.exists() }).await;
        let sleeper = std::fs::read_to_string(&pid_file).unwrap().trim().to_owned();
        std::process::Command::new("kill")
            .args([&format!("-{signal}"), &run_pid.to_string()])
            .status()
            .unwrap();
        let (out, _) = running.finish(std::time::Duration::from_secs(10)).await;
        assert_eq!(out.code, code, "SIG{signal}: {out:?}");
        assert!(out.stderr.contains("stopped; 1 agent(s) killed, their leases lapse"), "{out:?}");
        until("sleeper killed", || async {
            std::fs::read_to_string(format!("/proc/{sleeper}/stat"))
                .map_or(true, |stat| stat.contains(") Z "))
        })
        .await;
        assert_eq!(
            get(&s, &n.to_string()).await["change"]["status"],
            "claimed",
            "its lease is left to lapse"
        );
        let token = std::fs::read_to_string(run_dir.join("token")).unwrap().trim().to_owned();
        until_refused(&s, &token).await;
    }
}
