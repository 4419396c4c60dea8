//! "Check on stage", the worker's part: bring the stage tab forward at the item's route
//! (the tab the panel follows, another tab of the stage, or a new one), wait for it to
//! load, re-locate and outline the elements there with "Show on page"'s code (the content
//! module's `show_elements`), centre them in view and screenshot the tab. Which tab to use
//! and where to scroll are `verify`'s decisions; the crop is the panel's.

use redline_protocol::Element;

use crate::browser::chrome::{self, ChromeError};
use crate::browser::timer;
use crate::rules::verify::{self, PageCheck, PageView, TabPlan, TabSeen};
use crate::worker_call::{CheckOnStage, Checked, WorkerError};

/// How long a page may take to load before the check gives up on it.
const LOAD_TIMEOUT_MS: f64 = 20_000.0;
/// The outlines are painted before the screenshot is taken.
const PAINT_MS: f64 = 200.0;

pub async fn check_on_stage(request: CheckOnStage) -> Result<Checked, WorkerError> {
    let CheckOnStage { tab_id: followed, stage_url, url, elements, again } = request;
    let (tab_id, window_id) = bring_forward(followed, &stage_url, &url, again)
        .await
        .map_err(|error| WorkerError::failed(format!("Could not open the stage ({error}).")))?;
    let check = look(tab_id, &elements).await.map_err(|e| e.to_string());
    timer::sleep(PAINT_MS).await;
    let screenshot = match window_id {
        Some(window_id) => super::screenshot(window_id).await.map_err(|e| e.to_string()),
        None => Err("the stage tab has no window".to_owned()),
    };
    Ok(Checked { tab_id, check, screenshot })
}

/// Outlines the elements in the tab and centres them in view.
async fn look(tab_id: i32, elements: &[Element]) -> Result<PageCheck, ChromeError> {
    let view: PageView = chrome::check_in_tab(tab_id, &elements).await?;
    let rest = match view.centring_scroll() {
        Some(to) => chrome::scroll_tab(tab_id, &to).await?,
        None => view.scroll,
    };
    Ok(view.scrolled_to(rest))
}

/// The stage tab, active and loaded at `url` (reloaded when it was there already, but
/// `again`): its id and window.
async fn bring_forward(
    followed: Option<i32>,
    stage_url: &str,
    url: &str,
    again: bool,
) -> Result<(i32, Option<i32>), ChromeError> {
    let tabs: Vec<TabSeen> = chrome::all_tabs()
        .await?
        .into_iter()
        .filter_map(|t| Some(TabSeen { id: t.id?, url: t.url.filter(|u| !u.is_empty()) }))
        .collect();
    let tab = match verify::plan_tab(&tabs, followed, stage_url, url) {
        TabPlan::Use { id, navigate: true } => chrome::activate_tab(id, Some(url)).await?,
        TabPlan::Use { id, navigate: false } => {
            let tab = chrome::activate_tab(id, None).await?;
            if !again {
                chrome::reload_tab(id).await?;
            }
            tab
        }
        TabPlan::Open => chrome::open_tab(url).await?,
    };
    let id = tab.id.ok_or_else(|| ChromeError("Chrome gave the tab no id".into()))?;
    // A navigation may still read "complete" from the page it leaves: look again after
    // a moment, until the tab says it has loaded.
    let started = timer::now_ms();
    timer::sleep(100.0).await;
    loop {
        let state = chrome::tab_state(id).await?;
        if state.status.as_deref() == Some("complete") {
            return Ok((id, state.window_id));
        }
        if timer::now_ms() - started > LOAD_TIMEOUT_MS {
            return Err(ChromeError("the page did not finish loading".into()));
        }
        timer::sleep(100.0).await;
    }
}
