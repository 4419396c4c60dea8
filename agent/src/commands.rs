//! The agent commands, each a thin layer over one or two RPCs.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use redline_protocol::*;
use serde::Serialize;

use super::anchors::Follower;
use super::cli::{
    AgentCommand, AskArgs, ClaimArgs, DoneArgs, FileArgs, ListArgs, LoginArgs, ReleaseArgs, ReplyArgs,
    ShotArgs, ShotKind, ShowArgs, SkillAction, SkillArgs, StatsArgs,
};
use super::client::{Api, Error, call_anonymous, exit};
use super::config::{ConfigStore, parse_api_url};
use super::format::{self, done_text, shot_text};
use super::next::print_claimed;
use super::rules::{default_stage, parse_item, pick_stage};
use super::session::{Claimant, Ctx, now, save_images};
use super::writes::{Writer, check_options, file_label, read_image};
use super::{changeset, doctor, mcp, next, skill};

/// How often `login` asks whether its code was approved, and for how long.
const LOGIN_POLL: Duration = Duration::from_secs(2);
const LOGIN_WAIT: Duration = Duration::from_secs(5 * 60);

pub async fn run(command: AgentCommand, json: bool) -> Result<i32, Error> {
    match command {
        AgentCommand::Login(a) => login(a, json).await,
        AgentCommand::Next(a) => {
            let ctx = Ctx::connect(&a.api.server(), json).await?;
            let stage_id = ctx.stage_id(a.stage.as_deref()).await?;
            next::run(&ctx, a.wait(stage_id), a.worktree, a.timeout).await
        }
        AgentCommand::Claim(a) => claim(a, json).await,
        AgentCommand::Show(a) => show(a, json).await,
        AgentCommand::Ask(a) => ask(a, json).await,
        AgentCommand::Reply(a) => reply(a, json).await,
        AgentCommand::Shot(a) => shot(a, json).await,
        AgentCommand::Done(a) => done(a, json).await,
        AgentCommand::List(a) => list(a, json).await,
        AgentCommand::File(a) => file(a, json).await,
        AgentCommand::Merge(a) => {
            let ctx = Ctx::connect(&a.api.server(), json).await?;
            changeset::run_merge(&ctx, &a.group_id).await
        }
        AgentCommand::Release(a) => release(a, json).await,
        AgentCommand::Run(a) => {
            let ctx = Ctx::connect(&a.api.server(), json).await?;
            super::run::run(ctx, a.options()).await
        }
        AgentCommand::Skill(a) => skill(a, json),
        AgentCommand::Mcp(a) => mcp::serve(a.api.server()).await,
        AgentCommand::Doctor(a) => doctor::run(a.api.server(), json).await,
        AgentCommand::Stats(a) => stats(a, json).await,
        AgentCommand::Guard(a) => super::guard::run(a.guard(), &a.api.server(), json).await,
    }
}

async fn stats(a: StatsArgs, json: bool) -> Result<i32, Error> {
    let ctx = Ctx::connect(&a.api.server(), json).await?;
    let input = GetStatsInput { project_id: ctx.project_id.clone(), since_days: a.since };
    let out = ctx.api.call::<GetStats>(input).await?;
    ctx.print(&out, || format::stats(&out, a.since.unwrap_or(STATS_DEFAULT_DAYS)));
    Ok(exit::OK)
}

async fn release(a: ReleaseArgs, json: bool) -> Result<i32, Error> {
    let ctx = Ctx::connect(&a.api.server(), json).await?;
    let input = ReleaseGroupInput {
        project_id: ctx.project_id.clone(),
        group_id: a.group_id,
        claimed_by: a.claimed_by,
    };
    let out = ctx.api.call::<ReleaseGroup>(input).await?;
    ctx.print(&out, || format::released_text(&out));
    Ok(exit::OK)
}

fn item(s: &str) -> Result<String, Error> {
    parse_item(s).map_err(Error::Local)
}

