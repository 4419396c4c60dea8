//! A signed-in session, what the commands, the MCP server and `next` share: the API
//! client on one URL and project ([`Ctx`], with the reads they all make), how the URL
//! and the token are found, the local clock, and saving an item's images.

use std::time::SystemTime;

use redline_protocol::*;
use serde::Serialize;

use super::anchors::Follower;
use super::client::{Api, Error};
use super::config::{ConfigStore, Credentials, SavedClaim, parse_api_url};
use super::format::{self, LocalTime, SavedImages};
use super::images::{self, ImageCache};
use super::rules::{LIST_READ_MAX, THREAD_READ_MAX, pick_stage};

/// The claim `redline run` starts an agent under, in the agent's environment: its
/// writes (CLI and MCP alike) default to it, so agents sharing a config dir (whose
/// remembered claim is the last one made) never write under each other's claims.
pub const GROUP_ID_ENV: &str = "REDLINE_GROUP_ID";
pub const FENCE_ENV: &str = "REDLINE_FENCE";
pub const CLAIMED_BY_ENV: &str = "REDLINE_CLAIMED_BY";

/// Where the server is and which project to work on, as asked (`--api-url`,
/// `--project`, their environment variables); `None` leaves it to the last login and
/// the session.
#[derive(Debug, Clone, Default)]
pub struct ServerChoice {
    pub api_url: Option<String>,
    pub project: Option<String>,
}

/// The lease an agent write is made under, and its author, as given (flags, `redline
/// run`'s environment, a tool call); what is missing [`Ctx::write_lease`] finds.
#[derive(Debug, Clone, Default)]
pub struct Lease {
    pub author: Option<String>,
    pub group_id: Option<String>,
    pub fence: Option<u64>,
}

impl Lease {
    /// A write as `author` (or the default author), under the claim `redline run`
    /// started this process under (see [`GROUP_ID_ENV`]), else the remembered claim.
    pub fn by(author: Option<String>) -> Lease {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        Lease {
            author: author.or_else(|| var(CLAIMED_BY_ENV)),
            group_id: var(GROUP_ID_ENV),
            fence: var(FENCE_ENV).and_then(|f| f.trim().parse().ok()),
        }
    }
}

/// A lease resolved: the group and fence a write is made under (none outside a claim),
/// and the name it is made as.
#[derive(Debug, Clone)]
pub struct WriteUnder {
    pub group_id: Option<String>,
    pub fence: Option<u64>,
    pub author: String,
}

/// Who claims, and for how long (the server's default lease when `None`).
#[derive(Debug, Clone)]
pub struct Claimant {
    pub claimed_by: String,
    pub lease_minutes: Option<u32>,
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
    pub async fn connect(args: &ServerChoice, json: bool) -> Result<Ctx, Error> {
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
    pub(crate) fn write_lease(&self, item: &str, w: &Lease) -> WriteUnder {
        let saved = self.saved_claim();
        let author = w
            .author
            .clone()
            .or_else(|| saved.as_ref().map(|c| c.claimed_by.clone()).filter(|n| !n.is_empty()))
            .unwrap_or_else(|| self.session.name.clone());
        let (group_id, fence) = match (&w.group_id, saved.filter(|c| c.contains(item))) {
            (Some(g), _) => (Some(g.clone()), w.fence),
            (None, Some(c)) => (Some(c.group_id), Some(c.fence)),
            (None, None) => (None, None),
        };
        WriteUnder { group_id, fence, author }
    }

    /// Claims on this project as `who`: `change_ids` (every claimable item when `None`)
    /// as a new group titled `title`, or with `group_id` renews that group's lease and
    /// adds those of `change_ids` that are claimable. The one place `claimChanges` is
    /// called; the caller decides whether the claim is remembered.
    pub async fn claim(
        &self,
        who: &Claimant,
        group_id: Option<String>,
        change_ids: Option<Vec<String>>,
        title: Option<String>,
    ) -> Result<ClaimChangesOutput, Error> {
        let input = ClaimChangesInput {
            project_id: self.project_id.clone(),
            group_id,
            change_ids,
            title,
            claimed_by: who.claimed_by.clone(),
            lease_minutes: who.lease_minutes,
        };
        self.api.call::<ClaimChanges>(input).await
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

    /// [`Ctx::print`] for answers that hold items: with `--json`, each element with a
    /// source anchor also gets `sourceAnchorNow`, where `follower` finds it at `HEAD`;
    /// `text` is given the follower to show the same.
    pub fn print_items<T: Serialize>(
        &self,
        value: &T,
        follower: &mut Follower,
        text: impl FnOnce(&mut Follower) -> String,
    ) {
        if self.json {
            let mut value = serde_json::to_value(value).expect("records serialise");
            follower.annotate(&mut value);
            println!("{value}");
        } else {
            println!("{}", format::terminal_safe(&text(follower)));
        }
    }
}

/// The API URL and the token (see [`api_url_of`] and [`token_for`]).
fn resolve(config: &ConfigStore, args: &ServerChoice) -> Result<(String, String), Error> {
    let creds = config.credentials().map_err(Error::Local)?;
    let api_url = api_url_of(&creds, args)?;
    let token = token_for(&creds, &api_url)?;
    Ok((api_url, token))
}

/// The API URL: `--api-url`, `REDLINE_API_URL`, then the last login.
pub(crate) fn api_url_of(creds: &Credentials, args: &ServerChoice) -> Result<String, Error> {
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

/// The local clock, for display and for `next`'s sleeping only (rules use the server's).
pub fn now() -> Timestamp {
    let ms = SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    Timestamp::from_unix_millis(i64::try_from(ms).unwrap_or(i64::MAX))
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
