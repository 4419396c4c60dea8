//! What the page gave at filing (the capture and console errors), stored apart from
//! the item (JSON text, see 0004_change_captures.sql), and the recent ones kept in
//! memory. It never changes, so it may be read after the write that returned an item
//! has committed, and a copy kept in any process is never stale.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;

use serde_json::value::RawValue;
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};

use crate::filter::{Bind, Filter, placeholders};

/// The most JSON text [`CapturedCache`] keeps: about 4,000 filings with a 200-point
/// stroke and 20 elements.
pub const CAPTURED_CACHE_BYTES: usize = 32 << 20;

/// A capture as stored: JSON text, checked to be JSON (a skim, not a parse into a
/// `Capture`) once, when it is read or made, so a damaged row fails its read instead of
/// an answer sending broken JSON.
pub type StoredCapture = Box<RawValue>;

/// What one item captured, as stored.
#[derive(Clone, Debug, Default)]
pub struct Captured {
    pub capture: Option<StoredCapture>,
    /// JSON text of a list of strings.
    pub console_errors: Option<String>,
}

impl Captured {
    /// Read from a row selected with [`crate::rows::CHANGE_COLUMNS`].
    pub fn from_row(row: &AnyRow) -> Result<Captured, sqlx::Error> {
        let capture: Option<String> = row.try_get("capture")?;
        Ok(Captured {
            capture: capture
                .map(RawValue::from_string)
                .transpose()
                .map_err(|e| sqlx::Error::Decode(e.into()))?,
            console_errors: row.try_get("console_errors")?,
        })
    }

    fn bytes(&self) -> usize {
        self.capture.as_ref().map_or(0, |c| c.get().len())
            + self.console_errors.as_ref().map_or(0, String::len)
    }
}

impl PartialEq for Captured {
    fn eq(&self, other: &Self) -> bool {
        self.capture.as_ref().map(|c| c.get()) == other.capture.as_ref().map(|c| c.get())
            && self.console_errors == other.console_errors
    }
}

/// What recent items captured, by `changeId`, up to a budget of bytes; the oldest kept
/// go first. Filings put theirs in, so the writes that answer with items soon after
/// (claims above all: an agent claims what was filed a minute ago) need no read
/// between their commit and their answers.
#[derive(Debug)]
pub struct CapturedCache {
    budget: usize,
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    by_change: HashMap<String, Captured>,
    /// Oldest first.
    order: VecDeque<String>,
    bytes: usize,
}

impl Default for CapturedCache {
    fn default() -> Self {
        CapturedCache::with_budget(CAPTURED_CACHE_BYTES)
    }
}

impl CapturedCache {
    pub fn with_budget(budget: usize) -> CapturedCache {
        CapturedCache { budget, kept: Mutex::default() }
    }

    /// Keeps what `change_id` captured (nothing, too, is worth knowing).
    pub fn keep(&self, change_id: &str, captured: Captured) {
        let mut kept = self.kept.lock().expect("the captured cache is never poisoned");
        if kept.by_change.contains_key(change_id) {
            return;
        }
        // The id counts too, so items with nothing captured are not free.
        kept.bytes += change_id.len() + captured.bytes();
        kept.order.push_back(change_id.to_owned());
        kept.by_change.insert(change_id.to_owned(), captured);
        while kept.bytes > self.budget
            && let Some(oldest) = kept.order.pop_front()
        {
            let gone = kept.by_change.remove(&oldest).unwrap_or_default();
            kept.bytes -= oldest.len() + gone.bytes();
        }
    }

    /// What was captured of the item of each of `rows` (rows with `change_id`, e.g. a
    /// write's `RETURNING` [`crate::rows::CHANGE_RETURNING`]), in their order: what is
    /// kept, and the rest read in one statement (and kept).
    pub async fn of_rows<'r>(
        &self,
        pool: &AnyPool,
        rows: impl IntoIterator<Item = &'r AnyRow>,
    ) -> Result<Vec<Captured>, sqlx::Error> {
        let ids = rows.into_iter().map(|row| row.try_get("change_id")).collect::<Result<Vec<String>, _>>()?;
        let mut found: Vec<Option<Captured>> = {
            let kept = self.kept.lock().expect("the captured cache is never poisoned");
            ids.iter().map(|id| kept.by_change.get(id).cloned()).collect()
        };
        let missing: Vec<&String> =
            ids.iter().zip(&found).filter(|(_, f)| f.is_none()).map(|(id, _)| id).collect();
        if !missing.is_empty() {
            let mut read = read(pool, &missing).await?;
            for (id, slot) in ids.iter().zip(&mut found) {
                if slot.is_none() {
                    let captured = read.remove(id).unwrap_or_default();
                    self.keep(id, captured.clone());
                    *slot = Some(captured);
                }
            }
        }
        Ok(found.into_iter().map(Option::unwrap_or_default).collect())
    }
}

