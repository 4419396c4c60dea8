//! What the page gave at filing (the capture and console errors), stored apart from
//! the item (JSON text, see 0004_change_captures.sql). It never changes. Only an item's
//! own reads (`getChange` and the writes answering with one item) carry it: lists
//! answer summaries (docs/protocol-additions.md, "Lists are summaries").

use serde_json::value::RawValue;
use sqlx::Row;
use sqlx::any::AnyRow;

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
    /// Read from a row selected with [`crate::store::rows::CHANGE_COLUMNS`].
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
}
