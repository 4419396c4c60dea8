//! How the panel reads the queue (#25): the first page of each part of the list when the
//! filter is set, on a `reset` and when the stream (re)opens or is polled; a further page
//! when the person scrolls to the end; and only the rows events name, in one read.
//! `pages.rs` decides what to read and how to take each answer (and when a server that
//! does not page or list the items named is read whole, as before paging); this runs it.

use leptos::prelude::*;
use redline_protocol::Timestamp;
use redline_protocol::rpc::{ListAgents, ListAgentsInput, ListChanges, ListChangesOutput};

use super::Ctx;
use crate::rules::pages::{self, AfterPage, Hints, Named, Next, Part, Rows};
use crate::worker_call::RefreshBadge;

/// Whether the list has been read.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    Loading,
    Ready,
    Failed(String),
}

/// What the list is narrowed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub project_id: String,
    /// `None`: the whole project.
    pub stage_id: Option<String>,
}

pub fn now() -> Timestamp {
    Timestamp::from_unix_millis(js_sys::Date::now() as i64)
}

/// Re-reads the first pages (coalescing with the reads already asked for).
pub fn reload(ctx: Ctx) {
    hint(ctx, Hints::reread());
}

/// Does what events (or the panel itself) asked for, one read at a time: asks coming in
/// meanwhile are gathered and done after it, so rows are applied in the order read.
pub fn hint(ctx: Ctx, hints: Hints) {
    let store = ctx.store;
    store.work.update_value(|(_, pending)| pending.add(hints));
    if store.work.with_value(|(running, _)| *running) {
        return;
    }
    store.work.update_value(|(running, _)| *running = true);
    leptos::task::spawn_local(async move {
        loop {
            let hints =
                store.work.try_update_value(|(_, pending)| std::mem::take(pending)).unwrap_or_default();
            let Some(filter) = ctx.filter.get_untracked() else { break };
            if hints.is_empty() {
                break;
            }
            let reread = hints.reread || store.pages.with_value(|p| p.ids_ignored);
            let result = if reread {
                first_pages(ctx, &filter).await
            } else {
                rows(ctx, &filter, hints.changed).await
            };
            match result {
                Ok(badge) if ctx.filter.get_untracked().as_ref() == Some(&filter) => {
                    // `first_pages` sections the rows after each part it reads already.
                    if !reread {
                        store.resection(now());
                        store.load.set(Load::Ready);
                    }
                    store.version.update(|v| *v += 1);
                    if badge {
                        refresh_badge();
                    }
                }
                Ok(_) => {}
                Err(message) => store.load.set(Load::Failed(message)),
            }
            if reread {
                read_agents(ctx, &filter).await;
            }
        }
        store.work.update_value(|(running, _)| *running = false);
    });
}

/// The toolbar badge counts the whole project, which the panel does not hold: the worker
/// counts it (`countChanges`). Nothing in the panel waits on it; a failure is logged.
fn refresh_badge() {
    leptos::task::spawn_local(async {
        if let Err(error) = crate::ui::call(&RefreshBadge {}).await {
            web_sys::console::warn_1(&format!("Redline could not count the badge: {error}").into());
        }
    });
}

/// Reads the first page of each part, the items in play first (so they paint first),
/// and takes each as the truth for what it covers. Says that the badge may have moved.
async fn first_pages(ctx: Ctx, filter: &Filter) -> Result<bool, String> {
    for part in Part::ALL {
        let page = page(ctx, filter, part, None).await?;
        if ctx.filter.get_untracked().as_ref() != Some(filter) {
            return Ok(false);
        }
        let covers_from = pages::covers_from(&page);
        ctx.store.change(|q| q.refresh(page.changes, &page.groups, |s| Part::of(s) == part, covers_from));
        ctx.store.resection(now());
        ctx.store.load.set(Load::Ready);
    }
    Ok(true)
}

/// Reads one page of `part` after `cursor`, again whole if the server does not page.
async fn page(
    ctx: Ctx,
    filter: &Filter,
    part: Part,
    cursor: Option<String>,
) -> Result<ListChangesOutput, String> {
    loop {
        let limit = ctx.store.pages.with_value(|p| p.limit());
        let input = part.input(&filter.project_id, filter.stage_id.as_deref(), cursor.clone(), limit);
        let answer = ctx.client.get_value().call::<ListChanges>(input).await.map_err(|e| e.to_string())?;
        // The filter moved meanwhile: the paging state is the new filter's, not this answer's.
        if ctx.filter.get_untracked().as_ref() != Some(filter) {
            return Ok(answer);
        }
        let after =
            ctx.store.pages.try_update_value(|p| p.after_page(part, cursor.as_deref(), limit, &answer));
        if after != Some(AfterPage::Again) {
            return Ok(answer);
        }
    }
}

/// Reads again only the rows events named, in one read (several past
/// [`pages::NAMED_MAX`]), and applies them together. Says whether one of them counts, or
/// counted, on the toolbar badge.
async fn rows(ctx: Ctx, filter: &Filter, ids: Vec<String>) -> Result<bool, String> {
    let mut rows = Rows::default();
    for asked in ids.chunks(pages::NAMED_MAX) {
        let input = pages::named_input(&filter.project_id, filter.stage_id.as_deref(), asked);
        let answer = ctx.client.get_value().call::<ListChanges>(input).await.map_err(|e| e.to_string())?;
        if ctx.filter.get_untracked().as_ref() != Some(filter) {
            return Ok(false);
        }
        match pages::named_of(asked, answer) {
            Named::Read(read) => rows.add(read),
            Named::Ignored => {
                ctx.store.pages.update_value(|p| p.ids_ignored = true);
                return first_pages(ctx, filter).await;
            }
        }
    }
    let on_badge = |ids: &[String]| ids.iter().any(|id| ctx.store.on_badge(id));
    let before = on_badge(&ids);
    ctx.store.change(|q| rows.apply(q));
    Ok(before || on_badge(&ids))
}

/// The person reached the end of the rows shown: shows more of those read, or reads the
/// next page.
pub fn more(ctx: Ctx) {
    let store = ctx.store;
    if store.reading_more.get_untracked() {
        return;
    }
    let Some(filter) = ctx.filter.get_untracked() else { return };
    match store.pages.with_value(|p| p.next(store.loaded())) {
        Next::End => {}
        Next::Show => {
            store.pages.update_value(|p| p.show_more());
            store.resection(now());
        }
        Next::Read(part, cursor) => {
            store.reading_more.set(true);
            leptos::task::spawn_local(async move {
                match page(ctx, &filter, part, cursor).await {
                    Ok(page) if ctx.filter.get_untracked().as_ref() == Some(&filter) => {
                        store.change(|q| q.merge(page.changes, &page.groups));
                        store.pages.update_value(|p| p.show_more());
                        store.resection(now());
                    }
                    Ok(_) => {}
                    Err(message) => store.load.set(Load::Failed(message)),
                }
                store.reading_more.set(false);
            });
        }
    }
}

/// Reads who is working the queue (set only when it changed, so rows re-render only
/// then). A server without `listAgents` (Fabric) shows no presence.
pub async fn read_agents(ctx: Ctx, filter: &Filter) {
    let input = ListAgentsInput { project_id: filter.project_id.clone() };
    if let Ok(out) = ctx.client.get_value().call::<ListAgents>(input).await
        && ctx.store.agents.with_untracked(|a| *a != out.agents)
    {
        ctx.store.agents.set(out.agents);
    }
}
