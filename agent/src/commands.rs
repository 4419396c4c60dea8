//! The agent commands, each a thin layer over one or two RPCs.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use redline_protocol::*;
use serde::Serialize;

use super::changeset::Changeset;
use super::client::{Api, Error, call_anonymous, exit};
use super::config::{ConfigStore, Credentials, SavedClaim, parse_api_url};
use super::format::{self, LocalTime, SavedImages};
use super::images::{self, ImageCache};
use super::rules::{LIST_READ_MAX, THREAD_READ_MAX, default_stage, parse_item, pick_stage};
use super::writes::{Image, Writer, check_options};
use super::{
    AgentCommand, ApiArgs, AskArgs, ClaimArgs, DoneArgs, FileArgs, ListArgs, LoginArgs, ReplyArgs, ShotArgs,
    ShotKind, ShowArgs, SkillAction, SkillArgs, StatsArgs, WriteArgs, changeset, doctor, mcp, next, skill,
};

/// How often `login` asks whether its code was approved, and for how long.
const LOGIN_POLL: Duration = Duration::from_secs(2);
const LOGIN_WAIT: Duration = Duration::from_secs(5 * 60);

pub async fn run(command: AgentCommand, json: bool) -> Result<i32, Error> {
    match command {
        AgentCommand::Login(a) => login(a, json).await,
        AgentCommand::Next(a) => {
            let ctx = Ctx::connect(&a.api, json).await?;
            next::run(&ctx, a).await
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
            let ctx = Ctx::connect(&a.api, json).await?;
            changeset::run_merge(&ctx, a).await
        }
        AgentCommand::Run(a) => {
            let ctx = Ctx::connect(&a.api, json).await?;
            super::run::run(ctx, a).await
        }
        AgentCommand::Skill(a) => skill(a, json),
        AgentCommand::Mcp(a) => mcp::serve(a).await,
        AgentCommand::Doctor(a) => doctor::run(a, json).await,
        AgentCommand::Stats(a) => stats(a, json).await,
    }
}

async fn stats(a: StatsArgs, json: bool) -> Result<i32, Error> {
    let ctx = Ctx::connect(&a.api, json).await?;
    let input = GetStatsInput { project_id: ctx.project_id.clone(), since_days: a.since };
    let out = ctx.api.call::<GetStats>(input).await?;
    ctx.print(&out, || format::stats(&out, a.since.unwrap_or(STATS_DEFAULT_DAYS)));
    Ok(exit::OK)
}

/// A signed-in session on one API URL and project.
pub struct Ctx {
    pub api: Api,
    pub api_url: String,
    pub config: ConfigStore,
    pub json: bool,
    pub session: Session,
    pub project_id: String,
}

impl Ctx {
    /// Finds the API URL and token (see [`resolve`]), and checks the session.
    pub async fn connect(args: &ApiArgs, json: bool) -> Result<Ctx, Error> {
        let config = ConfigStore::open().map_err(Error::Local)?;
        let (api_url, token) = resolve(&config, args)?;
        let api = Api::new(api_url.clone(), token)?;
        let session = api.call::<GetSession>(GetSessionInput {}).await?;
        let project_id = choose_project(&session, args.project.as_deref()).map_err(Error::Local)?;
        Ok(Ctx { api, api_url, config, json, session, project_id })
    }

