//! The panel's live link to the queue: `GET /events/changes:{projectId}` read with
//! `fetch` (an `EventSource` cannot send the bearer token), parsed by `redline_protocol::sse`,
//! resumed with `Last-Event-ID`, reconnected with backoff, kept out of the HTTP cache
//! (`cache: "no-store"`); while the stream is down the panel polls instead. Every event
//! is only a hint: to read again the row it names, or the list's first pages
//! (`pages::Hints`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::browser::timer;
use crate::rules::pages::Hints;
use crate::rules::queue::{POLL_AFTER_FAILURES, POLL_INTERVAL_MS, reconnect_delay_ms};
use crate::rules::settings::Settings;
use redline_protocol::sse::SseParser;

/// Where the link stands, for the panel's status line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkState {
    Connecting,
    Live,
    /// The stream failed `failures` times in a row; the list is polled meanwhile.
    Polling {
        failures: u32,
        reason: String,
    },
}

impl LinkState {
    pub fn label(&self) -> String {
        match self {
            LinkState::Connecting => "connecting…".to_owned(),
            LinkState::Live => "live".to_owned(),
            LinkState::Polling { reason, .. } => {
                format!("checking every {} s ({reason})", POLL_INTERVAL_MS / 1000.0)
            }
        }
    }
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = fetch)]
    fn global_fetch(request: &web_sys::Request) -> js_sys::Promise;
}

/// A running link; dropping it (or [`Link::stop`]) ends the stream and the polling.
pub struct Link {
    alive: Rc<Cell<bool>>,
    abort: Rc<RefCell<Option<JsValue>>>,
}