async fn login(a: LoginArgs, json: bool) -> Result<i32, Error> {
    let config = ConfigStore::open().map_err(Error::Local)?;
    let creds = config.credentials().map_err(Error::Local)?;
    let raw = a
        .api
        .api_url
        .clone()
        .or(creds.last_api_url)
        .ok_or_else(|| Error::local("which server? pass --api-url URL (or set REDLINE_API_URL)"))?;
    let api_url = parse_api_url(&raw).map_err(Error::Local)?;
    let token = match a.token.as_deref() {
        Some("-") => {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).map_err(|e| Error::local(format!("reading stdin: {e}")))?;
            line.trim().to_owned()
        }
        Some(t) => t.trim().to_owned(),
        None => device_flow(&api_url, json).await?,
    };
    if token.is_empty() {
        return Err(Error::local("the token is empty"));
    }
    let api = Api::new(api_url.clone(), token.clone())?;
    let session = api.call::<GetSession>(GetSessionInput {}).await?;
    config.save_login(&api_url, &token, Some(session.name.clone())).map_err(Error::Local)?;
    let path = config.credentials_path();
    let ctx_print = |text: String| {
        if json {
            println!("{}", serde_json::to_string(&session).expect("sessions serialise"));
        } else {
            println!("{}", format::terminal_safe(&text));
        }
    };
    let projects: Vec<&str> = session.projects.iter().map(|p| p.name.as_str()).collect();
    ctx_print(format!(
        "Signed in to {api_url} as {} (project {}; {}).\nThe token is stored in {}.",
        session.name,
        projects.join(", "),
        session.scopes.join(", "),
        path.display()
    ));
    Ok(exit::OK)
}

/// The device-code sign-in: print the code and where to approve it, then poll every
/// 2 s for up to 5 minutes.
async fn device_flow(api_url: &str, json: bool) -> Result<String, Error> {
    let request = match call_anonymous::<RequestCliAuth>(api_url, RequestCliAuthInput {}).await {
        Err(Error::Api { status: 404, body }) => {
            return Err(Error::local(format!(
                "{api_url} does not offer sign-in with a code ({}). Ask for a token (on the server: \
                 redline token create --project P --scope changes:project:read,changes:project:write \
                 --name NAME) and run: redline login --api-url {api_url} --token -",
                body.message
            )));
        }
        other => other?,
    };
    let prompt = format!(
        "To sign in, approve the code {} at {}\nWaiting for the approval…",
        request.code, request.verify_url
    );
    let prompt = format::terminal_safe(&prompt);
    if json {
        eprintln!("{prompt}")
    } else {
        println!("{prompt}")
    }
    let started = Instant::now();
    loop {
        tokio::time::sleep(LOGIN_POLL).await;
        // The secret, not the code, collects the token: the code only approves.
        let input =
            PollCliAuthInput { code: request.code.clone(), device_secret: request.device_secret.clone() };
        let poll = match call_anonymous::<PollCliAuth>(api_url, input).await {
            Ok(p) => p,
            Err(e) if e.is_transient() => continue,
            Err(e) => return Err(e),
        };
        match (poll.status, poll.token) {
            (CliAuthStatus::Confirmed, Some(token)) => return Ok(token),
            (CliAuthStatus::Confirmed, None) => {
                return Err(Error::local("the code was approved but the server sent no token"));
            }
            (CliAuthStatus::Rejected, _) => {
                return Err(Error::SignedOut("the sign-in code was rejected".to_owned()));
            }
            (CliAuthStatus::Expired, _) => {
                return Err(Error::local("the sign-in code expired: run `redline login` again"));
            }
            (CliAuthStatus::Pending, _) => {}
        }
        if started.elapsed() > LOGIN_WAIT {
            return Err(Error::local("no approval within 5 minutes: run `redline login` again"));
        }
    }
}