    pub fn local(&self) -> LocalTime<'static> {
        LocalTime { offset: &format::system_offset }
    }

    pub fn saved_claim(&self) -> Option<SavedClaim> {
        self.config.claim(&self.api_url, &self.project_id).unwrap_or_else(|e| {
            eprintln!("redline: ignoring the remembered claim: {e}");
            None
        })
    }

    pub fn remember_claim(&self, out: &ClaimChangesOutput) {
        if let Err(e) = self.config.save_claim(&self.api_url, &self.project_id, SavedClaim::from_output(out))
        {
            eprintln!(
                "redline: could not remember the claim ({e}); pass --group-id and --fence to later writes"
            );
        }
    }

    pub async fn list(&self, input: ListChangesInput) -> Result<ListChangesOutput, Error> {
        self.api.call::<ListChanges>(ListChangesInput { project_id: self.project_id.clone(), ..input }).await
    }

    /// Every page of `input`'s list, up to [`LIST_READ_MAX`] items (a server that pages
    /// nothing, as Fabric, answers one page); `nextCursor` is kept when more are left.
    pub async fn list_all(&self, input: ListChangesInput) -> Result<ListChangesOutput, Error> {
        let mut out = self.list(input.clone()).await?;
        while let Some(cursor) = out.next_cursor.clone()
            && out.changes.len() < LIST_READ_MAX
        {
            let page = self.list(ListChangesInput { cursor: Some(cursor), ..input.clone() }).await?;
            out.changes.extend(page.changes);
            for g in page.groups {
                if !out.groups.iter().any(|known| known.group_id == g.group_id) {
                    out.groups.push(g);
                }
            }
            out.next_cursor = page.next_cursor;
        }
        Ok(out)
    }

    /// An item with its thread: our server answers the latest messages, so the older
    /// ones are read page by page, up to [`THREAD_READ_MAX`] messages in all (the
    /// latest; `olderCursor` is kept when older ones are left). A server that pages
    /// nothing (Fabric) answers the whole thread at once.
    pub async fn get_change(
        &self,
        change_id: &str,
        claimed_by: Option<&str>,
    ) -> Result<GetChangeOutput, Error> {
        let mut input = GetChangeInput {
            change_id: change_id.to_owned(),
            project_id: Some(self.project_id.clone()),
            claimed_by: claimed_by.map(str::to_owned),
            message_limit: Some(THREAD_PAGE_MAX),
            before: None,
        };
        let mut out = self.api.call::<GetChange>(input.clone()).await?;
        while let Some(before) = out.older_cursor.clone()
            && out.thread.len() < THREAD_READ_MAX
        {
            input.before = Some(before);
            let older = self.api.call::<GetChange>(input.clone()).await?;
            out.older_cursor = older.older_cursor;
            out.thread.splice(0..0, older.thread);
        }
        Ok(out)
    }

    /// The stage id `--stage` names.
    pub async fn stage_id(&self, wanted: Option<&str>) -> Result<Option<String>, Error> {
        let Some(wanted) = wanted else { return Ok(None) };
        let stages = self.stages().await?;
        Ok(Some(pick_stage(&stages, wanted).map_err(Error::Local)?.stage_id.clone()))
    }

    pub async fn stages(&self) -> Result<Vec<Stage>, Error> {
        let input = ListStagesInput { project_id: self.project_id.clone() };
        Ok(self.api.call::<ListStages>(input).await?.stages)
    }

    /// The lease and author of an agent write on `item`: the flags, else the last
    /// claim (when it has the item), else the session's name.
    pub(crate) fn write_lease(&self, item: &str, w: &WriteArgs) -> (Option<String>, Option<u64>, String) {
        let saved = self.saved_claim();
        let author = w
            .author
            .clone()
            .or_else(|| saved.as_ref().map(|c| c.claimed_by.clone()).filter(|n| !n.is_empty()))
            .unwrap_or_else(|| self.session.name.clone());
        match (&w.group_id, saved.filter(|c| c.contains(item))) {
            (Some(g), _) => (Some(g.clone()), w.fence, author),
            (None, Some(c)) => (Some(c.group_id), Some(c.fence), author),
            (None, None) => (None, None, author),
        }
    }

    /// The group an item is in (with its lease), when it is in one.
    pub async fn group_of(&self, change: &Change) -> Result<Option<Group>, Error> {
        let Some(g) = &change.group_id else { return Ok(None) };
        let input = ListChangesInput {
            group_id: Some(g.clone()),
            include_done: true,
            limit: Some(1),
            ..Default::default()
        };
        Ok(self.list(input).await?.groups.into_iter().find(|gr| &gr.group_id == g))
    }

    /// Prints `value` as JSON with `--json`, else `text`, made safe for a terminal: it
    /// holds what filers and pages wrote.
    pub fn print<T: Serialize>(&self, value: &T, text: impl FnOnce() -> String) {
        if self.json {
            println!("{}", serde_json::to_string(value).expect("records serialise"));
        } else {
            println!("{}", format::terminal_safe(&text()));
        }
    }
}