impl Link {
    pub fn stop(&self) {
        self.alive.set(false);
        if let Some(controller) = self.abort.borrow_mut().take() {
            abort(&controller);
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Starts following `project_id`'s events: `on_event` is called with what each chunk of
/// the stream's events asks for (and to re-read once the stream opens, to catch what
/// happened while it was down, and on every poll); `on_state` when the link changes.
pub fn start(
    settings: Settings,
    project_id: String,
    on_event: impl Fn(Hints) + 'static,
    on_state: impl Fn(LinkState) + 'static,
) -> Link {
    let alive = Rc::new(Cell::new(true));
    let abort_slot: Rc<RefCell<Option<JsValue>>> = Rc::new(RefCell::new(None));
    let on_event = Rc::new(on_event);
    let on_state = Rc::new(on_state);
    let failures = Rc::new(Cell::new(0u32));

    // Polling, while the stream is failing.
    {
        let (alive, failures, on_event) = (alive.clone(), failures.clone(), on_event.clone());
        wasm_bindgen_futures::spawn_local(async move {
            while alive.get() {
                timer::sleep(POLL_INTERVAL_MS).await;
                if alive.get() && failures.get() >= POLL_AFTER_FAILURES {
                    on_event(Hints::reread());
                }
            }
        });
    }

    {
        let (alive, abort_slot) = (alive.clone(), abort_slot.clone());
        wasm_bindgen_futures::spawn_local(async move {
            let mut last_event_id: Option<String> = None;
            while alive.get() {
                on_state(LinkState::Connecting);
                let controller = new_abort_controller();
                *abort_slot.borrow_mut() = Some(controller.clone());
                let result = stream(
                    &settings,
                    &project_id,
                    &controller,
                    &mut last_event_id,
                    &alive,
                    &|| {
                        failures.set(0);
                        on_state(LinkState::Live);
                    },
                    &*on_event,
                )
                .await;
                if !alive.get() {
                    return;
                }
                let reason = match result {
                    Ok(()) => "the server closed the stream".to_owned(),
                    Err(reason) => reason,
                };
                let failed = failures.get() + 1;
                failures.set(failed);
                if failed >= POLL_AFTER_FAILURES {
                    on_state(LinkState::Polling { failures: failed, reason });
                }
                timer::sleep(reconnect_delay_ms(failed - 1, js_sys::Math::random())).await;
            }
        });
    }
    Link { alive, abort: abort_slot }
}

/// One connection: resolves when the stream ends or fails.
async fn stream(
    settings: &Settings,
    project_id: &str,
    controller: &JsValue,
    last_event_id: &mut Option<String>,
    alive: &Cell<bool>,
    on_open: &dyn Fn(),
    on_event: &dyn Fn(Hints),
) -> Result<(), String> {
    let url = format!(
        "{}/events/changes:{}",
        settings.api_url.trim_end_matches('/'),
        js_sys::encode_uri_component(project_id)
    );
    let response =
        open(&url, &settings.token, last_event_id.as_deref(), controller).await.map_err(|e| message(&e))?;
    if !response.ok() {
        return Err(format!("the server answered {}", response.status()));
    }
    on_open();
    // Whatever happened while we were away.
    on_event(Hints::reread());
    let body = Reflect::get(&response, &"body".into()).ok().filter(|b| !b.is_null() && !b.is_undefined());
    let body = body.ok_or("the stream has no body")?;
    let reader = Reflect::get(&body, &"getReader".into())
        .and_then(|f| f.dyn_into::<js_sys::Function>())
        .and_then(|f| f.call0(&body))
        .map_err(|e| message(&e))?;
    let read = Reflect::get(&reader, &"read".into())
        .and_then(|f| f.dyn_into::<js_sys::Function>())
        .map_err(|e| message(&e))?;
    let mut parser = SseParser::resuming(last_event_id.clone());
    while alive.get() {
        let promise: js_sys::Promise =
            read.call0(&reader).map_err(|e| message(&e))?.dyn_into().map_err(|e| message(&e))?;
        let chunk = JsFuture::from(promise).await.map_err(|e| message(&e))?;
        if Reflect::get(&chunk, &"done".into()).ok().and_then(|d| d.as_bool()).unwrap_or(true) {
            return Ok(());
        }
        let bytes = Reflect::get(&chunk, &"value".into()).map_err(|e| message(&e))?;
        let events = parser.feed(&Uint8Array::new(&bytes).to_vec());
        *last_event_id = parser.last_event_id().map(str::to_owned);
        let hints = Hints::of(&events);
        if !hints.is_empty() {
            on_event(hints);
        }
    }
    Ok(())
}

async fn open(
    url: &str,
    token: &str,
    last_event_id: Option<&str>,
    controller: &JsValue,
) -> Result<web_sys::Response, JsValue> {
    let init = web_sys::RequestInit::new();
    init.set_method("GET");
    init.set_mode(web_sys::RequestMode::Cors);
    // Past the HTTP cache: Firefox writes a stream into a cache entry while it lasts, and
    // makes a second request for the same URL (a sidebar beside a panel tab) wait for
    // that entry, about 20 s, before it goes out.
    Reflect::set(&init, &"cache".into(), &"no-store".into())?;
    let headers = web_sys::Headers::new()?;
    headers.set("Accept", "text/event-stream")?;
    headers.set("Authorization", &format!("Bearer {token}"))?;
    if let Some(id) = last_event_id {
        headers.set("Last-Event-ID", id)?;
    }
    init.set_headers(&headers);
    Reflect::set(&init, &"signal".into(), &Reflect::get(controller, &"signal".into())?)?;
    let request = web_sys::Request::new_with_str_and_init(url, &init)?;
    JsFuture::from(global_fetch(&request)).await?.dyn_into()
}

fn new_abort_controller() -> JsValue {
    let class = Reflect::get(&js_sys::global(), &"AbortController".into()).unwrap_or(JsValue::UNDEFINED);
    class
        .dyn_ref::<js_sys::Function>()
        .and_then(|c| Reflect::construct(c, &js_sys::Array::new()).ok())
        .unwrap_or(JsValue::UNDEFINED)
}

fn abort(controller: &JsValue) {
    if let Ok(f) = Reflect::get(controller, &"abort".into()).and_then(|f| f.dyn_into::<js_sys::Function>()) {
        let _ = f.call0(controller);
    }
}

fn message(value: &JsValue) -> String {
    Reflect::get(value, &"message".into())
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| value.as_string())
        .unwrap_or_else(|| "network error".to_owned())
}
