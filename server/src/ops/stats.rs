//! The loop's numbers (`getStats`, ours; docs/protocol-additions.md, "The loop's
//! numbers"): over a project's items filed since a time, how many were done, dismissed,
//! verified and sent back as still wrong, how many questions they took, and how long
//! they took to be done and to be verified; for the project, per agent (the name an item
//! was completed as) and per filer. `/metrics` reads the same counts over the whole
//! store ([`loop_counts`]).
//!
//! Counted in SQL (three statements, one per grouping), so a project of any size costs
//! a few rows; the medians and 90th percentiles are taken here from the items' durations,
//! fetched as numbers in one more statement and kept only for the rows answered.

use std::collections::HashMap;

use futures_util::TryStreamExt;
use redline_protocol::*;
use sqlx::Row;
use sqlx::any::AnyRow;

use super::{Ctx, Op};
use crate::error::ApiError;

const DAY_MS: i64 = 24 * 3_600_000;

/// The most items `getStats` counts: a window holding more is refused (400 naming
/// `sinceDays`), so its statements and the durations it keeps stay bounded.
pub const STATS_ITEMS_MAX: i64 = 50_000;

/// The `p`-th percentile (0–100) of `sorted` (ascending) by the nearest-rank rule: the
/// smallest value at least `p` % of the values are no greater than, i.e. the value of
/// rank ⌈p·n/100⌉ (at least the first). `None` for no values.
fn nearest_rank(sorted: &[u64], p: u64) -> Option<u64> {
    let n = sorted.len() as u64;
    let rank = (p * n).div_ceil(100).max(1);
    sorted.get(usize::try_from(rank - 1).ok()?).copied()
}

/// The count, median and 90th percentile of `durations`.
fn duration_stats(mut durations: Vec<u64>) -> DurationStats {
    durations.sort_unstable();
    DurationStats {
        count: durations.len() as u64,
        median_ms: nearest_rank(&durations, 50),
        p90_ms: nearest_rank(&durations, 90),
    }
}

/// What an item counts towards, summed over a set of items.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Counts {
    pub filed: u64,
    pub done: u64,
    pub dismissed: u64,
    pub verified: u64,
    /// Items a `still_wrong` verdict sent back at least once.
    pub still_wrong: u64,
    /// Items with any verdict.
    pub judged: u64,
    /// `question` messages.
    pub questions: u64,
}

impl Counts {
    fn from_row(row: &AnyRow) -> Result<Counts, sqlx::Error> {
        let n = |column: &str| row.try_get::<i64, _>(column).map(|n| u64::try_from(n).unwrap_or(0));
        Ok(Counts {
            filed: n("filed")?,
            done: n("done")?,
            dismissed: n("dismissed")?,
            verified: n("verified")?,
            still_wrong: n("still_wrong")?,
            judged: n("judged")?,
            questions: n("questions")?,
        })
    }

    fn into_stats(self, name: Option<String>, to_done: Vec<u64>, to_verified: Vec<u64>) -> LoopStats {
        let ratio = |n: u64, over: u64| (over > 0).then(|| n as f64 / over as f64);
        LoopStats {
            name,
            filed: self.filed,
            done: self.done,
            dismissed: self.dismissed,
            verified: self.verified,
            still_wrong: self.still_wrong,
            still_wrong_rate: ratio(self.still_wrong, self.judged),
            questions_per_item: ratio(self.questions, self.filed),
            to_done: duration_stats(to_done),
            to_verified: duration_stats(to_verified),
        }
    }
}

/// How the items are grouped: all together, or by the column holding a name.
#[derive(Clone, Copy)]
enum By {
    All,
    Agent,
    Filer,
}

impl By {
    fn column(self) -> Option<&'static str> {
        match self {
            By::All => None,
            By::Agent => Some("completed_by"),
            By::Filer => Some("filed_by"),
        }
    }
}