/// The API URL and the token (see [`api_url_of`] and [`token_for`]).
fn resolve(config: &ConfigStore, args: &ApiArgs) -> Result<(String, String), Error> {
    let creds = config.credentials().map_err(Error::Local)?;
    let api_url = api_url_of(&creds, args)?;
    let token = token_for(&creds, &api_url)?;
    Ok((api_url, token))
}

/// The API URL: `--api-url`, `REDLINE_API_URL`, then the last login.
pub(crate) fn api_url_of(creds: &Credentials, args: &ApiArgs) -> Result<String, Error> {
    let raw = args.api_url.clone().or_else(|| creds.last_api_url.clone()).ok_or_else(|| {
        Error::SignedOut(
            "no API URL: pass --api-url, set REDLINE_API_URL, or sign in with `redline login --api-url URL`"
                .to_owned(),
        )
    })?;
    parse_api_url(&raw).map_err(Error::Local)
}

/// The token for `api_url`: `REDLINE_TOKEN`, then the one stored for that URL.
pub(crate) fn token_for(creds: &Credentials, api_url: &str) -> Result<String, Error> {
    if let Some(token) = std::env::var("REDLINE_TOKEN").ok().filter(|t| !t.trim().is_empty()) {
        return Ok(token.trim().to_owned());
    }
    match creds.servers.get(api_url) {
        Some(login) => Ok(login.token.clone()),
        None => Err(Error::SignedOut(format!(
            "not signed in to {api_url}: run `redline login --api-url {api_url}` or set REDLINE_TOKEN"
        ))),
    }
}

pub(crate) fn choose_project(session: &Session, wanted: Option<&str>) -> Result<String, String> {
    match (wanted, session.projects.as_slice()) {
        (Some(w), projects) => projects
            .iter()
            .find(|p| p.project_id == w || p.name == w)
            .map(|p| p.project_id.clone())
            .ok_or_else(|| format!("this token has no project {w:?}")),
        (None, [one]) => Ok(one.project_id.clone()),
        (None, []) => Err("this token has no project".to_owned()),
        (None, many) => {
            let names: Vec<&str> = many.iter().map(|p| p.name.as_str()).collect();
            Err(format!("this token has several projects ({}): choose one with --project", names.join(", ")))
        }
    }
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
    let ctx = Ctx::connect(&a.api, json).await?;
    let change_ids = match a.change_ids.as_slice() {
        [] => None,
        ids => Some(ids.iter().map(|s| item(s)).collect::<Result<Vec<_>, _>>()?),
    };
    let input = ClaimChangesInput {
        project_id: ctx.project_id.clone(),
        group_id: a.group_id.clone(),
        change_ids,
        title: a.title.clone(),
        claimed_by: a.claimed_by.clone(),
        lease_minutes: a.lease_minutes,
    };
    match ctx.api.call::<ClaimChanges>(input).await {
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

/// A claim's `--json`: the protocol's `claimChanges` output, and with `--worktree`
/// the folder of its changeset.
#[derive(Serialize)]
struct ClaimedJson<'a> {
    #[serde(flatten)]
    out: &'a ClaimChangesOutput,
    #[serde(skip_serializing_if = "Option::is_none")]
    worktree: Option<&'a Path>,
}

/// Prints a claim (or renewal), its changeset when it has one, and what to do next.
pub fn print_claimed(ctx: &Ctx, out: &ClaimChangesOutput, renewed: bool, cs: Option<&Changeset>) {
    let shown = ClaimedJson { out, worktree: cs.and_then(|cs| cs.worktree.as_deref()) };
    ctx.print(&shown, || {
        let first = out.changes.first().map(|c| c.short_id.as_str()).unwrap_or("N");
        let lines = format::claimed_lines(out, renewed, now(), &ctx.local());
        let changeset = cs.map(|cs| format!("\n{}", changeset::worktree_text(cs))).unwrap_or_default();
        format!("{lines}{changeset}\nNext: redline show {first}")
    });
}

/// The local clock, for display and for `next`'s sleeping only (rules use the server's).
pub fn now() -> Timestamp {
    let ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    Timestamp::from_unix_millis(i64::try_from(ms).unwrap_or(i64::MAX))
}

/// `show`'s `--json`: the protocol's `getChange` output and where its images were saved.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ShowJson<'a> {
    #[serde(flatten)]
    out: &'a GetChangeOutput,
    screenshot_path: Option<&'a str>,
    image_paths: &'a BTreeMap<String, String>,
}