async fn claim(a: ClaimArgs, json: bool) -> Result<i32, Error> {
    // Outside a checkout a changeset cannot be made: say so before claiming anything.
    let top = if a.worktree { Some(changeset::checkout_top(&changeset::current_dir()?)?) } else { None };
    let ctx = Ctx::connect(&a.api.server(), json).await?;
    let change_ids = match a.change_ids.as_slice() {
        [] => None,
        ids => Some(ids.iter().map(|s| item(s)).collect::<Result<Vec<_>, _>>()?),
    };
    let who = Claimant { claimed_by: a.claimed_by.clone(), lease_minutes: a.lease_minutes };
    match ctx.claim(&who, a.group_id.clone(), change_ids, a.title.clone()).await {
        Ok(out) => {
            ctx.remember_claim(&out);
            let cs = top.map(|top| changeset::create(&top, &out.group)).transpose()?;
            print_claimed(&ctx, &out, a.group_id.is_some(), cs.as_ref());
            Ok(exit::OK)
        }
        Err(Error::Api { status: 409, body }) if body.code == codes::NOT_CLAIMABLE => {
            let items = body.items.clone().unwrap_or_default();
            eprintln!("{}", format::explain_not_claimable(&items, &a.claimed_by, &ctx.local()));
            if json {
                println!("{}", serde_json::to_string(&body).expect("error bodies serialise"));
            }
            Ok(exit::FAILED)
        }
        Err(e) => Err(e),
    }
}

/// `show`'s `--json`: the protocol's `getChange` output (each element with its
/// `sourceAnchorNow`) and where its images were saved.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShowJson<'a> {
    #[serde(flatten)]
    out: &'a GetChangeOutput,
    screenshot_path: Option<&'a str>,
    image_paths: &'a BTreeMap<String, String>,
}

async fn show(a: ShowArgs, json: bool) -> Result<i32, Error> {
    let ctx = Ctx::connect(&a.api.server(), json).await?;
    let change_id = item(a.item.as_str())?;
    let out = ctx.get_change(&change_id, None).await?;
    let group = ctx.group_of(&out.change).await?;
    let saved = save_images(&ctx, &out.change, &out.thread).await;
    let shown =
        ShowJson { out: &out, screenshot_path: saved.screenshot.as_deref(), image_paths: &saved.attachments };
    let mut follower = Follower::here();
    ctx.print_items(&shown, &mut follower, |follower| {
        let anchors_now = follower.follow_change(&out.change);
        format::show(&out, group.as_ref(), &saved, a.css, now(), &ctx.local(), &anchors_now)
    });
    Ok(exit::OK)
}

async fn ask(a: AskArgs, json: bool) -> Result<i32, Error> {
    check_options(&a.options)?;
    let images = a
        .option_images
        .iter()
        .map(|(label, path)| Ok((label.clone(), read_image(path)?)))
        .collect::<Result<Vec<_>, Error>>()?;
    let ctx = Ctx::connect(&a.api.server(), json).await?;
    let writer = Writer::new(&ctx, a.item.as_str(), &a.write.lease());
    let by = format::shell_word(&writer.author());
    let message = writer.ask(a.question.into_string(), a.options, images).await?;
    ctx.print(&MessageOutput { message: message.clone() }, || {
        format!(
            "Asked on #{}; it now waits for an answer.{}\nWait for it: redline wait --claimed-by {by}",
            a.item.as_str().trim_start_matches('#'),
            format::asked_options(&message),
        )
    });
    Ok(exit::OK)
}

async fn reply(a: ReplyArgs, json: bool) -> Result<i32, Error> {
    let image = match &a.image {
        Some(path) => Some((read_image(path)?, a.image_label.clone().unwrap_or_else(|| file_label(path)))),
        None => None,
    };
    let ctx = Ctx::connect(&a.api.server(), json).await?;
    let message = Writer::new(&ctx, a.item.as_str(), &a.write.lease()).reply(a.message, image).await?;
    ctx.print(&MessageOutput { message }, || {
        format!("Replied on #{}.", a.item.as_str().trim_start_matches('#'))
    });
    Ok(exit::OK)
}

async fn shot(a: ShotArgs, json: bool) -> Result<i32, Error> {
    let image = read_image(&a.image)?;
    let kind = match a.kind {
        ShotKind::Evidence => AttachmentKind::Evidence,
        ShotKind::Option => AttachmentKind::Option,
    };
    let ctx = Ctx::connect(&a.api.server(), json).await?;
    let out = Writer::new(&ctx, a.item.as_str(), &a.write.lease()).shot(a.label, kind, image).await?;
    ctx.print(&out, || shot_text(&out, kind, a.item.as_str()));
    Ok(exit::OK)
}

