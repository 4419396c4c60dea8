//! The outbox as the worker publishes it (`outbox::PUBLISHED_KEY` in
//! `chrome.storage.session`), as a signal: the tray and the panel subscribe instead of
//! asking the worker.

use leptos::prelude::*;

use crate::browser::chrome;
use crate::rules::outbox::{PUBLISHED_KEY, Published};

/// The outbox as last published; `None` until it has been read once (nothing published
/// yet reads as an empty outbox). Each write the worker makes is a new value.
pub fn use_published() -> ReadSignal<Option<Published>> {
    let (published, set_published) = signal(None::<Published>);
    let listener = chrome::on_session_value(PUBLISHED_KEY, move |value: Published| {
        set_published.try_set(Some(value));
    });
    let listener = StoredValue::new_local(Some(listener));
    on_cleanup(move || listener.set_value(None));
    leptos::task::spawn_local(async move {
        let stored = chrome::session_get::<Published>(PUBLISHED_KEY).await.ok().flatten();
        // A write that came while this was read is newer.
        set_published.try_update(|current| {
            if current.is_none() {
                *current = Some(stored.unwrap_or_default());
            }
        });
    });
    published
}
