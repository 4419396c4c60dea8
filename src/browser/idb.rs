//! The outbox's store: IndexedDB database `redline`, object store `outbox`, one
//! [`Entry`] per item keyed by its `changeId`. A thin adapter over web-sys: each
//! request or transaction becomes a future. The worker writes; the extension's pages
//! share the origin, so the panel and tray can count what waits ([`pending_count`]).

use js_sys::{Array, Promise, Reflect};
use serde::Serialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{
    DomException, IdbDatabase, IdbFactory, IdbObjectStore, IdbObjectStoreParameters, IdbOpenDbRequest,
    IdbRequest, IdbTransaction,
};

use crate::rules::outbox::Entry;

pub const DATABASE: &str = "redline";
pub const OUTBOX_STORE: &str = "outbox";
const VERSION: u32 = 1;
/// Entries are keyed by their draft's `changeId`.
const KEY_PATH: &str = "draft.changeId";

#[wasm_bindgen]
extern "C" {
    /// An `IDBDatabase`, for the one call web-sys has only behind its unstable-API flag:
    /// `transaction(name, mode, {durability})`.
    #[wasm_bindgen(js_name = IDBDatabase)]
    type DatabaseWithOptions;

    #[wasm_bindgen(method, catch)]
    fn transaction(
        this: &DatabaseWithOptions,
        store: &str,
        mode: &str,
        options: &JsValue,
    ) -> Result<IdbTransaction, JsValue>;
}

/// What IndexedDB failed with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdbError(pub String);

impl std::fmt::Display for IdbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "IndexedDB: {}", self.0)
    }
}

impl From<JsValue> for IdbError {
    fn from(value: JsValue) -> Self {
        IdbError(crate::browser::chrome::js_error_message(&value))
    }
}

impl From<serde_wasm_bindgen::Error> for IdbError {
    fn from(value: serde_wasm_bindgen::Error) -> Self {
        IdbError(value.to_string())
    }
}

fn failure(error: Result<Option<DomException>, JsValue>) -> IdbError {
    match error {
        Ok(Some(exception)) => IdbError(format!("{}: {}", exception.name(), exception.message())),
        Ok(None) => IdbError("the transaction was aborted".to_owned()),
        Err(value) => value.into(),
    }
}

/// Resolves with the request's result once it succeeds.
pub(crate) async fn request_done(request: &IdbRequest) -> Result<JsValue, IdbError> {
    // `resolve` and `reject` are the handlers themselves: no Rust closure to keep alive.
    let settled = Promise::new(&mut |resolve, reject| {
        request.set_onsuccess(Some(&resolve));
        request.set_onerror(Some(&reject));
    });
    match JsFuture::from(settled).await {
        Ok(_) => Ok(request.result()?),
        Err(_) => Err(failure(request.error())),
    }
}

/// Resolves once the transaction has committed.
pub(crate) async fn committed(transaction: &IdbTransaction) -> Result<(), IdbError> {
    let settled = Promise::new(&mut |resolve, reject| {
        transaction.set_oncomplete(Some(&resolve));
        transaction.set_onerror(Some(&reject));
        transaction.set_onabort(Some(&reject));
    });
    match JsFuture::from(settled).await {
        Ok(_) => Ok(()),
        Err(_) => Err(failure(Ok(transaction.error()))),
    }
}

/// `indexedDB`, in a window and in the service worker alike.
pub(crate) fn factory() -> Result<IdbFactory, IdbError> {
    let factory = Reflect::get(&js_sys::global(), &JsValue::from_str("indexedDB"))?;
    factory.dyn_into().map_err(|_| IdbError("indexedDB is not available here".to_owned()))
}

/// Opens database `name` at `version`, running `upgrade` on it when it is new or older.
pub(crate) async fn open(
    name: &str,
    version: u32,
    upgrade: impl FnOnce(&IdbDatabase) -> Result<(), JsValue> + 'static,
) -> Result<IdbDatabase, IdbError> {
    let request: IdbOpenDbRequest = factory()?.open_with_u32(name, version)?;
    let upgrading = request.clone();
    let on_upgrade = Closure::once(move || {
        if let Err(error) = upgrading.result().and_then(|db| upgrade(db.unchecked_ref())) {
            web_sys::console::error_1(&IdbError::from(error).to_string().into());
        }
    });
    request.set_onupgradeneeded(Some(on_upgrade.as_ref().unchecked_ref()));
    // `upgradeneeded` comes before `success`, so `on_upgrade` lives long enough.
    let db = request_done(&request).await?;
    request.set_onupgradeneeded(None);
    Ok(db.dyn_into()?)
}

/// The value under `key` in `store`, if there is one.
pub(crate) async fn get<T: serde::de::DeserializeOwned>(
    db: &IdbDatabase,
    store: &str,
    key: &str,
) -> Result<Option<T>, IdbError> {
    let store = db.transaction_with_str(store)?.object_store(store)?;
    let value = request_done(&store.get(&JsValue::from_str(key))?).await?;
    if value.is_undefined() {
        return Ok(None);
    }
    Ok(Some(serde_wasm_bindgen::from_value(value)?))
}

