//! `getSession`: who the token belongs to.

use redline_protocol::{GetSession, GetSessionInput, Session, SessionProject};

use super::{Ctx, Op};
use crate::error::ApiError;

impl Op for GetSession {
    type Answer = Session;

    async fn run(ctx: &Ctx<'_>, _: GetSessionInput) -> Result<Self::Answer, ApiError> {
        let who = &ctx.who;
        Ok(Session {
            user_id: who.user_id.clone(),
            name: who.user_name.clone(),
            projects: vec![SessionProject {
                project_id: who.project_id.clone(),
                name: who.project_name.clone(),
            }],
            scopes: who.scopes.iter().map(|s| s.as_str().to_owned()).collect(),
        })
    }
}
