//! The write path: the project write transaction (which numbers events), finding an
//! item by `changeId` / `#7` / `7`, the lease guard of agent writes.

use redline_protocol::{
    Attachment, AuthorKind, ChangeEventType, ChangeRef, Message, MessageType, Timestamp, codes,
    is_lease_live, parse_change_ref,
};
use sqlx::any::AnyRow;
use sqlx::{AnyConnection, Row};

use crate::error::ApiError;
use crate::services::Services;
use crate::store::blobs::{Blobs, Written};
use crate::store::commit::Lent;
use crate::store::event_log;
pub use crate::store::event_log::ChangeKey;
use crate::store::rows::{
    CAPTURED_JOIN, CHANGE_COLUMNS, HOLD_JOIN, MESSAGE_COLUMNS, StoredChange, change_from_row,
    message_from_row, to_json,
};
use crate::store::{new_id, touch_project};

/// A change with what the rules need beyond the record: its filer and its lease.
pub struct Item {
    pub change: StoredChange,
    pub filer_user_id: Option<String>,
    pub lease: Option<Lease>,
}

/// The group an item is in, as far as leases are concerned.
pub struct Lease {
    pub group_id: String,
    pub claimed_by: Option<String>,
    pub claim_expires_at: Option<Timestamp>,
    pub fence: u64,
}

/// Selects items: the change columns (with the hold's end and what was captured) plus
/// the filer and the group's lease; the hold is `h`, as [`crate::ops::claim::CLAIMABLE_SQL`]
/// expects.
pub fn item_select() -> String {
    format!(
        "SELECT {CHANGE_COLUMNS}, c.filer_user_id, g.claimed_by AS lease_claimed_by, \
         g.claim_expires_at AS lease_expires_at, g.fence AS lease_fence \
         FROM changes c LEFT JOIN claim_groups g ON g.group_id = c.group_id {HOLD_JOIN} {CAPTURED_JOIN}"
    )
}

pub fn item_from_row(row: &AnyRow, now: Timestamp) -> Result<Item, sqlx::Error> {
    let change = change_from_row(row, now)?;
    let fence: Option<i64> = row.try_get("lease_fence")?;
    let lease = match (&change.group_id, fence) {
        (Some(group_id), Some(fence)) => Some(Lease {
            group_id: group_id.clone(),
            claimed_by: row.try_get("lease_claimed_by")?,
            claim_expires_at: row
                .try_get::<Option<i64>, _>("lease_expires_at")?
                .map(Timestamp::from_unix_millis),
            fence: fence as u64,
        }),
        _ => None,
    };
    Ok(Item { change, filer_user_id: row.try_get("filer_user_id")?, lease })
}

/// Finds an item of `project_id` by `changeId`, `#7` or `7`: 400 for anything else,
/// 404 when it is not in the project.
pub async fn find_item(
    conn: &mut AnyConnection,
    project_id: &str,
    change_ref: &str,
    now: Timestamp,
) -> Result<Item, ApiError> {
    let by = |column: &str| format!("{} WHERE c.project_id = $1 AND c.{column} = $2", item_select());
    let query = match parse_change_ref(change_ref) {
        Some(ChangeRef::Short(n)) => sqlx::query(sqlx::AssertSqlSafe(by("short_id")))
            .bind(project_id)
            .bind(i64::try_from(n).unwrap_or(i64::MAX)),
        Some(ChangeRef::Id(id)) => {
            sqlx::query(sqlx::AssertSqlSafe(by("change_id"))).bind(project_id).bind(id)
        }
        None => return Err(ApiError::bad_input("changeId", "must be a UUID, #7 or 7")),
    };
    let row = query
        .fetch_optional(conn)
        .await?
        .ok_or_else(|| ApiError::not_found(format!("no item {change_ref} in this project")))?;
    Ok(item_from_row(&row, now)?)
}

/// The latest `limit` messages of an item's thread, oldest first (by the event sequence
/// of the write that added each), on the thread's index.
pub async fn read_thread_latest(
    conn: &mut AnyConnection,
    change_id: &str,
    limit: i64,
) -> Result<Vec<Message>, ApiError> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages WHERE change_id = $1 ORDER BY seq DESC LIMIT $2"
    )))
    .bind(change_id)
    .bind(limit)
    .fetch_all(conn)
    .await?;
    rows.iter().rev().map(|row| Ok(message_from_row(row)?)).collect()
}

/// The most option shots after a question that count as its choices (the first ones):
/// a question has at most six options, and a thread has no end.
pub const QUESTION_SHOTS_MAX: usize = 200;