/// What was captured of `ids`, by id (an item with nothing captured has no row).
async fn read(pool: &AnyPool, ids: &[&String]) -> Result<HashMap<String, Captured>, sqlx::Error> {
    let mut select = Filter::new("SELECT change_id, capture, console_errors FROM change_captures".to_owned());
    select.push(
        &format!(" WHERE change_id IN ({})", placeholders(ids.len())),
        ids.iter().map(|&id| Bind::Text(id.clone())),
    );
    let mut conn = pool.acquire().await?;
    select
        .fetch(&mut conn)
        .await?
        .iter()
        .map(|row| Ok((row.try_get("change_id")?, Captured::from_row(row)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    impl CapturedCache {
        fn get(&self, change_id: &str) -> Option<Captured> {
            self.kept.lock().unwrap().by_change.get(change_id).cloned()
        }
    }

    fn captured(capture: &str) -> Captured {
        let capture = RawValue::from_string(capture.to_owned()).unwrap();
        Captured { capture: Some(capture), console_errors: Some("[]".to_owned()) }
    }

    #[test]
    fn the_oldest_kept_go_first_once_over_the_budget() {
        // Each entry: a 1-byte id, 10 bytes of capture and 2 of console errors.
        let cache = CapturedCache::with_budget(13 * 3);
        for id in ["a", "b", "c"] {
            cache.keep(id, captured("[12345678]"));
        }
        assert!(["a", "b", "c"].iter().all(|id| cache.get(id).is_some()));
        cache.keep("d", captured("[12345678]"));
        assert_eq!(cache.get("a"), None);
        assert_eq!(cache.get("d"), Some(captured("[12345678]")));
        // Kept again, it stays where it was in the order.
        cache.keep("b", captured("[12345678]"));
        cache.keep("e", captured("[12345678]"));
        assert_eq!((cache.get("b"), cache.get("c").is_some()), (None, true));
    }

    #[test]
    fn an_entry_over_the_whole_budget_is_not_kept() {
        let cache = CapturedCache::with_budget(8);
        cache.keep("a", captured("[12345678]"));
        assert_eq!(cache.get("a"), None);
        cache.keep("b", Captured::default());
        assert_eq!(cache.get("b"), Some(Captured::default()));
    }

    #[tokio::test]
    async fn what_is_not_kept_is_read_once_and_kept() {
        sqlx::any::install_default_drivers();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
        let pool = AnyPool::connect(&url).await.unwrap();
        sqlx::raw_sql(
            "CREATE TABLE change_captures (change_id TEXT PRIMARY KEY, capture TEXT, console_errors TEXT NOT NULL); \
             INSERT INTO change_captures VALUES ('a', '{\"elements\":[]}', '[\"boom\"]')",
        )
        .execute(&pool)
        .await
        .unwrap();
        let rows = sqlx::query("SELECT 'a' AS change_id UNION ALL SELECT 'b' UNION ALL SELECT 'c'")
            .fetch_all(&pool)
            .await
            .unwrap();
        let cache = CapturedCache::with_budget(1000);
        cache.keep("b", captured("{}"));
        let stored = Captured {
            capture: Some(RawValue::from_string(r#"{"elements":[]}"#.to_owned()).unwrap()),
            console_errors: Some(r#"["boom"]"#.to_owned()),
        };
        let expected = vec![stored, captured("{}"), Captured::default()];
        assert_eq!(cache.of_rows(&pool, &rows).await.unwrap(), expected);
        // Read once: the second answer comes from what was kept.
        sqlx::raw_sql("DELETE FROM change_captures").execute(&pool).await.unwrap();
        assert_eq!(cache.of_rows(&pool, &rows).await.unwrap(), expected);
    }
}
