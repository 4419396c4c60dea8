//! What the layers below HTTP share: the store, the clock, the image store, the event
//! hub and the project quota. The write path (`queue`), the operations, sign-in and
//! webhooks take a [`Services`]; what only HTTP needs (streams, metrics, limits) is
//! `crate::http::AppState`, which holds one.

use std::path::PathBuf;
use std::sync::Arc;

use crate::clock::Clock;
use crate::store::Store;
use crate::store::blobs::{BlobStore, BlobStoreSpec, Blobs};
use crate::store::event_log::{self, EventHub};

/// The default per-project storage quota, in MiB: five hundred images of the largest
/// size (8 MiB), or thousands of typical screenshots (0.2-1 MB) with their captures.
pub const DEFAULT_PROJECT_QUOTA_MB: u64 = 4 * 1024;

/// What the write path and the operations share.
#[derive(Clone, Debug)]
pub struct Services {
    pub store: Store,
    pub clock: Clock,
    pub blobs: Arc<Blobs>,
    pub events: Arc<EventHub>,
    /// The most bytes one project may store: its images, what its items say and
    /// captured, and its threads' messages (`redline serve --project-quota-mb`); a write
    /// past it is refused with 413.
    pub project_quota_bytes: i64,
}

impl Services {
    /// The services for `store`, keeping uploaded images where its engine does by
    /// default: in the database on Postgres, in `blob_dir` on SQLite.
    pub async fn new(store: Store, clock: Clock, blob_dir: PathBuf) -> anyhow::Result<Services> {
        let images = BlobStoreSpec::open(None, &store, blob_dir).await?;
        Services::with_blob_store(store, clock, images).await
    }

    /// The services for `store`, keeping uploaded images in `images`; the event hub is
    /// woken by the store's commits (Postgres: `LISTEN`; SQLite: watching the log).
    pub async fn with_blob_store(
        store: Store,
        clock: Clock,
        images: Arc<dyn BlobStore>,
    ) -> anyhow::Result<Services> {
        let blobs = Arc::new(Blobs::open(&store, images).await?);
        let events = Arc::<EventHub>::default();
        match store.postgres_url() {
            Some(url) => event_log::spawn_pg_listener(url.to_owned(), events.clone()),
            None => event_log::spawn_store_watch(store.clone(), &events),
        }
        Ok(Services {
            store,
            clock,
            blobs,
            events,
            project_quota_bytes: (DEFAULT_PROJECT_QUOTA_MB * 1024 * 1024) as i64,
        })
    }
}
