//! `listStages` and `resolveStage`.

use redline_protocol::{
    ListStages, ListStagesInput, ListStagesOutput, ResolveStage, ResolveStageInput, ResolvedStage, Stage,
};

use crate::AppState;
use crate::error::ApiError;
use crate::queue::Ctx;
use crate::rows::{STAGE_COLUMNS, stage_from_row};
use crate::rpc::Op;

async fn project_stages(state: &AppState, project_id: &str) -> Result<Vec<Stage>, ApiError> {
    let sql =
        format!("SELECT {STAGE_COLUMNS} FROM stages WHERE project_id = $1 ORDER BY created_at, stage_id");
    let rows = sqlx::query(sqlx::AssertSqlSafe(sql)).bind(project_id).fetch_all(state.store.pool()).await?;
    Ok(rows.iter().map(stage_from_row).collect::<Result<_, _>>()?)
}

impl Op for ListStages {
    type Answer = ListStagesOutput;

    async fn run(ctx: &Ctx<'_>, input: ListStagesInput) -> Result<Self::Answer, ApiError> {
        ctx.who.require_project(&input.project_id)?;
        Ok(ListStagesOutput { stages: project_stages(ctx.state, &input.project_id).await? })
    }
}

/// Whether `url` is under `prefix`: the same origin, and a path that continues at a
/// segment boundary (`https://a.example/app` covers `/app/x`, not `/apple`).
fn is_under(url: &str, prefix: &str) -> bool {
    let prefix = prefix.trim_end_matches('/');
    match url.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with(['/', '?', '#']),
        None => false,
    }
}

impl Op for ResolveStage {
    type Answer = ResolvedStage;

    /// "the stage whose `url` is the longest prefix", among the token's project's stages.
    async fn run(ctx: &Ctx<'_>, input: ResolveStageInput) -> Result<Self::Answer, ApiError> {
        let stages = project_stages(ctx.state, &ctx.who.project_id).await?;
        let best = stages
            .into_iter()
            .filter_map(|s| s.url.clone().filter(|u| is_under(&input.url, u)).map(|u| (u.len(), s)))
            .max_by_key(|(len, _)| *len)
            .map(|(_, s)| s)
            .ok_or_else(|| ApiError::not_found("no stage of this project serves that URL"))?;
        Ok(ResolvedStage {
            project_id: best.project_id,
            stage_id: best.stage_id,
            branch: best.branch,
            git_sha: best.git_sha,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::is_under;

    #[test]
    fn prefixes_stop_at_segment_boundaries() {
        assert!(is_under("https://a.example/app/orders", "https://a.example/app"));
        assert!(is_under("https://a.example/app", "https://a.example/app/"));
        assert!(is_under("https://a.example/?q=1", "https://a.example"));
        assert!(!is_under("https://a.example/apple", "https://a.example/app"));
        assert!(!is_under("https://a.example.evil.com/", "https://a.example"));
    }
}
