//! The Stats view: the loop's numbers over the items filed lately (`getStats`): the
//! project's totals, then one table per agent and per filer. The words and numbers are
//! `stats.rs`'s; names from the server are text. A server without `getStats` (Fabric, or
//! ours before it) answers 404, and the view says stats are not available.

use leptos::prelude::*;
use redline_protocol::rpc::{GetStats, GetStatsInput, GetStatsOutput};
use redline_protocol::{LoopStats, Session, Timestamp};

use super::ErrorLine;
use crate::browser::api::Client;
use crate::rules::api_error::ApiError;
use crate::rules::settings::Settings;
use crate::rules::stats::{self, Row};

#[component]
pub fn StatsView(settings: Settings, session: Session) -> impl IntoView {
    let client = StoredValue::new(Client::new(&settings));
    let project_id = session.projects.first().map(|p| p.project_id.clone());
    let read = LocalResource::new(move || {
        let client = client.get_value();
        let project_id = project_id.clone();
        async move {
            let project_id = project_id.ok_or(None)?;
            client.call::<GetStats>(GetStatsInput { project_id, since_days: None }).await.map_err(Some)
        }
    });
    ui_view! {
        <section class="stats" aria-labelledby="stats-heading">
            <h2 id="stats-heading">"Stats"</h2>
            {move || match read.get() {
                None => ui_view! { <p class="hint" role="status">"Reading the numbers…"</p> }.into_any(),
                Some(Ok(output)) => ui_view! { <Numbers output /> }.into_any(),
                Some(Err(None)) => ui_view! { <p class="hint">"This token sees no project."</p> }.into_any(),
                Some(Err(Some(ApiError::Gone { .. }))) => ui_view! {
                    <p class="hint" data-testid="stats-unavailable">"Stats are not available from this server."</p>
                }.into_any(),
                Some(Err(Some(error))) => ui_view! {
                    <ErrorLine message=format!("Could not read the stats: {error}") retry=Callback::new(move |_| read.refetch()) />
                }.into_any(),
            }}
        </section>
    }
}

#[component]
fn Numbers(output: GetStatsOutput) -> impl IntoView {
    let now = Timestamp::from_unix_millis(js_sys::Date::now() as i64);
    let total = Row::of(&output.total);
    ui_view! {
        <p class="hint" data-testid="stats-since">{stats::since_line(output.since, now)}</p>
        <dl class="totals" data-testid="stats-totals">
            <dt>"Filed"</dt><dd>{total.filed}</dd>
            <dt>"Done"</dt><dd>{total.done}</dd>
            <dt>"Dismissed"</dt><dd>{total.dismissed}</dd>
            <dt>"Verified"</dt><dd>{total.verified}</dd>
            <dt>"Time to done"</dt><dd>{stats::median_p90(&total.to_done, false)}</dd>
            <dt>"Time to verified"</dt><dd>{stats::median_p90(&total.to_verified, false)}</dd>
            <dt>"Questions per item"</dt><dd>{total.questions_per_item}</dd>
            <dt>"Still wrong after a check"</dt><dd>{total.still_wrong_rate}</dd>
        </dl>
        <Table caption="Per agent" who="Agent" rows=output.agents empty="No agent has completed an item in this period." />
        <Table caption="Per filer" who="Filer" rows=output.filers empty="Nobody has filed an item in this period." />
    }
}

/// One row per agent or filer. Wider than the panel: it scrolls sideways on its own,
/// inside a region the keyboard can reach.
#[component]
fn Table(
    caption: &'static str,
    who: &'static str,
    rows: Vec<LoopStats>,
    empty: &'static str,
) -> impl IntoView {
    if rows.is_empty() {
        return ui_view! { <h3>{caption}</h3><p class="hint">{empty}</p> }.into_any();
    }
    ui_view! {
        <div class="table-scroll" role="region" aria-label=caption tabindex="0">
            <table class="stats-table">
                <caption>{caption}</caption>
                <thead>
                    <tr>
                        <th scope="col">{who}</th>
                        <th scope="col">"Filed"</th>
                        <th scope="col">"Done"</th>
                        <th scope="col">"Dismissed"</th>
                        <th scope="col">"Verified"</th>
                        <th scope="col">"To done, median / p90"</th>
                        <th scope="col">"To verified, median / p90"</th>
                        <th scope="col">"Questions per item"</th>
                        <th scope="col">"Still wrong"</th>
                    </tr>
                </thead>
                <tbody>
                    {rows.iter().map(Row::of).map(|row| ui_view! {
                        <tr>
                            <th scope="row">{row.name}</th>
                            <td>{row.filed}</td>
                            <td>{row.done}</td>
                            <td>{row.dismissed}</td>
                            <td>{row.verified}</td>
                            <td>{stats::median_p90(&row.to_done, true)}</td>
                            <td>{stats::median_p90(&row.to_verified, true)}</td>
                            <td>{row.questions_per_item}</td>
                            <td>{row.still_wrong_rate}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}
