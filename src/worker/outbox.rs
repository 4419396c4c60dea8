//! The worker's side of the outbox: it queues what the composer files (IndexedDB
//! first, then the reply), delivers it — `uploadShot`, then `createChange` — one run
//! at a time, and keeps a `chrome.alarms` alarm at the next attempt, so delivery goes
//! on after Chrome stops the worker or the browser restarts. After each change it
//! publishes the outbox to `chrome.storage.session` (`outbox::PUBLISHED_KEY`), which the
//! tray and the panel subscribe to. The policy is `crate::rules::outbox`'s; the store is
//! `crate::browser::idb`.

use std::cell::Cell;
use std::thread::LocalKey;

use redline_protocol::rpc::{CreateChange, UploadShot};
use wasm_bindgen::prelude::*;

use crate::browser::api::Client;
use crate::browser::chrome::{self, Alarm};
use crate::browser::idb::{IdbError, OutboxStore};
use crate::browser::sign_in_store;
use crate::browser::timer;
use crate::rules::outbox::{self, Draft, Entry, Failure, Published, Step};
use crate::rules::settings::{self, Settings};
use crate::worker_call::{Queued, WorkerError};

/// The one alarm, set to the earliest next attempt.
const ALARM: &str = "redline-outbox";

/// How often a [`deliver_now`] checks whether a run already going has finished.
const RUN_POLL_MS: f64 = 50.0;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Run {
    Idle,
    Running,
    /// Running, and asked for again meanwhile: go round once more when done, to pick
    /// up what was filed or made due during the run.
    Again,
}

thread_local! {
    /// One delivery run at a time, so an item is never uploaded twice at once.
    static RUN: Cell<Run> = const { Cell::new(Run::Idle) };
    /// One write of the published outbox at a time, so an older reading of the store is
    /// never written over a newer one.
    static PUBLISH: Cell<Run> = const { Cell::new(Run::Idle) };
}

/// Runs `pass` unless a run of it is going (`run` says), in which case that run goes
/// round once more when done: so the last pass starts after the last call.
async fn once_more<F: Future<Output = ()>>(run: &'static LocalKey<Cell<Run>>, pass: impl Fn() -> F) {
    if run.get() != Run::Idle {
        run.set(Run::Again);
        return;
    }
    run.set(Run::Running);
    loop {
        pass().await;
        if run.get() == Run::Again {
            run.set(Run::Running);
        } else {
            run.set(Run::Idle);
            return;
        }
    }
}

/// Publishes the outbox after a change ([`Published`]).
async fn publish() {
    once_more(&PUBLISH, || async {
        if let Err(error) = write_published().await {
            web_sys::console::error_1(&format!("Redline outbox: {error}").into());
        }
    })
    .await;
}

async fn write_published() -> Result<(), String> {
    let store = OutboxStore::open().await.map_err(|e| e.to_string())?;
    let items = outbox::items(&store.all().await.map_err(|e| e.to_string())?);
    let published = Published { items, published_at: timer::now_ms() };
    chrome::session_set(outbox::PUBLISHED_KEY, &published).await.map_err(|e| e.to_string())
}

/// `worker_call::File`: stores and publishes the draft, then answers. Delivery starts
/// as soon as the draft is stored, beside the publishing rather than after it: the
/// draft is in the store whatever the delivery does, and each publishing reads the
/// store afresh, the last one after the last change ([`publish`]).
pub async fn file(draft: Draft) -> Result<Queued, WorkerError> {
    let change_id = queue(draft).await.map_err(WorkerError::failed)?;
    wasm_bindgen_futures::spawn_local(deliver());
    publish().await;
    Ok(Queued { change_id })
}

async fn queue(draft: Draft) -> Result<String, String> {
    let draft = draft.normalised().map_err(|e| e.to_string())?;
    let change_id = draft.change_id.clone();
    let store = OutboxStore::open().await.map_err(|e| e.to_string())?;
    match store.get(&change_id).await.map_err(|e| e.to_string())? {
        // The composer sent it again (e.g. it did not see the first reply).
        Some(queued) if queued.draft == draft => {}
        Some(_) => return Err(format!("{change_id} is already queued with other content.")),
        None => store.put(&Entry::new(draft, timer::now_ms())).await.map_err(|e| e.to_string())?,
    }
    Ok(change_id)
}

/// Tries everything now, failing entries included, and returns once the attempt is over
/// (what is left is published).
async fn deliver_now() -> Result<(), IdbError> {
    make_all_due().await?;
    deliver().await;
    // A run already going was asked to go round again: wait for it.
    while RUN.get() != Run::Idle {
        timer::sleep(RUN_POLL_MS).await;
    }
    Ok(())
}

async fn make_all_due() -> Result<(), IdbError> {
    let store = OutboxStore::open().await?;
    let now = timer::now_ms();
    for mut entry in store.all().await? {
        entry.make_due(now);
        store.put(&entry).await?;
    }
    Ok(())
}

