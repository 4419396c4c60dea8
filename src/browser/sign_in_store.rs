//! The sign-in at rest (API URL and token): IndexedDB database `redline-sign-in` of the
//! extension's own origin, one [`Settings`] under [`KEY`]. The worker and the
//! extension's pages (panel, overlay iframe) share that origin; content scripts run as
//! the page's origin and cannot open it, in Chrome and Firefox alike, where they can
//! read `storage.local`. Unlike `storage.session` it outlives a restart.
//!
//! Settings an earlier version left in `storage.local` are moved here on the first
//! [`load`] (the worker calls it at each start) and removed there
//! (`settings::adopt_legacy`). Each [`save`] also writes the non-secret
//! `settings::SignInSaved`, which is how the worker hears of a new sign-in.

use wasm_bindgen::prelude::*;
use web_sys::IdbDatabase;

use crate::browser::chrome::{self, ChromeError};
use crate::browser::idb::{self, IdbError};
use crate::rules::settings::{self, Settings, SignInSaved};

const DATABASE: &str = "redline-sign-in";
const STORE: &str = "sign-in";
const VERSION: u32 = 1;
const KEY: &str = "settings";

/// Why the sign-in could not be read or kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignInStoreError(pub String);

impl std::fmt::Display for SignInStoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the saved sign-in: {}", self.0)
    }
}

impl From<IdbError> for SignInStoreError {
    fn from(error: IdbError) -> Self {
        SignInStoreError(error.to_string())
    }
}

impl From<ChromeError> for SignInStoreError {
    fn from(error: ChromeError) -> Self {
        SignInStoreError(error.0)
    }
}

/// The saved sign-in, or the default (no token) when there is none.
pub async fn load() -> Result<Settings, SignInStoreError> {
    let db = open().await?;
    let stored = read(&db).await?;
    let legacy = chrome::storage_get::<Settings>(settings::LEGACY_STORAGE_KEY).await?;
    if legacy.is_none() {
        return Ok(stored.unwrap_or_default());
    }
    let adopted = settings::adopt_legacy(stored.as_ref(), legacy);
    if let Some(adopted) = &adopted {
        write(&db, adopted).await?;
    }
    // Only once the token is safe here is it removed there.
    chrome::storage_remove(settings::LEGACY_STORAGE_KEY).await?;
    Ok(adopted.or(stored).unwrap_or_default())
}

/// Keeps `settings` (on disk before this resolves) and tells the worker a sign-in was
/// saved.
pub async fn save(settings: &Settings) -> Result<(), SignInStoreError> {
    write(&open().await?, settings).await?;
    let saved = SignInSaved { api_url: settings.api_url.clone(), saved_at_ms: js_sys::Date::now() };
    chrome::storage_set(settings::SIGNED_IN_KEY, &saved).await?;
    Ok(())
}

/// An open connection, closed when dropped (closing lets a later version upgrade).
struct Connection(IdbDatabase);

impl Drop for Connection {
    fn drop(&mut self) {
        self.0.close();
    }
}

async fn open() -> Result<Connection, SignInStoreError> {
    let db = idb::open(DATABASE, VERSION, |db| db.create_object_store(STORE).map(drop)).await?;
    Ok(Connection(db))
}

async fn read(db: &Connection) -> Result<Option<Settings>, SignInStoreError> {
    Ok(idb::get(&db.0, STORE, KEY).await?)
}

/// Writes with `strict` durability: a sign-in reported saved is on disk.
async fn write(db: &Connection, settings: &Settings) -> Result<(), SignInStoreError> {
    let value = serde::Serialize::serialize(settings, &serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| SignInStoreError(e.to_string()))?;
    Ok(idb::write_durably(&db.0, STORE, |store| store.put_with_key(&value, &JsValue::from_str(KEY))).await?)
}
