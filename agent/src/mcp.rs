//! `redline mcp`: the agent commands as Model Context Protocol tools, served over stdio
//! with the official SDK (`rmcp`).
//!
//! Each tool is a thin layer over the same calls as its command: [`Ctx`] signs in the
//! same way (`REDLINE_API_URL`/`REDLINE_TOKEN` or the stored login), agent writes carry
//! the remembered claim's group and fence, `changes_wait` is `next`'s [`next::wait`]
//! with a bounded wait, and `changes_done` records the commit of the checkout the
//! server runs in. What went wrong is a tool error (`isError`) whose text says what to
//! do. Nothing here prints to stdout: it carries the protocol. `schemas` holds the
//! tools' parameters, `texts` what they say, `tools` the tools; this file the server.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, ServiceExt, tool_handler};
use tokio::sync::Mutex;

use super::client::{Error, exit};
use super::session::{Ctx, ServerChoice};

mod schemas;
mod texts;
mod tools;

use self::texts::{INSTRUCTIONS, explain};

/// Serves the tools on stdin/stdout until the client closes them.
pub async fn serve(server: ServerChoice) -> Result<i32, Error> {
    let service = Tools::new(server)
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| Error::local(format!("starting the MCP server: {e}")))?;
    service.waiting().await.map_err(|e| Error::local(format!("the MCP server failed: {e}")))?;
    Ok(exit::OK)
}

/// The MCP server: the session (made on the first call that needs it, and made again
/// after the server refused it) and the tools.
#[derive(Clone)]
pub struct Tools {
    api: ServerChoice,
    ctx: Arc<Mutex<Option<Arc<Ctx>>>>,
    tool_router: ToolRouter<Tools>,
}

type Outcome = Result<CallToolResult, Error>;

impl Tools {
    pub fn new(api: ServerChoice) -> Tools {
        Tools { api, ctx: Arc::new(Mutex::new(None)), tool_router: Self::tool_router() }
    }

    /// The signed-in session: read the login and ask the server once, then reuse it.
    async fn ctx(&self) -> Result<Arc<Ctx>, Error> {
        let mut slot = self.ctx.lock().await;
        if let Some(ctx) = slot.as_ref() {
            return Ok(ctx.clone());
        }
        let ctx = Arc::new(Ctx::connect(&self.api, false).await?);
        *slot = Some(ctx.clone());
        Ok(ctx)
    }

    /// The tool's answer: its result, or a tool error saying what to do. A refused
    /// session is forgotten, so the next call reads the login again.
    async fn finish(&self, outcome: Outcome) -> CallToolResult {
        match outcome {
            Ok(result) => result,
            Err(e) => {
                let signed_in = self.ctx.lock().await.as_ref().map(|c| c.api_url.clone());
                let api_url = signed_in.or_else(|| self.api.api_url.clone());
                if matches!(e.status(), Some(401 | 403)) {
                    *self.ctx.lock().await = None;
                }
                CallToolResult::error(vec![ContentBlock::text(explain(&e, api_url.as_deref()))])
            }
        }
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("redline", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS.to_owned())
    }
}