/// What the open question of a thread needs of it ([`redline_protocol::open_question`]):
/// the latest question and the agent's shots after it (at most [`QUESTION_SHOTS_MAX`]),
/// and the sequence number of the thread's last message when read, so a read made
/// before a write's turn is brought up to date in it with what came since.
pub struct QuestionPart {
    pub messages: Vec<Message>,
    shots: usize,
    last_seq: i64,
}

impl QuestionPart {
    /// Reads it on the thread's index: the question found walking back from the end,
    /// then only the shots after it.
    pub async fn read(conn: &mut AnyConnection, change_id: &str) -> Result<QuestionPart, ApiError> {
        let last_seq: i64 =
            sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0) FROM messages WHERE change_id = $1")
                .bind(change_id)
                .fetch_one(&mut *conn)
                .await?;
        let mut part = QuestionPart { messages: Vec::new(), shots: 0, last_seq };
        let question: Option<i64> = sqlx::query_scalar(
            "SELECT seq FROM messages WHERE change_id = $1 AND seq <= $2 AND message_type = 'question' \
             ORDER BY seq DESC LIMIT 1",
        )
        .bind(change_id)
        .bind(last_seq)
        .fetch_optional(&mut *conn)
        .await?;
        let Some(question) = question else { return Ok(part) };
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE change_id = $1 AND seq >= $2 AND seq <= $3 \
             AND (seq = $2 OR (author_kind = 'agent' AND message_type = 'shot')) ORDER BY seq LIMIT {}",
            QUESTION_SHOTS_MAX + 1
        )))
        .bind(change_id)
        .bind(question)
        .bind(last_seq)
        .fetch_all(&mut *conn)
        .await?;
        for row in &rows {
            part.add(message_from_row(row)?);
        }
        Ok(part)
    }

    /// Adds the messages that came after it was read (in a write's turn, where they are
    /// few: those of the moment since). More than a page of them is a 409, to try again.
    pub async fn catch_up(&mut self, conn: &mut AnyConnection, change_id: &str) -> Result<(), ApiError> {
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT seq, {MESSAGE_COLUMNS} FROM messages WHERE change_id = $1 AND seq > $2 ORDER BY seq LIMIT {}",
            redline_protocol::THREAD_PAGE_MAX + 1
        )))
        .bind(change_id)
        .bind(self.last_seq)
        .fetch_all(conn)
        .await?;
        if rows.len() > redline_protocol::THREAD_PAGE_MAX as usize {
            return Err(ApiError::conflict(
                codes::WRONG_STATUS,
                "the thread moved on while answering: answer again",
            ));
        }
        for row in &rows {
            self.last_seq = row.try_get("seq")?;
            self.add(message_from_row(row)?);
        }
        Ok(())
    }

    fn add(&mut self, message: Message) {
        match message.role() {
            MessageType::Question => {
                self.messages = vec![message];
                self.shots = 0;
            }
            MessageType::Shot
                if message.author_kind == AuthorKind::Agent
                    && !self.messages.is_empty()
                    && self.shots < QUESTION_SHOTS_MAX =>
            {
                self.messages.push(message);
                self.shots += 1;
            }
            _ => {}
        }
    }
}

/// Messages `offset` to `offset + limit` of an item's thread, in its order (see
/// [`read_thread_latest`]), on the thread's index.
pub async fn read_thread_page(
    conn: &mut AnyConnection,
    change_id: &str,
    offset: i64,
    limit: i64,
) -> Result<Vec<Message>, ApiError> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {MESSAGE_COLUMNS} FROM messages WHERE change_id = $1 ORDER BY seq LIMIT $2 OFFSET $3"
    )))
    .bind(change_id)
    .bind(limit)
    .bind(offset)
    .fetch_all(conn)
    .await?;
    Ok(rows.iter().map(message_from_row).collect::<Result<_, _>>()?)
}

/// A project counter that a write advances together with the event sequence.
pub enum Counter {
    NextShortId,
    LastFence,
}

/// A write to one project's queue: a transaction that holds the project (see
/// [`crate::store::Store::write`]) and numbers the events it records, every rule of it
/// reading the clock once (`now`). The event streams are woken after the commit.
pub struct ProjectWrite<'a> {
    state: &'a Services,
    project_id: &'a str,
    now: Timestamp,
    /// The batch transaction of the group committer (see [`crate::store::commit`]).
    tx: Lent,
    last_seq: Option<i64>,
}

impl<'a> ProjectWrite<'a> {
    /// Begins a write on `project_id`, the caller's project.
    pub async fn begin(state: &'a Services, project_id: &'a str, now: Timestamp) -> Result<Self, ApiError> {
        let tx = state.store.committer(project_id).lend().await?;
        Self::in_turn(state, project_id, now, tx).await
    }

