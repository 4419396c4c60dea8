//! The shipped skill (`redline skill`): printed and installed as written, and every
//! command in its code blocks run, in the order it teaches them, by the real binary
//! against a real server, as an agent following it would. A command the CLI no longer
//! takes, or a loop that no longer works, fails here.

mod cli_support;
mod common;

use std::path::Path;
use std::time::Duration;

use cli_support::*;
use common::TestServer;
use serde_json::{Value, json};

const SKILL: &str = include_str!("../../agent/src/SKILL.md");

/// The `redline …` lines of the skill's ```sh blocks, split into words as a shell would
/// (single and double quotes; `#` starts a comment outside quotes).
fn skill_commands(skill: &str) -> Vec<Vec<String>> {
    let mut in_block = false;
    let mut commands = Vec::new();
    for line in skill.lines().map(str::trim) {
        if line.starts_with("```") {
            in_block = !in_block && line == "```sh";
            continue;
        }
        if in_block && line.starts_with("redline ") {
            commands.push(shell_words(line));
        }
    }
    commands
}

fn shell_words(line: &str) -> Vec<String> {
    let (mut words, mut word, mut quote, mut in_word) = (Vec::new(), String::new(), None, false);
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '"' | '\'') => {
                quote = Some(c);
                in_word = true;
            }
            (None, '#') if !in_word => break,
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

#[test]
fn the_skills_commands_are_read_like_a_shell() {
    assert_eq!(
        shell_words(r#"redline ask --question "Dark or light?" --option 'It''s' # a note"#),
        ["redline", "ask", "--question", "Dark or light?", "--option", "Its"]
    );
    let commands = skill_commands(SKILL);
    assert!(commands.len() >= 10, "{commands:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skill_prints_and_installs_as_written() {
    let me = Agent::bare();
    let out = me.run(&["skill"]).await.ok();
    assert_eq!(out.stdout, SKILL);
    // Without --dir: at the top of the checkout, wherever in it the agent runs it.
    let (repo, _) = git_repo();
    let deep = repo.path().join("src/routes");
    std::fs::create_dir_all(&deep).unwrap();
    let out = me.run_in(&deep, &["skill", "install"]).await.ok();
    let installed = repo.path().join(".claude/skills/redline-changes/SKILL.md");
    assert!(out.stdout.contains(installed.to_str().unwrap()), "{out:?}");
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), SKILL);
    let elsewhere = tempfile::tempdir().unwrap();
    me.run(&["skill", "install", "--dir", elsewhere.path().to_str().unwrap()]).await.ok();
    assert_eq!(std::fs::read_to_string(elsewhere.path().join("SKILL.md")).unwrap(), SKILL);
}

/// Every command of the skill, in its order, with its placeholders filled in: NAME
/// (the agent), N (the item), GROUP (the claim's group), URL (the server). The agent
/// signs in with a code a person approves, works in a git checkout holding the option
/// images the skill names, and a person answers its question while it waits.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_of_the_skill_runs_against_a_real_server() {
    let s = real_time_server().await;
    let agent = Agent::bare();
    let (repo, _) = git_repo();
    for name in ["dark.png", "light.png"] {
        std::fs::write(repo.path().join(name), png_bytes()).unwrap();
    }
    let mut item = String::new();
    let mut ran = Vec::new();
    for words in skill_commands(SKILL) {
        let sub = words[1].clone();
        let mut args = Vec::new();
        for w in &words[1..] {
            args.push(match w.as_str() {
                "NAME" => "agent-1".to_owned(),
                "URL" => s.base.clone(),
                "N" => item.clone(),
                "GROUP" => claimed_group(&s).await,
                _ => w.clone(),
            });
        }
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = match (sub.as_str(), argv.contains(&"--claim")) {
            ("login", _) => login_with_code(&s, &agent, &argv, "agent-1").await,
            ("wait", true) => {
                let first = file_item(&s, "Header too dark").await;
                file_item(&s, "Footer overlaps").await;
                release(&s, &s.ann).await;
                item = first;
                agent.run_in(repo.path(), &argv).await
            }
            ("wait", false) => answered(&s, &agent, repo.path(), &argv, &item).await,
            ("done", _) => {
                // The fix is committed as the skill says: one commit naming the item.
                commit(repo.path(), &format!("fix(header): #{item} lighten it\n\nChange: #{item}"));
                agent.run_in(repo.path(), &argv).await
            }
            _ => agent.run_in(repo.path(), &argv).await,
        };
        assert_eq!(out.code, 0, "`redline {}` failed: {out:?}", argv.join(" "));
        ran.push(sub);
    }
    for sub in ["login", "wait", "show", "ask", "shot", "reply", "done", "claim", "list"] {
        assert!(ran.iter().any(|r| r == sub), "the skill never runs `redline {sub}`: {ran:?}");
    }
    let got = s.ok(&s.agent, "getChange", json!({"changeId": item, "projectId": s.project_id})).await;
    assert_eq!(got["change"]["status"], "done", "the skill's loop ends with the item done");
}

async fn file_item(s: &TestServer, title: &str) -> String {
    file(s, &s.ann, title, "/").await["shortId"].as_str().unwrap().to_owned()
}

/// The group the agent's claim made.
async fn claimed_group(s: &TestServer) -> String {
    let listed = s.ok(&s.agent, "listChanges", json!({"projectId": s.project_id})).await;
    listed["groups"][0]["groupId"].as_str().expect("a claimed group").to_owned()
}

/// `redline wait --claimed-by NAME`: waits, and the person answers the open question
/// with its first choice; the wait ends with the answer.
async fn answered(s: &TestServer, agent: &Agent, cwd: &Path, argv: &[&str], item: &str) -> Out {
    let mut command = agent.command(argv);
    command.current_dir(cwd);
    let mut waiting = agent.spawn_command(command);
    waiting.wait_for("event stream connected", Duration::from_secs(10)).await;
    let got = s.ok(&s.ann, "getChange", json!({"changeId": item, "projectId": s.project_id})).await;
    let question = got["thread"].as_array().unwrap().iter().rev().find(|m| m["type"] == "question").cloned();
    let key = question.as_ref().and_then(|q: &Value| q["attachments"][0]["key"].as_str()).expect("an option");
    let answer = json!({"changeId": item, "projectId": s.project_id, "body": "", "chosenOption": key});
    s.ok(&s.ann, "answerChangeQuestion", answer).await;
    let (out, _) = waiting.finish(Duration::from_secs(10)).await;
    assert!(out.stdout.contains("<- chosen"), "the answer names the choice: {}", out.stdout);
    out
}