async fn show(a: ShowArgs, json: bool) -> Result<i32, Error> {
    let ctx = Ctx::connect(&a.api, json).await?;
    let change_id = item(a.item.as_str())?;
    let out = ctx.get_change(&change_id, None).await?;
    let group = ctx.group_of(&out.change).await?;
    let saved = save_images(&ctx, &out.change, &out.thread).await;
    let shown =
        ShowJson { out: &out, screenshot_path: saved.screenshot.as_deref(), image_paths: &saved.attachments };
    ctx.print(&shown, || format::show(&out, group.as_ref(), &saved, a.css, now(), &ctx.local()));
    Ok(exit::OK)
}

/// Saves an item's screenshot and its thread's images in the image cache (once each;
/// see [`images`](crate::images)). What cannot be saved is said on stderr and left out.
pub async fn save_images(ctx: &Ctx, change: &Change, thread: &[Message]) -> SavedImages {
    let mut saved = SavedImages::default();
    let cache = match ImageCache::open() {
        Ok(cache) => cache,
        Err(e) => {
            eprintln!("redline: images are not saved: {e}");
            return saved;
        }
    };
    let (project, short) = (&change.project_id, &change.short_id);
    if let Some(url) = &change.screenshot_url {
        let key = change.screenshot_key.as_deref().unwrap_or("screenshot");
        match cache.fetch(&ctx.api, &images::stem(project, short, key), url).await {
            Ok(path) => saved.screenshot = Some(path.display().to_string()),
            Err(e) => {
                eprintln!("redline: could not save the screenshot: {}", format::terminal_safe(&e.to_string()))
            }
        }
    }
    for a in thread.iter().flat_map(|m| &m.attachments) {
        let Some(url) = &a.url else { continue };
        match cache.fetch(&ctx.api, &images::stem(project, short, &a.key), url).await {
            Ok(path) => {
                saved.attachments.insert(a.key.clone(), path.display().to_string());
            }
            Err(e) => eprintln!(
                "redline: could not save image {}: {}",
                format::terminal_safe(&a.label),
                format::terminal_safe(&e.to_string())
            ),
        }
    }
    saved
}