    /// Begins a write on `project_id`, the caller's project, in a turn already lent by
    /// its committer.
    pub async fn in_turn(
        state: &'a Services,
        project_id: &'a str,
        now: Timestamp,
        mut tx: Lent,
    ) -> Result<Self, ApiError> {
        // The batch's first write takes the lock (see `touch_project`); later ones
        // hold it already: a released savepoint keeps its locks on both engines, a
        // rolled-back one does not, so "first" means before any write finished. The
        // token's project exists (authentication read it), so skipping the check
        // loses nothing.
        if tx.first() && !touch_project(tx.conn(), project_id).await? {
            return Err(ApiError::not_found("no such project"));
        }
        Ok(ProjectWrite { state, project_id, now, tx, last_seq: None })
    }

    pub fn conn(&mut self) -> &mut AnyConnection {
        self.tx.conn()
    }

    pub fn project_id(&self) -> &str {
        self.project_id
    }

    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// Records an image that a message of this write attaches (decoded and written
    /// before the turn), charging the project's quota.
    pub async fn record_image(&mut self, file: &Written) -> Result<(), ApiError> {
        let quota = self.state.project_quota_bytes;
        Blobs::record(self.tx.conn(), self.project_id, file, true, quota, self.now).await
    }

    /// Records a change event; returns its sequence number.
    pub async fn event(
        &mut self,
        event_type: ChangeEventType,
        change: &StoredChange,
    ) -> Result<i64, ApiError> {
        let seq = self.reserve_events(1).await?;
        self.insert_events(seq, event_type, &[ChangeKey::of(change)?]);
        Ok(seq)
    }

    /// [`ProjectWrite::event`], adding `stored` bytes (or taking them off, if negative)
    /// to what the project stores in the same statement: 413 (and the write undone) if
    /// that takes it over its quota.
    pub async fn event_storing(
        &mut self,
        event_type: ChangeEventType,
        change: &StoredChange,
        stored: i64,
    ) -> Result<i64, ApiError> {
        let set = format!(", stored_bytes = stored_bytes + {stored}");
        let (seq, row) = self.reserve(1, &set, ", stored_bytes").await?;
        let quota = self.state.project_quota_bytes;
        crate::store::blobs::check_quota(row.try_get("stored_bytes")?, stored, quota)?;
        self.insert_events(seq, event_type, &[ChangeKey::of(change)?]);
        Ok(seq)
    }

    /// Reserves `n` event sequence numbers; returns the first.
    pub async fn reserve_events(&mut self, n: usize) -> Result<i64, ApiError> {
        Ok(self.reserve(n, "", "").await?.0)
    }

    /// [`ProjectWrite::reserve_events`], advancing `counter` by `by` in the same
    /// statement (each statement of a write is a round trip while every other write
    /// waits); returns the first sequence number and the counter's new value.
    pub async fn reserve_events_and(
        &mut self,
        n: usize,
        counter: Counter,
        by: usize,
    ) -> Result<(i64, i64), ApiError> {
        let column = match counter {
            Counter::NextShortId => "next_short_id",
            Counter::LastFence => "last_fence",
        };
        let set = format!(", {column} = {column} + {by}");
        let (first, row) = self.reserve(n, &set, &format!(", {column} AS counter")).await?;
        Ok((first, row.try_get("counter")?))
    }

    /// [`ProjectWrite::reserve_events_and`], adding `stored` bytes to what the project
    /// stores in the same statement: 413 (and the write undone) if that takes it over
    /// its quota.
    pub async fn reserve_events_and_store(
        &mut self,
        n: usize,
        counter: Counter,
        by: usize,
        stored: usize,
    ) -> Result<(i64, i64), ApiError> {
        let column = match counter {
            Counter::NextShortId => "next_short_id",
            Counter::LastFence => "last_fence",
        };
        let set = format!(", {column} = {column} + {by}, stored_bytes = stored_bytes + {stored}");
        let returning = format!(", {column} AS counter, stored_bytes");
        let (first, row) = self.reserve(n, &set, &returning).await?;
        let quota = self.state.project_quota_bytes;
        crate::store::blobs::check_quota(row.try_get("stored_bytes")?, stored as i64, quota)?;
        Ok((first, row.try_get("counter")?))
    }

    async fn reserve(&mut self, n: usize, set: &str, returning: &str) -> Result<(i64, AnyRow), ApiError> {
        Ok(event_log::reserve(self.tx.conn(), self.project_id, n, set, returning).await?)
    }