/// The counts of the items filed at or after `since` (of `project`, or of every
/// project), grouped `by`: the most items first, at most [`STATS_MAX_ROWS`] names. Each
/// item's questions and verdicts are counted by the thread's index (`messages_by_change`).
/// Every sum is cast, as Postgres sums `BIGINT`s as `NUMERIC`.
async fn counts(
    pool: &sqlx::AnyPool,
    project: Option<&str>,
    since: i64,
    by: By,
) -> Result<Vec<(Option<String>, Counts)>, sqlx::Error> {
    let (name, named, grouped) = match by.column() {
        Some(column) => (
            format!("c.{column} AS name, "),
            format!(" AND c.{column} IS NOT NULL"),
            format!(" GROUP BY name ORDER BY filed DESC, name LIMIT {STATS_MAX_ROWS}"),
        ),
        None => (String::new(), String::new(), String::new()),
    };
    let project_filter = if project.is_some() { "c.project_id = $3 AND " } else { "" };
    let sql = format!(
        "WITH items AS (SELECT {name}c.status, c.verified_at, \
           (SELECT COUNT(*) FROM messages m WHERE m.change_id = c.change_id AND m.message_type = 'question') AS questions, \
           (SELECT COUNT(*) FROM messages m WHERE m.change_id = c.change_id AND m.message_type = 'verdict') AS verdicts, \
           (SELECT COUNT(*) FROM messages m WHERE m.change_id = c.change_id AND m.message_type = 'verdict' \
              AND m.body LIKE $1) AS sent_back \
         FROM changes c WHERE {project_filter}c.created_at >= $2{named}) \
         SELECT {select_name}CAST(COUNT(*) AS BIGINT) AS filed, \
           CAST(COALESCE(SUM(CASE WHEN status = 'done' THEN 1 ELSE 0 END), 0) AS BIGINT) AS done, \
           CAST(COALESCE(SUM(CASE WHEN status = 'dismissed' THEN 1 ELSE 0 END), 0) AS BIGINT) AS dismissed, \
           CAST(COALESCE(SUM(CASE WHEN verified_at IS NOT NULL THEN 1 ELSE 0 END), 0) AS BIGINT) AS verified, \
           CAST(COALESCE(SUM(CASE WHEN sent_back > 0 THEN 1 ELSE 0 END), 0) AS BIGINT) AS still_wrong, \
           CAST(COALESCE(SUM(CASE WHEN verdicts > 0 THEN 1 ELSE 0 END), 0) AS BIGINT) AS judged, \
           CAST(COALESCE(SUM(questions), 0) AS BIGINT) AS questions \
         FROM items{grouped}",
        select_name = if by.column().is_some() { "name, " } else { "" },
    );
    let mut query = sqlx::query(sqlx::AssertSqlSafe(sql))
        .bind(format!("{}%", verdict_said(Verdict::StillWrong)))
        .bind(since);
    if let Some(project) = project {
        query = query.bind(project.to_owned());
    }
    let rows = query.fetch_all(pool).await?;
    rows.iter()
        .map(|row| {
            let name = match by.column() {
                Some(_) => Some(row.try_get::<String, _>("name")?),
                None => None,
            };
            Ok((name, Counts::from_row(row)?))
        })
        .collect()
}

/// The counts of every item in the store (`/metrics`: no project, no name).
pub async fn loop_counts(pool: &sqlx::AnyPool) -> Result<Counts, sqlx::Error> {
    let all = counts(pool, None, i64::MIN, By::All).await?;
    Ok(all.into_iter().next().map(|(_, c)| c).unwrap_or_default())
}

/// How long the items done now took from filing to done, over the whole store, as a
/// histogram (`/metrics`).
#[derive(Clone, Debug, PartialEq)]
pub struct TimeToDone {
    /// Items done within each bound (cumulative, as Prometheus counts buckets).
    pub within: Vec<u64>,
    pub count: u64,
    pub sum_ms: i64,
}

/// [`TimeToDone`] with the bounds `bounds_ms`, in one statement.
pub async fn time_to_done(pool: &sqlx::AnyPool, bounds_ms: &[i64]) -> Result<TimeToDone, sqlx::Error> {
    let buckets: String = bounds_ms
        .iter()
        .enumerate()
        .map(|(i, le)| {
            format!(
                "CAST(COALESCE(SUM(CASE WHEN resolved_at - created_at <= {le} THEN 1 ELSE 0 END), 0) AS BIGINT) AS le{i}, "
            )
        })
        .collect();
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {buckets}CAST(COUNT(*) AS BIGINT) AS n, \
           CAST(COALESCE(SUM(resolved_at - created_at), 0) AS BIGINT) AS sum_ms \
         FROM changes WHERE status = 'done' AND resolved_at IS NOT NULL"
    )))
    .fetch_one(pool)
    .await?;
    let n = |column: &str| row.try_get::<i64, _>(column).map(|n| u64::try_from(n).unwrap_or(0));
    Ok(TimeToDone {
        within: (0..bounds_ms.len()).map(|i| n(&format!("le{i}"))).collect::<Result<_, _>>()?,
        count: n("n")?,
        sum_ms: row.try_get("sum_ms")?,
    })
}

/// The times to done and to verified of one total, agent or filer.
#[derive(Default)]
struct Durations {
    to_done: Vec<u64>,
    to_verified: Vec<u64>,
}

impl Op for GetStats {
    type Answer = GetStatsOutput;