/// Worker start and `chrome.runtime.onStartup`: delivers what is due (the alarm may
/// not have survived a restart) and sets the alarm again.
#[wasm_bindgen]
pub async fn deliver_outbox() {
    deliver().await;
}

/// `chrome.alarms.onAlarm`.
#[wasm_bindgen]
pub async fn on_alarm(alarm: JsValue) -> Result<(), JsValue> {
    let alarm: Alarm = serde_wasm_bindgen::from_value(alarm)?;
    if alarm.name == ALARM {
        deliver().await;
    }
    Ok(())
}

/// `chrome.storage.onChanged`: a new sign-in (`settings::SIGNED_IN_KEY`) may fix what
/// failed, so try everything.
#[wasm_bindgen]
pub async fn on_storage_changed(changes: JsValue, area: String) -> Result<(), JsValue> {
    if area == "local" && js_sys::Reflect::has(&changes, &JsValue::from_str(settings::SIGNED_IN_KEY))? {
        deliver_now().await.map_err(|e| JsValue::from_str(&e.to_string()))?;
    }
    Ok(())
}

/// Runs delivery unless a run is going, in which case that run goes round again.
async fn deliver() {
    once_more(&RUN, || async {
        if let Err(error) = run_once().await {
            web_sys::console::error_1(&format!("Redline outbox: {error}").into());
            // The run may have stopped before setting the alarm: come back anyway.
            let _ = chrome::set_alarm(ALARM, timer::now_ms() + outbox::MAX_RETRY_MS).await;
        }
    })
    .await;
}

/// One pass: every due entry, oldest first; then the published outbox and the alarm for
/// the next.
async fn run_once() -> Result<(), String> {
    let store = OutboxStore::open().await.map_err(|e| e.to_string())?;
    let due = outbox::due(store.all().await.map_err(|e| e.to_string())?, timer::now_ms());
    if !due.is_empty() {
        let sent = match configured_settings().await? {
            Some(settings) => send_all(&store, &Client::new(&settings), due).await,
            None => fail_all(&store, due, &Failure::not_set_up()).await,
        };
        sent.map_err(|e| e.to_string())?;
    }
    publish().await;
    let entries = store.all().await.map_err(|e| e.to_string())?;
    let scheduled = match outbox::next_wake(&entries) {
        Some(when) => chrome::set_alarm(ALARM, when).await,
        None => chrome::clear_alarm(ALARM).await,
    };
    scheduled.map_err(|e| e.to_string())
}

async fn configured_settings() -> Result<Option<Settings>, String> {
    let settings = sign_in_store::load().await.map_err(|e| e.to_string())?;
    Ok(Some(settings).filter(Settings::is_complete))
}

/// Sends the entries in order. A failure that is about the server (unreachable,
/// failing, token refused) is recorded on the rest too without trying them: they would
/// fail the same way, and skipping them keeps the filing order.
async fn send_all(store: &OutboxStore, client: &Client, due: Vec<Entry>) -> Result<(), IdbError> {
    let mut due = due.into_iter();
    while let Some(mut entry) = due.next() {
        match send(store, client, &mut entry).await? {
            Ok(()) => {
                store.delete(entry.change_id()).await?;
                // The tray reads the item from the server once it left the outbox.
                publish().await;
            }
            Err(failure) => {
                fail(store, entry, &failure).await?;
                if failure.is_server_wide() {
                    return fail_all(store, due.collect(), &failure).await;
                }
            }
        }
    }
    Ok(())
}

/// Delivers one entry: `Ok(Ok(()))` once the server has filed it, `Ok(Err(_))` with
/// what a failed call means, `Err(_)` when the store failed.
async fn send(
    store: &OutboxStore,
    client: &Client,
    entry: &mut Entry,
) -> Result<Result<(), Failure>, IdbError> {
    if let Some(upload) = entry.upload_input() {
        match client.call_parsed_by_browser::<UploadShot>(upload).await {
            Ok(shot) => {
                entry.uploaded(shot.screenshot_key);
                // Stored before filing: a retry must send the same key, or the server
                // would see another payload for this `changeId`.
                store.put(entry).await?;
            }
            Err(error) => return Ok(Err(Failure::of(Step::UploadShot, &error))),
        }
    }
    let result = client.call_parsed_by_browser::<CreateChange>(entry.create_input()).await;
    Ok(outbox::filed(result).map_err(|error| Failure::of(Step::CreateChange, &error)))
}

async fn fail(store: &OutboxStore, mut entry: Entry, failure: &Failure) -> Result<(), IdbError> {
    entry.failed(failure, timer::now_ms(), js_sys::Math::random());
    store.put(&entry).await
}

async fn fail_all(store: &OutboxStore, entries: Vec<Entry>, failure: &Failure) -> Result<(), IdbError> {
    for entry in entries {
        fail(store, entry, failure).await?;
    }
    Ok(())
}