async fn ask(a: AskArgs, json: bool) -> Result<i32, Error> {
    check_options(&a.options)?;
    let images = a
        .option_images
        .iter()
        .map(|(label, path)| Ok((label.clone(), read_image(path)?)))
        .collect::<Result<Vec<_>, Error>>()?;
    let ctx = Ctx::connect(&a.api, json).await?;
    let writer = Writer::new(&ctx, a.item.as_str(), &a.write);
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

/// An image file as the protocol takes it: its type from its bytes, and base64.
pub(crate) fn read_image(path: &Path) -> Result<Image, Error> {
    let bytes = images::read_bounded(path).map_err(Error::Local)?;
    let kind = ImageType::sniff(&bytes)
        .ok_or_else(|| Error::local(format!("{} is not a png, jpeg or webp image", path.display())))?;
    Ok(Image { kind, base64: STANDARD.encode(&bytes) })
}

/// An image's label when none is given: its file's name.
pub(crate) fn file_label(path: &Path) -> String {
    path.file_name().map_or_else(|| "image".to_owned(), |n| n.to_string_lossy().into_owned())
}

async fn reply(a: ReplyArgs, json: bool) -> Result<i32, Error> {
    let image = match &a.image {
        Some(path) => Some((read_image(path)?, a.image_label.clone().unwrap_or_else(|| file_label(path)))),
        None => None,
    };
    let ctx = Ctx::connect(&a.api, json).await?;
    let message = Writer::new(&ctx, a.item.as_str(), &a.write).reply(a.message, image).await?;
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
    let ctx = Ctx::connect(&a.api, json).await?;
    let out = Writer::new(&ctx, a.item.as_str(), &a.write).shot(a.label, kind, image).await?;
    ctx.print(&out, || shot_text(&out, kind, a.item.as_str()));
    Ok(exit::OK)
}

/// What `shot` says it attached.
pub(crate) fn shot_text(out: &AttachChangeShotOutput, kind: AttachmentKind, item: &str) -> String {
    format!(
        "Attached {} \"{}\" to #{} (key {}).",
        kind.as_str(),
        out.message.body,
        item.trim().trim_start_matches('#'),
        out.key
    )
}

async fn done(a: DoneArgs, json: bool) -> Result<i32, Error> {
    let ctx = Ctx::connect(&a.api, json).await?;
    let cwd =
        std::env::current_dir().map_err(|e| Error::local(format!("reading the current directory: {e}")))?;
    let done =
        Writer::new(&ctx, a.item.as_str(), &a.write).done(a.note, a.commit, a.branch, a.pr, &cwd).await?;
    if done.no_checkout.is_some() {
        eprintln!("redline: not in a git checkout: no commit is recorded (pass --commit SHA)");
    }
    ctx.print(&ChangeOutput { change: done.change.clone() }, || done_text(&done.change));
    Ok(exit::OK)
}

/// What `done` says about the completed item: its commit, branch and whether it is live.
pub(crate) fn done_text(c: &Change) -> String {
    let commit = c.head_commit.as_deref().map(|s| format!(" in {}", short_sha(s))).unwrap_or_default();
    let branch = c.branch.as_deref().map(|b| format!(" on {b}")).unwrap_or_default();
    let live = match c.live {
        Some(true) => " It is live on its stage.",
        Some(false) => " It goes live when the stage deploys a build that contains it.",
        None => "",
    };
    format!("#{} is done{commit}{branch}.{live}", c.short_id)
}

async fn list(a: ListArgs, json: bool) -> Result<i32, Error> {
    let ctx = Ctx::connect(&a.api, json).await?;
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
    let ctx = Ctx::connect(&a.api, json).await?;
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

#[cfg(test)]
mod tests {
    use super::*;

    fn session(projects: &[(&str, &str)]) -> Session {
        Session {
            user_id: "u".into(),
            name: "agent".into(),
            projects: projects
                .iter()
                .map(|(id, name)| SessionProject { project_id: (*id).into(), name: (*name).into() })
                .collect(),
            scopes: vec![],
        }
    }

    #[test]
    fn chooses_the_project() {
        let one = session(&[("p1", "demo")]);
        assert_eq!(choose_project(&one, None).unwrap(), "p1");
        assert_eq!(choose_project(&one, Some("demo")).unwrap(), "p1");
        assert!(choose_project(&one, Some("other")).unwrap_err().contains("no project \"other\""));
        let two = session(&[("p1", "demo"), ("p2", "shop")]);
        assert!(choose_project(&two, None).unwrap_err().contains("(demo, shop): choose one with --project"));
        assert_eq!(choose_project(&two, Some("p2")).unwrap(), "p2");
        assert!(choose_project(&session(&[]), None).is_err());
    }
}
