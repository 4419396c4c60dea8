//! `listStages` and `resolveStage`.

use redline_protocol::{
    ListStages, ListStagesInput, ListStagesOutput, ResolveStage, ResolveStageInput, ResolvedStage, Stage,
    stage_for_url,
};

use super::{Ctx, Op};
use crate::error::ApiError;
use crate::services::Services;
use crate::store::rows::{STAGE_COLUMNS, stage_from_row};

async fn project_stages(state: &Services, project_id: &str) -> Result<Vec<Stage>, ApiError> {
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

impl Op for ResolveStage {
    type Answer = ResolvedStage;

    /// "the stage whose `url` is the longest prefix", among the token's project's stages.
    async fn run(ctx: &Ctx<'_>, input: ResolveStageInput) -> Result<Self::Answer, ApiError> {
        let stages = project_stages(ctx.state, &ctx.who.project_id).await?;
        let best = stage_for_url(&stages, &input.url)
            .cloned()
            .ok_or_else(|| ApiError::not_found("no stage of this project serves that URL"))?;
        Ok(ResolvedStage {
            project_id: best.project_id,
            stage_id: best.stage_id,
            branch: best.branch,
            git_sha: best.git_sha,
        })
    }
}
