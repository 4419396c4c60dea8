//! Items re-found on each new build: when the tab the panel follows shows its stage on
//! a build an item of that page was not filed on (the page's `fabric-git-sha`, else the
//! stage's deployed sha), the panel looks for the item's elements there again (the
//! worker runs `show::refind_elements` in the tab), marks its row `moved` or `gone`, and
//! records the finding (`recordRefind`) so the agent sees it. Which items, and what the
//! page's answer means, is `crate::rules::refind`'s.

use std::collections::{HashMap, HashSet};

use leptos::prelude::*;
use redline_protocol::rpc::{GetChange, GetChangeInput};
use redline_protocol::{
    Element, RecordRefind, RecordRefindInput, Refind, ResolvedStage, Timestamp, Whereabouts,
};

use super::Ctx;
use crate::rules::api_error::ApiError;
use crate::rules::refind::{self, PageRefind};
use crate::worker_call::{RefindOnPage, ShowOnPage};

/// At most this many items are looked for in one pass (the rest in the next).
const ITEMS_PER_PASS: usize = 20;

/// What the panel found of each item of the page in view (by change id), with the
/// elements "Show on page" is given for it; and the passes' bookkeeping.
#[derive(Clone, Copy)]
pub struct Found {
    items: RwSignal<HashMap<String, (Refind, Vec<Element>)>>,
    /// A pass is running, and another was asked for meanwhile.
    running: StoredValue<(bool, bool)>,
    /// `(change id, build)` with nothing to look for on that build (all its elements in
    /// frames of other origins, say), not asked about again.
    tried: StoredValue<HashSet<(String, String)>>,
}

impl Found {
    pub fn new() -> Found {
        Found {
            items: RwSignal::new(HashMap::new()),
            running: StoredValue::new((false, false)),
            tried: StoredValue::new(HashSet::new()),
        }
    }

    /// The item's finding, tracked.
    pub fn of(&self, change_id: &str) -> Option<(Refind, Vec<Element>)> {
        self.items.with(|items| items.get(change_id).cloned())
    }

    /// The item's finding as it is now.
    pub fn of_untracked(&self, change_id: &str) -> Option<Refind> {
        self.items.with_untracked(|items| items.get(change_id).map(|(refind, _)| refind.clone()))
    }
}

/// Looks for the items of the page in view again if its build is new to them; one pass at
/// a time (a pass asked for while one runs follows it).
pub fn look(ctx: Ctx, found: Found, stage: ResolvedStage) {
    let busy = found.running.try_update_value(|(running, again)| {
        if *running {
            *again = true;
        }
        std::mem::replace(running, true)
    });
    if busy != Some(false) {
        return;
    }
    leptos::task::spawn_local(async move {
        loop {
            pass(ctx, found, &stage).await;
            let again = found.running.try_update_value(|(running, again)| {
                *running = std::mem::take(again);
                *running
            });
            if again != Some(true) {
                break;
            }
        }
    });
}

async fn pass(ctx: Ctx, found: Found, stage: &ResolvedStage) {
    let Some((tab_id, Some(url))) = ctx.tab.get_untracked() else { return };
    let Some(route) = refind::route_of(&url).map(str::to_owned) else { return };
    let candidates: Vec<redline_protocol::Change> = ctx
        .store
        .visible_order()
        .iter()
        .filter_map(|id| ctx.store.row(id).map(|row| row.with_untracked(|r| r.change.clone())))
        .filter(|change| refind::is_of_page(change, &stage.stage_id, &route))
        .collect();
    if candidates.is_empty() {
        return;
    }
    // The build the page states; a page that states none is taken to serve the stage's
    // deployed one.
    let Ok(page) = ask_page(tab_id, Vec::new()).await else { return };
    let Some(sha) = page.git_sha.or_else(|| stage.git_sha.clone()) else { return };
    let fresh: Vec<_> = candidates
        .into_iter()
        .filter(|change| {
            let refound_on = found
                .items
                .with_untracked(|items| items.get(&change.change_id).map(|(r, _)| r.git_sha.clone()));
            refind::is_new_build(change, &sha, refound_on.as_deref())
                && found.tried.with_value(|tried| !tried.contains(&(change.change_id.clone(), sha.clone())))
        })
        .take(ITEMS_PER_PASS)
        .collect();
    for change in fresh {
        match refind_item(ctx, tab_id, &change.change_id, &sha).await {
            Ok(Some(finding)) => found.items.update(|items| {
                items.insert(change.change_id.clone(), finding);
            }),
            Ok(None) => found.tried.update_value(|tried| {
                tried.insert((change.change_id.clone(), sha.clone()));
            }),
            // Asked again in the next pass.
            Err(()) => {}
        }
    }
}