    /// Records one event of `event_type` for each of `changes`, numbered from `first_seq`
    /// (reserved with [`ProjectWrite::reserve_events`]). The rows are stored with those
    /// of the whole batch, in one statement just before its commit (see
    /// [`crate::store::commit`]): nothing in a write reads them back.
    pub fn insert_events(&mut self, first_seq: i64, event_type: ChangeEventType, changes: &[ChangeKey<'_>]) {
        if changes.is_empty() {
            return;
        }
        self.tx.defer_events(event_log::rows(self.project_id, first_seq, event_type, changes, self.now));
        self.last_seq = Some(first_seq + changes.len() as i64 - 1);
    }

    /// Adds a message to an item's thread, recorded as event `event_type`; what it says
    /// counts against the project's storage quota.
    pub async fn message(
        &mut self,
        event_type: ChangeEventType,
        change: &StoredChange,
        author: (AuthorKind, Option<String>),
        body: String,
        attachments: Vec<Attachment>,
        chosen_option: Option<String>,
    ) -> Result<Message, ApiError> {
        let attachments_json = to_json(&attachments);
        let stored = [Some(&body), author.1.as_ref(), Some(&attachments_json), chosen_option.as_ref()]
            .into_iter()
            .flatten()
            .map(String::len)
            .sum::<usize>();
        let seq = self.event_storing(event_type, change, stored as i64).await?;
        let message_type = match event_type {
            ChangeEventType::Asked => MessageType::Question,
            ChangeEventType::Answered => MessageType::Answer,
            ChangeEventType::Shot => MessageType::Shot,
            ChangeEventType::Done => MessageType::Note,
            ChangeEventType::Verified | ChangeEventType::Regressed => MessageType::Verdict,
            _ => MessageType::Reply,
        };
        let message = Message {
            message_id: new_id(),
            change_id: change.change_id.clone(),
            author_kind: author.0,
            author_name: author.1,
            body,
            attachments,
            chosen_option,
            created_at: self.now,
            message_type: Some(message_type),
        };
        sqlx::query(
            "INSERT INTO messages (message_id, change_id, seq, author_kind, author_name, body, attachments, \
             chosen_option, created_at, message_type) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
        )
        .bind(&message.message_id)
        .bind(&message.change_id)
        .bind(seq)
        .bind(message.author_kind.as_str())
        .bind(message.author_name.as_deref())
        .bind(&message.body)
        .bind(attachments_json)
        .bind(message.chosen_option.as_deref())
        .bind(message.created_at.unix_millis())
        .bind(message_type.as_str())
        .execute(self.tx.conn())
        .await?;
        Ok(message)
    }

    /// Re-reads an item inside this write.
    pub async fn item(&mut self, change_ref: &str) -> Result<Item, ApiError> {
        find_item(self.tx.conn(), self.project_id, change_ref, self.now).await
    }

    /// Ends the write; returns once it is committed (with its batch).
    pub async fn commit(mut self) -> Result<(), ApiError> {
        if let Some(seq) = self.last_seq {
            let backend = self.state.store.backend();
            event_log::announce(self.tx.conn(), backend, self.project_id, seq).await?;
        }
        self.tx.commit().await?;
        if let Some(seq) = self.last_seq {
            self.state.events.notify(self.project_id, seq);
        }
        Ok(())
    }
}

/// The lease rule of agent writes: "when [`groupId` and `fence`] no longer match the
/// item's current group and that group's fence … the write is refused with 409 and
/// `code: "lease_lost"`. Writes into another claimant's live lease are refused the
/// same way." Without a `groupId`, the writer is the claimant when `authorName` is
/// the group's `claimedBy`.
pub fn check_lease(
    item: &Item,
    group_id: Option<&str>,
    fence: Option<u64>,
    author_name: Option<&str>,
    now: Timestamp,
) -> Result<(), ApiError> {
    let lost = |why: &str| Err(ApiError::conflict(codes::LEASE_LOST, why.to_owned()));
    match (group_id, &item.lease) {
        (Some(g), Some(lease)) if g == lease.group_id => match fence {
            Some(f) if f != lease.fence => lost("the fence is stale: this item was claimed again since"),
            _ => Ok(()),
        },
        (Some(_), _) => lost("this item is no longer in that group"),
        (None, _) if fence.is_some() => Err(ApiError::bad_input("groupId", "is required with fence")),
        (None, Some(lease)) if is_lease_live(lease.claim_expires_at, now) => {
            if author_name.is_some() && author_name == lease.claimed_by.as_deref() {
                Ok(())
            } else {
                lost("another claimant holds a live lease on this item")
            }
        }
        (None, _) => Ok(()),
    }
}

/// Sets an item's status.
pub async fn set_status(
    w: &mut ProjectWrite<'_>,
    item: &Item,
    status: redline_protocol::ChangeStatus,
) -> Result<(), ApiError> {
    sqlx::query("UPDATE changes SET status = $2 WHERE change_id = $1")
        .bind(&item.change.change_id)
        .bind(status.as_str())
        .execute(w.conn())
        .await?;
    Ok(())
}