    async fn run(ctx: &Ctx<'_>, input: GetStatsInput) -> Result<Self::Answer, ApiError> {
        ctx.who.require_project(&input.project_id)?;
        let days = input.since_days.unwrap_or(STATS_DEFAULT_DAYS);
        if !(1..=STATS_MAX_DAYS).contains(&days) {
            return Err(ApiError::bad_input("sinceDays", format!("must be 1 to {STATS_MAX_DAYS} days")));
        }
        let since = ctx.now.unix_millis() - i64::from(days) * DAY_MS;
        let (pool, project) = (ctx.state.store.pool(), Some(input.project_id.as_str()));
        // The work follows the items of the window: past [`STATS_ITEMS_MAX`] the caller
        // is asked for fewer days, counted on `changes_by_created` up to the bound.
        let within: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(format!(
            "SELECT COUNT(*) FROM (SELECT 1 FROM changes WHERE project_id = $1 AND created_at >= $2 LIMIT {}) t",
            STATS_ITEMS_MAX + 1
        )))
        .bind(&input.project_id)
        .bind(since)
        .fetch_one(pool)
        .await?;
        if within > STATS_ITEMS_MAX {
            return Err(ApiError::bad_input(
                "sinceDays",
                format!("the last {days} days hold more than {STATS_ITEMS_MAX} items: ask for fewer days"),
            ));
        }
        let total = counts(pool, project, since, By::All).await?.pop().map(|(_, c)| c).unwrap_or_default();
        let agents = counts(pool, project, since, By::Agent).await?;
        let filers = counts(pool, project, since, By::Filer).await?;

        // Durations are kept for the names answered only, so memory follows the items
        // done, not the names.
        let mut all = Durations::default();
        let kept_for = |groups: &[(Option<String>, Counts)]| -> HashMap<String, Durations> {
            groups.iter().filter_map(|(n, _)| Some((n.clone()?, Durations::default()))).collect()
        };
        let (mut by_agent, mut by_filer) = (kept_for(&agents), kept_for(&filers));
        let mut rows = sqlx::query(
            "SELECT completed_by, filed_by, \
               CASE WHEN status = 'done' AND resolved_at IS NOT NULL THEN resolved_at - created_at END AS to_done, \
               verified_at - created_at AS to_verified \
             FROM changes WHERE project_id = $1 AND created_at >= $2 \
               AND ((status = 'done' AND resolved_at IS NOT NULL) OR verified_at IS NOT NULL)",
        )
        .bind(&input.project_id)
        .bind(since)
        .fetch(pool);
        while let Some(row) = rows.try_next().await? {
            let ms = |column: &str| {
                row.try_get::<Option<i64>, _>(column).map(|d| d.map(|d| u64::try_from(d).unwrap_or(0)))
            };
            let (to_done, to_verified) = (ms("to_done")?, ms("to_verified")?);
            let agent: Option<String> = row.try_get("completed_by")?;
            let filer: Option<String> = row.try_get("filed_by")?;
            let kept = [
                Some(&mut all),
                agent.as_deref().and_then(|a| by_agent.get_mut(a)),
                filer.as_deref().and_then(|f| by_filer.get_mut(f)),
            ];
            for d in kept.into_iter().flatten() {
                d.to_done.extend(to_done);
                d.to_verified.extend(to_verified);
            }
        }
        drop(rows);
        let rows_of = |groups: Vec<(Option<String>, Counts)>, durations: &mut HashMap<String, Durations>| {
            groups
                .into_iter()
                .map(|(name, counts)| {
                    let d = name.as_deref().and_then(|n| durations.remove(n)).unwrap_or_default();
                    counts.into_stats(name, d.to_done, d.to_verified)
                })
                .collect::<Vec<_>>()
        };
        Ok(GetStatsOutput {
            since: Timestamp::from_unix_millis(since),
            total: total.into_stats(None, all.to_done, all.to_verified),
            agents: rows_of(agents, &mut by_agent),
            filers: rows_of(filers, &mut by_filer),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let ten: Vec<u64> = (1..=10).map(|n| n * 10).collect();
        assert_eq!(nearest_rank(&ten, 50), Some(50));
        assert_eq!(nearest_rank(&ten, 90), Some(90));
        assert_eq!(nearest_rank(&ten, 91), Some(100));
        assert_eq!(nearest_rank(&ten, 100), Some(100));
        assert_eq!(nearest_rank(&ten, 0), Some(10));
        // Odd counts: the median is the middle value; p90 of 3 is the largest.
        assert_eq!(nearest_rank(&[1, 2, 9], 50), Some(2));
        assert_eq!(nearest_rank(&[1, 2, 9], 90), Some(9));
        assert_eq!(nearest_rank(&[4, 8], 50), Some(4));
        assert_eq!(nearest_rank(&[7], 90), Some(7));
        assert_eq!(nearest_rank(&[], 50), None);
    }

    #[test]
    fn durations_are_sorted_before_ranking() {
        let d = duration_stats(vec![30, 10, 20]);
        assert_eq!(d, DurationStats { count: 3, median_ms: Some(20), p90_ms: Some(30) });
        assert_eq!(duration_stats(vec![]), DurationStats { count: 0, median_ms: None, p90_ms: None });
    }
}