/// Runs `request` on `store` and resolves once it is on disk: `strict` durability,
/// because what the person typed or signed in with is only safe from there.
pub(crate) async fn write_durably(
    db: &IdbDatabase,
    store: &str,
    request: impl FnOnce(&IdbObjectStore) -> Result<IdbRequest, JsValue>,
) -> Result<(), IdbError> {
    let options = js_sys::Object::new();
    Reflect::set(&options, &JsValue::from_str("durability"), &JsValue::from_str("strict"))?;
    let db: &DatabaseWithOptions = db.unchecked_ref();
    let transaction = db.transaction(store, "readwrite", &options)?;
    request(&transaction.object_store(store)?)?;
    committed(&transaction).await
}

/// An open connection to the outbox.
pub struct OutboxStore {
    db: IdbDatabase,
}

impl OutboxStore {
    /// Opens the database, creating the store on first use.
    pub async fn open() -> Result<OutboxStore, IdbError> {
        Ok(OutboxStore { db: open(DATABASE, VERSION, create_store).await? })
    }

    /// Writes an entry (new or updated) and resolves once it is on disk: `strict`
    /// durability, because the filer's text is only safe from there.
    pub async fn put(&self, entry: &Entry) -> Result<(), IdbError> {
        let value = entry.serialize(&serde_wasm_bindgen::Serializer::json_compatible())?;
        self.write(|store| store.put(&value)).await
    }

    /// Removes an entry the server has acknowledged.
    pub async fn delete(&self, change_id: &str) -> Result<(), IdbError> {
        self.write(|store| store.delete(&JsValue::from_str(change_id))).await
    }

    pub async fn get(&self, change_id: &str) -> Result<Option<Entry>, IdbError> {
        get(&self.db, OUTBOX_STORE, change_id).await
    }

    /// Every entry. One that cannot be read (written by another version) is left in
    /// the store, reported on the console, and still counted by [`Self::count`].
    pub async fn all(&self) -> Result<Vec<Entry>, IdbError> {
        let values: Array = request_done(&self.read()?.get_all()?).await?.dyn_into()?;
        let mut entries = Vec::with_capacity(values.length() as usize);
        for value in values.iter() {
            match serde_wasm_bindgen::from_value(value) {
                Ok(entry) => entries.push(entry),
                Err(error) => web_sys::console::error_1(&format!("outbox entry unreadable: {error}").into()),
            }
        }
        Ok(entries)
    }

    pub async fn count(&self) -> Result<u32, IdbError> {
        let count = request_done(&self.read()?.count()?).await?;
        Ok(count.as_f64().unwrap_or_default() as u32)
    }

    fn read(&self) -> Result<IdbObjectStore, IdbError> {
        Ok(self.db.transaction_with_str(OUTBOX_STORE)?.object_store(OUTBOX_STORE)?)
    }

    async fn write(
        &self,
        request: impl FnOnce(&IdbObjectStore) -> Result<IdbRequest, JsValue>,
    ) -> Result<(), IdbError> {
        write_durably(&self.db, OUTBOX_STORE, request).await
    }
}

impl Drop for OutboxStore {
    /// Closing waits for running transactions, and lets a later version upgrade.
    fn drop(&mut self) {
        self.db.close();
    }
}

fn create_store(db: &IdbDatabase) -> Result<(), JsValue> {
    if !db.object_store_names().contains(OUTBOX_STORE) {
        let parameters = IdbObjectStoreParameters::new();
        parameters.set_key_path(&JsValue::from_str(KEY_PATH));
        db.create_object_store_with_optional_parameters(OUTBOX_STORE, &parameters)?;
    }
    Ok(())
}

/// How many items wait to be sent ("waiting to send (n)").
pub async fn pending_count() -> Result<u32, IdbError> {
    OutboxStore::open().await?.count().await
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    use crate::rules::outbox::Draft;
    use redline_protocol::CreateChangeInput;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    #[wasm_bindgen_test]
    async fn an_entry_is_stored_updated_counted_and_removed() {
        let change_id = "5f0c1a2b-3c4d-4e5f-8a9b-0c1d2e3f4a5b";
        let draft = Draft {
            change_id: change_id.to_owned(),
            project_id: "p".to_owned(),
            input: CreateChangeInput {
                stage_id: "s".into(),
                title: "Total is wrong".into(),
                ..Default::default()
            },
            screenshot: None,
        };
        let store = OutboxStore::open().await.unwrap();
        let before = pending_count().await.unwrap();

        let mut entry = Entry::new(draft.normalised().unwrap(), 1.0);
        store.put(&entry).await.unwrap();
        assert_eq!(store.get(change_id).await.unwrap().as_ref(), Some(&entry));
        assert_eq!(pending_count().await.unwrap(), before + 1);

        entry.uploaded("k.png".into());
        store.put(&entry).await.unwrap();
        assert_eq!(pending_count().await.unwrap(), before + 1, "a put of the same changeId replaces");
        assert!(store.all().await.unwrap().contains(&entry));

        store.delete(change_id).await.unwrap();
        assert_eq!(store.get(change_id).await.unwrap(), None);
        assert_eq!(pending_count().await.unwrap(), before);
    }
}