/// Reads the item whole (its elements, and what was found of it already), looks for its
/// elements unless it was re-found on `sha` already, and records what was found: `None`
/// when there is nothing to look for on it, `Err` when the server or the page could not
/// be asked (or the page moved on to another build).
async fn refind_item(
    ctx: Ctx,
    tab_id: i32,
    change_id: &str,
    sha: &str,
) -> Result<Option<(Refind, Vec<Element>)>, ()> {
    let client = ctx.client.get_value();
    let input = GetChangeInput {
        change_id: change_id.to_owned(),
        message_limit: Some(1),
        ..GetChangeInput::default()
    };
    let item = client.call::<GetChange>(input).await.map_err(|_| ())?;
    let elements = refind::elements_to_find(&item.change);
    if let Some(stored) = item.refind.filter(|r| r.git_sha == sha) {
        let shown = refind::where_now(&elements, &stored.elements);
        return Ok(Some((stored, shown)));
    }
    if !refind::is_new_build(&item.change, sha, None) || elements.is_empty() {
        return Ok(None);
    }
    let page = ask_page(tab_id, elements.clone()).await.map_err(|_| ())?;
    if page.git_sha.as_deref().is_some_and(|s| s != sha) {
        return Err(());
    }
    let refound = refind::refound(&item.change, &elements, &page);
    if refound.is_empty() {
        return Ok(None);
    }
    let shown = refind::where_now(&elements, &refound);
    let input = RecordRefindInput {
        change_id: item.change.change_id.clone(),
        project_id: Some(item.change.project_id.clone()),
        git_sha: sha.to_owned(),
        elements: refound.clone(),
    };
    let refind = match client.call::<RecordRefind>(input).await {
        Ok(recorded) => recorded.refind,
        // A server without `recordRefind` (Fabric) answers 404; any other failure leaves the
        // finding to this panel as well: the row is marked either way.
        Err(error) => {
            if !matches!(error, ApiError::Gone { .. }) {
                web_sys::console::warn_1(
                    &format!("Redline could not record what it re-found: {error}").into(),
                );
            }
            Refind {
                git_sha: sha.to_owned(),
                elements: refound,
                found_by: None,
                found_at: Timestamp::from_unix_millis(js_sys::Date::now() as i64),
            }
        }
    };
    Ok(Some((refind, shown)))
}

async fn ask_page(tab_id: i32, elements: Vec<Element>) -> Result<PageRefind, String> {
    crate::ui::call(&RefindOnPage { tab_id, elements }).await.map_err(|error| error.to_string())
}

/// A row's mark once its item was re-found moved or gone on the build in view: the word,
/// with every element's finding as its tooltip and, for a moved item, "Show on page"
/// outlining where its elements are now. A row without a finding (nearly all of them)
/// holds one memo and nothing else: the mark's action and views are built only once
/// there is something to mark, as rows are built a page at a time.
#[component]
pub fn RowMark(change_id: String, number: String) -> impl IntoView {
    let Some(found) = use_context::<Found>() else { return ().into_any() };
    let finding = Memo::new(move |_| found.of(&change_id));
    (move || {
        finding.get().and_then(|(refind, elements)| {
            let whereabouts = refind.whereabouts();
            (whereabouts != Whereabouts::InPlace)
                .then(|| ui_view! { <Mark refind whereabouts elements number=number.clone() /> })
        })
    })
    .into_any()
}

#[component]
fn Mark(refind: Refind, whereabouts: Whereabouts, elements: Vec<Element>, number: String) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let show = Action::new_local(move |elements: &Vec<Element>| {
        let request = ShowOnPage { tab_id: ctx.tab.get_untracked().map(|t| t.0), elements: elements.clone() };
        async move { crate::ui::call(&request).await.map(|_| ()).map_err(|error| error.to_string()) }
    });
    let said = refind.describe();
    let label = format!("Show on page: {number} where it is now");
    ui_view! {
        <div class="row-refind">
            <span class=format!("refind {}", whereabouts.as_str()) data-testid="row-refind" data-whereabouts=whereabouts.as_str() title=said.clone()>
                {whereabouts.as_str()}
                <span class="visually-hidden">{format!(": {said}")}</span>
            </span>
            {(whereabouts == Whereabouts::Moved).then(|| ui_view! {
                <button type="button" class="row-show" aria-label=label
                    on:click=move |_| { show.dispatch(elements.clone()); }
                    disabled=move || show.pending().get()>"Show on page"</button>
            })}
        </div>
        {move || show.value().get().and_then(Result::err).map(|message| ui_view! { <super::ErrorLine message /> })}
    }
}