async fn done(a: DoneArgs, json: bool) -> Result<i32, Error> {
    let ctx = Ctx::connect(&a.api.server(), json).await?;
    let cwd =
        std::env::current_dir().map_err(|e| Error::local(format!("reading the current directory: {e}")))?;
    let done = Writer::new(&ctx, a.item.as_str(), &a.write.lease())
        .done(a.note, a.commit, a.branch, a.pr, &cwd)
        .await?;
    if done.no_checkout.is_some() {
        eprintln!("redline: not in a git checkout: no commit is recorded (pass --commit SHA)");
    }
    ctx.print(&ChangeOutput { change: done.change.clone() }, || done_text(&done.change));
    Ok(exit::OK)
}

async fn list(a: ListArgs, json: bool) -> Result<i32, Error> {
    let ctx = Ctx::connect(&a.api.server(), json).await?;
    let stage_id = ctx.stage_id(a.stage.as_deref()).await?;
    let input = ListChangesInput {
        stage_id,
        include_done: a.all,
        limit: Some(a.limit),
        cursor: a.cursor.clone(),
        ..Default::default()
    };
    let out = ctx.list(input).await?;
    ctx.print(&out, || {
        if out.changes.is_empty() {
            return if a.all { "The queue is empty.".to_owned() } else { "Nothing open.".to_owned() };
        }
        let now = now();
        let mut lines: Vec<String> =
            out.changes.iter().map(|c| format::list_line(c, &out.groups, now, &ctx.local())).collect();
        if let Some(cursor) = &out.next_cursor {
            let flags = if a.all { " --all" } else { "" };
            lines.push(format::more_line(
                out.changes.len(),
                out.total,
                &format!("redline list{flags} --cursor {cursor}"),
            ));
        }
        lines.join("\n")
    });
    Ok(exit::OK)
}

fn skill(a: SkillArgs, json: bool) -> Result<i32, Error> {
    let Some(SkillAction::Install { dir }) = a.action else {
        print!("{}", skill::SKILL);
        return Ok(exit::OK);
    };
    // A folder named with --dir is the person's choice, links and all; below the
    // checkout, nothing is followed.
    let (dir, base) = match dir {
        Some(dir) => (dir.clone(), dir),
        None => {
            let cwd = std::env::current_dir()
                .map_err(|e| Error::local(format!("reading the current directory: {e}")))?;
            let base = skill::default_base(&cwd);
            (skill::dir_in(&base), base)
        }
    };
    let path = skill::install(&dir, &base).map_err(Error::Local)?;
    if json {
        println!("{}", serde_json::json!({ "path": path }));
    } else {
        println!("Wrote {}", path.display());
    }
    Ok(exit::OK)
}

async fn file(a: FileArgs, json: bool) -> Result<i32, Error> {
    validate_title("title", &a.title).map_err(|e| Error::local(e.to_string()))?;
    let ctx = Ctx::connect(&a.api.server(), json).await?;
    let stages = ctx.stages().await?;
    let stage = match &a.stage {
        Some(s) => pick_stage(&stages, s),
        None => default_stage(&stages),
    }
    .map_err(Error::Local)?;
    let input = CreateChangeInput {
        stage_id: stage.stage_id.clone(),
        title: a.title,
        body: a.body,
        route: a.route,
        source: Some(Source::Cli),
        ..Default::default()
    };
    let out = ctx.api.call::<CreateChange>(input).await?;
    ctx.print(&out, || {
        let c = &out.change;
        let held = match (c.held, c.held_until) {
            (true, Some(t)) => format!("; held until {} while you add more", ctx.local().hhmm(t)),
            _ => String::new(),
        };
        format!("Filed #{} \"{}\" on {}{held}.", c.short_id, c.title, stage.branch)
    });
    Ok(exit::OK)
}
