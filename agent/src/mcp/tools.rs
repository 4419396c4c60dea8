//! `redline mcp`'s tools: each a thin layer over the same calls as its CLI command,
//! reading its parameters (`schemas`) and answering in words (`texts`).

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use redline_protocol::*;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, tool, tool_router};
use tokio::time::Instant;

use super::schemas::*;
use super::texts::{claimed_text, found_text, local, not_claimable, text, with_filers_words};
use super::{Outcome, Tools};
use crate::anchors::Follower;
use crate::client::Error;
use crate::format::{self, done_text, shot_text};
use crate::git;
use crate::images::{self, ImageRoots};
use crate::next::{self, Found, Wait};
use crate::session::{Claimant, Lease, now, save_images};
use crate::writes::{Image, OptionImages, Writer, check_options, file_label, image_of};

/// `changes_wait`'s wait when the call names none: under the 60 s after which common
/// MCP clients give up on a request.
const DEFAULT_WAIT_SECS: u64 = 50;
/// The longest wait a call may ask for.
const MAX_WAIT_SECS: u64 = 600;
/// Polling while the event stream is down, as `redline wait`'s default.
const POLL_INTERVAL: Duration = Duration::from_secs(15);
/// At most this many images in one `changes_show` answer (the screenshot first); the
/// text gives every saved image's path.
const SHOW_IMAGES_MAX: usize = 8;

/// Reads an image file named by the client, only from under the checkout this server
/// runs in or this user's temp folder ([`ImageRoots`]).
fn image_file(path: &Path) -> Result<Image, Error> {
    let cwd = std::env::current_dir().map_err(|e| Error::local(format!("no working directory: {e}")))?;
    let checkout = git::toplevel(&cwd).unwrap_or_else(|| cwd.clone());
    let temp = images::own_temp_dir(&std::env::temp_dir()).map_err(Error::Local)?;
    let roots = ImageRoots::new(&checkout, &temp);
    image_of(path, roots.read(&cwd, path).map_err(Error::Local)?)
}

/// Reads an image given as a file or as base64: its type from its bytes, and base64.
fn image_input(path: Option<&str>, base64: Option<&str>) -> Result<Option<Image>, Error> {
    match (path, base64) {
        (Some(_), Some(_)) => Err(Error::local("give imagePath or imageBase64, not both")),
        (Some(p), None) => image_file(Path::new(p)).map(Some),
        (None, Some(b64)) => {
            let b64 = b64.trim();
            // A data: URL's payload.
            let b64 = match b64.strip_prefix("data:") {
                Some(rest) => rest.split_once(',').map_or(rest, |(_, data)| data),
                None => b64,
            };
            let bytes = STANDARD
                .decode(b64.split_whitespace().collect::<String>())
                .map_err(|e| Error::local(format!("imageBase64 is not base64: {e}")))?;
            if bytes.len() > IMAGE_MAX_BYTES {
                return Err(Error::local(format!("the image is over {} MiB", IMAGE_MAX_BYTES >> 20)));
            }
            let kind = ImageType::sniff(&bytes)
                .ok_or_else(|| Error::local("imageBase64 is not a png, jpeg or webp image"))?;
            Ok(Some(Image { kind, base64: STANDARD.encode(&bytes) }))
        }
        (None, None) => Ok(None),
    }
}

/// `changes_ask`'s options as labels, and the images of those that carry one.
fn options_with_images(options: Vec<AskOption>) -> Result<(Vec<String>, OptionImages), Error> {
    let mut labels = Vec::new();
    let mut images = Vec::new();
    for option in options {
        match option {
            AskOption::Label(label) => labels.push(label),
            AskOption::WithImage(o) => {
                if let Some(image) = image_input(o.image_path.as_deref(), o.image_base64.as_deref())? {
                    images.push((o.label.clone(), image));
                }
                labels.push(o.label);
            }
        }
    }
    Ok((labels, images))
}

#[tool_router(vis = "pub(super)")]
impl Tools {
    #[tool(
        description = "Wait for work: claimable items (claim them with claim: true and claimedBy) or, with \
                       claimedBy, the filer's answer to one of your questions or an item of yours they sent \
                       back as still wrong after checking it on the stage. Waits up to timeoutSeconds \
                       (default 50) and answers \"nothing yet\" when nothing came: then call it again. Woken \
                       at once by the server's event stream."
    )]
    async fn changes_wait(
        &self,
        Parameters(p): Parameters<NextParams>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        // A client that gives up on the call (its own timeout) cancels it: stop waiting
        // then, so that nothing is claimed for an agent that will never hear of it.
        tokio::select! {
            outcome = self.next(p) => self.finish(outcome).await,
            () = context.ct.cancelled() => {
                CallToolResult::error(vec![ContentBlock::text("cancelled by the client: nothing was claimed")])
            }
        }
    }

    #[tool(description = "The older name of changes_wait, for agents taught the older skill: the same tool.")]
    async fn changes_next(
        &self,
        parameters: Parameters<NextParams>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        self.changes_wait(parameters, context).await
    }

    #[tool(
        description = "Claim items as one group with a lease (30 minutes unless leaseMinutes), or renew your \
                       group's lease with groupId. When nothing can be claimed, says why for each item and \
                       from when it is claimable. Later writes on these items carry this claim."
    )]
    async fn changes_claim(&self, Parameters(p): Parameters<ClaimParams>) -> CallToolResult {
        let outcome = self.claim(p).await;
        self.finish(outcome).await
    }

    #[tool(
        description = "Give up a group you claimed: its lease ends and its items not done go back to the queue, \
                       claimable by any agent at once. (The lease also ends by itself when the group's last item \
                       is done.)"
    )]
    async fn changes_release(&self, Parameters(p): Parameters<ReleaseParams>) -> CallToolResult {
        let outcome = async {
            let ctx = self.ctx().await?;
            let input = ReleaseGroupInput {
                project_id: ctx.project_id.clone(),
                group_id: p.group_id,
                claimed_by: p.claimed_by,
            };
            Ok(text(format::released_text(&ctx.api.call::<ReleaseGroup>(input).await?)))
        };
        self.finish(outcome.await).await
    }

    #[tool(
        description = "Show an item: title, body, status and lease, the stage URL and route, the viewport, each \
                       circled element (test id, component, source file:line as of the filed build and at HEAD now, CSS path, \
                       text, computed styles: css \"changed\" by default, \"full\" or \"none\"), console errors, \
                       the page's failed requests and the thread with its options. Returns the screenshot the filer \
                       took and the thread's option and evidence images as images (the screenshot is also \
                       saved to a temporary file, whose path is given).",
        annotations(read_only_hint = true)
    )]
    async fn changes_show(&self, Parameters(p): Parameters<ShowParams>) -> CallToolResult {
        let outcome = self.show(p).await;
        self.finish(outcome).await
    }

    #[tool(
        description = "Ask the person who filed the item a question, optionally with options to pick (at most \
                       6; the answer gives each option's key). The item then waits for the answer: call \
                       changes_wait with claimedBy to wait for it. An option may carry its image ({label, \
                       imagePath or imageBase64}): the question is sent with its images at once. changes_shot \
                       with kind option adds an image to an option later (same label)."
    )]
    async fn changes_ask(&self, Parameters(p): Parameters<AskParams>) -> CallToolResult {
        let outcome = self.ask(p).await;
        self.finish(outcome).await
    }

    #[tool(
        description = "Add a message to an item's thread (the person sees it in the side panel), optionally \
                       with an image from a file or base64. Changes no status."
    )]
    async fn changes_reply(&self, Parameters(p): Parameters<ReplyParams>) -> CallToolResult {
        let outcome = self.reply(p).await;
        self.finish(outcome).await
    }

    #[tool(
        description = "Attach an image (png, jpeg or webp, from a file or base64) to an item's thread: evidence \
                       (a before/after) or an option the person can pick as the answer to your open question."
    )]
    async fn changes_shot(&self, Parameters(p): Parameters<ShotParams>) -> CallToolResult {
        let outcome = self.shot(p).await;
        self.finish(outcome).await
    }

    #[tool(
        description = "Mark an item done after committing the fix: records the branch of the git checkout \
                       this MCP server runs in and the commit on it whose trailer (`Change: #N` or \
                       `Change-Id: <uuid>`) names the item (or commit/branch), with the commit's GitHub or \
                       GitLab page (and pr's) when the remote is there, and adds the note to the thread. \
                       Refused when no commit names the item, or when your lease is lost (another agent has \
                       claimed the item since)."
    )]
    async fn changes_done(&self, Parameters(p): Parameters<DoneParams>) -> CallToolResult {
        let outcome = self.done(p).await;
        self.finish(outcome).await
    }

    #[tool(
        description = "List the queue: each item's number, status, title, route and whether it is claimable \
                       now (or from when, or who holds it). Done and dismissed items only with all: true.",
        annotations(read_only_hint = true)
    )]
    async fn changes_list(&self, Parameters(p): Parameters<ListParams>) -> CallToolResult {
        let outcome = self.list(p).await;
        self.finish(outcome).await
    }
}

/// The tools' bodies: each the same calls as its CLI command.
impl Tools {
    async fn next(&self, p: NextParams) -> Outcome {
        let claimed_by = p.claimed_by.map(|b| b.trim().to_owned()).filter(|b| !b.is_empty());
        if p.claim && claimed_by.is_none() {
            return Err(Error::local("claim needs claimedBy: your agent name"));
        }
        if p.all && !p.claim {
            return Err(Error::local("all needs claim: true"));
        }
        let waited = p.timeout_seconds.unwrap_or(DEFAULT_WAIT_SECS);
        if waited > MAX_WAIT_SECS {
            return Err(Error::local(format!("timeoutSeconds is at most {MAX_WAIT_SECS}")));
        }
        let ctx = self.ctx().await?;
        let w = Wait {
            claimed_by,
            claim: p.claim,
            all: p.all,
            title: None,
            route: p.route,
            lease_minutes: p.lease_minutes,
            stage_id: ctx.stage_id(p.stage.as_deref()).await?,
            deadline: Some(Instant::now() + Duration::from_secs(waited)),
            once: waited == 0,
            interval: POLL_INTERVAL,
        };
        let found = next::wait(&ctx, &w).await?;
        let mut saved = Vec::new();
        if let Found::Answers(items, _) | Found::SentBack(items, _) = &found {
            for (c, thread) in items {
                saved.push(save_images(&ctx, c, thread).await);
            }
        }
        let mut said = found_text(&found, &w, waited, &saved, now(), &local());
        if !matches!(found, Found::Nothing { .. }) {
            said = with_filers_words(&said);
        }
        let said = text(said);
        next::acknowledge(&ctx, &w, &found).await;
        Ok(said)
    }

    async fn claim(&self, p: ClaimParams) -> Outcome {
        let change_ids = match p.change_ids.as_slice() {
            [] => None,
            ids => Some(ids.iter().map(ItemRef::change_id).collect::<Result<Vec<_>, _>>()?),
        };
        let ctx = self.ctx().await?;
        let renewing = p.group_id.is_some();
        let who = Claimant { claimed_by: p.claimed_by.clone(), lease_minutes: p.lease_minutes };
        match ctx.claim(&who, p.group_id, change_ids, p.title).await {
            Ok(out) => {
                ctx.remember_claim(&out);
                Ok(text(claimed_text(&out, renewing, now(), &local())))
            }
            Err(Error::Api { status: 409, body }) if body.code == codes::NOT_CLAIMABLE => {
                Ok(not_claimable(&body, &p.claimed_by))
            }
            Err(e) => Err(e),
        }
    }

    async fn show(&self, p: ShowParams) -> Outcome {
        let change_id = p.change_id.change_id()?;
        let ctx = self.ctx().await?;
        let out = ctx.get_change(&change_id, None).await?;
        let group = ctx.group_of(&out.change).await?;
        // Saved in the image cache as `redline show` does: the text gives their paths.
        let saved = save_images(&ctx, &out.change, &out.thread).await;
        let mut images: Vec<(String, Option<&String>)> = Vec::new();
        if out.change.screenshot_url.is_some() {
            images.push((
                format!("The screenshot filed with #{}:", out.change.short_id),
                saved.screenshot.as_ref(),
            ));
        }
        let open = open_question(out.change.status, &out.thread);
        for a in out.thread.iter().flat_map(|m| &m.attachments).filter(|a| a.url.is_some()) {
            let caption = match a.kind {
                AttachmentKind::Option => {
                    let of = open
                        .as_ref()
                        .and_then(|q| q.choice(&a.key))
                        .map(|c| format!(" (the open question's choice \"{}\", key {})", c.label, c.key));
                    format!("Option image {}: {}{}", a.key, a.label, of.unwrap_or_default())
                }
                AttachmentKind::Evidence => format!("Evidence image {}: {}", a.key, a.label),
            };
            images.push((caption, saved.attachments.get(&a.key)));
        }
        // Anchors are followed in the checkout the MCP server was started in.
        let anchors_now = Follower::here().follow_change(&out.change);
        let css = p.css.unwrap_or_default();
        let shown = format::show(&out, group.as_ref(), &saved, css, now(), &local(), &anchors_now);
        let mut content = vec![ContentBlock::text(format::terminal_safe(&with_filers_words(&shown)))];
        for (i, (caption, path)) in images.into_iter().enumerate() {
            if i == SHOW_IMAGES_MAX {
                content.push(ContentBlock::text(format!(
                    "(More images are in the thread; their paths are above. At most {SHOW_IMAGES_MAX} are shown.)"
                )));
                break;
            }
            let caption = format::terminal_safe(&caption);
            let read = path.map(|p| std::fs::read(p).map_err(|e| format!("reading {p}: {e}")));
            match read.map(|r| r.map(|bytes| (ImageType::sniff(&bytes), bytes))) {
                Some(Ok((Some(kind), bytes))) => {
                    content.push(ContentBlock::text(caption));
                    content.push(ContentBlock::image(STANDARD.encode(&bytes), kind.content_type()));
                }
                Some(Ok((None, _))) => {
                    content.push(ContentBlock::text(format!("{caption} not a png, jpeg or webp image")))
                }
                Some(Err(e)) => {
                    content.push(ContentBlock::text(format!("{caption} could not be read ({e})")))
                }
                None => content.push(ContentBlock::text(format!("{caption} could not be downloaded"))),
            }
        }
        Ok(CallToolResult::success(content))
    }

    async fn ask(&self, p: AskParams) -> Outcome {
        let (labels, images) = options_with_images(p.options)?;
        check_options(&labels)?;
        let ctx = self.ctx().await?;
        let (item, lease) = (p.change_id.as_typed(), Lease::by(p.author_name));
        let writer = Writer::new(&ctx, &item, &lease);
        let by = writer.author();
        let message = writer.ask(p.question, labels, images).await?;
        Ok(text(format!(
            "Asked on #{}; it now waits for an answer.{}\nWait for it: changes_wait with claimedBy {by:?}.",
            p.change_id.name(),
            format::asked_options(&message)
        )))
    }

    async fn reply(&self, p: ReplyParams) -> Outcome {
        let image = image_input(p.image_path.as_deref(), p.image_base64.as_deref())?;
        let label = p.image_label.or_else(|| p.image_path.as_deref().map(|path| file_label(Path::new(path))));
        let ctx = self.ctx().await?;
        let (item, lease) = (p.change_id.as_typed(), Lease::by(p.author_name));
        let image = image.map(|image| (image, label.unwrap_or_else(|| "image".to_owned())));
        Writer::new(&ctx, &item, &lease).reply(p.message, image).await?;
        Ok(text(format!("Replied on #{}.", p.change_id.name())))
    }

    async fn shot(&self, p: ShotParams) -> Outcome {
        let image = image_input(p.image_path.as_deref(), p.image_base64.as_deref())?
            .ok_or_else(|| Error::local("give the image: imagePath or imageBase64"))?;
        let kind = match p.kind {
            ShotKindParam::Evidence => AttachmentKind::Evidence,
            ShotKindParam::Option => AttachmentKind::Option,
        };
        let ctx = self.ctx().await?;
        let (item, lease) = (p.change_id.as_typed(), Lease::by(p.author_name));
        let out = Writer::new(&ctx, &item, &lease).shot(p.label, kind, image).await?;
        Ok(text(shot_text(&out, kind, &item)))
    }

    async fn done(&self, p: DoneParams) -> Outcome {
        let ctx = self.ctx().await?;
        let cwd = std::env::current_dir()
            .map_err(|e| Error::local(format!("reading the current directory: {e}")))?;
        let (item, lease) = (p.change_id.as_typed(), Lease::by(p.author_name));
        let done = Writer::new(&ctx, &item, &lease).done(p.note, p.commit, p.branch, p.pr, &cwd).await?;
        let warning = done
            .no_checkout
            .map(|dir| {
                format!("\n{dir} is not a git checkout with a commit: no commit was recorded (pass commit).")
            })
            .unwrap_or_default();
        Ok(text(format!("{}{warning}", done_text(&done.change))))
    }

    async fn list(&self, p: ListParams) -> Outcome {
        let ctx = self.ctx().await?;
        let stage_id = ctx.stage_id(p.stage.as_deref()).await?;
        let input = ListChangesInput {
            stage_id,
            include_done: p.all,
            limit: Some(p.limit.unwrap_or(50)),
            cursor: p.cursor,
            ..Default::default()
        };
        let out = ctx.list(input).await?;
        if out.changes.is_empty() {
            return Ok(text(if p.all { "The queue is empty." } else { "Nothing open." }));
        }
        let now = now();
        let mut lines: Vec<String> =
            out.changes.iter().map(|c| format::list_line(c, &out.groups, now, &local())).collect();
        if let Some(cursor) = &out.next_cursor {
            let next = format!("changes_list with cursor {cursor:?} and the same all and stage");
            lines.push(format::more_line(out.changes.len(), out.total, &next));
        }
        Ok(text(with_filers_words(&lines.join("\n"))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR";

    #[test]
    fn reads_images_from_base64_and_data_urls_only_when_they_are_images() {
        let b64 = STANDARD.encode(PNG);
        let Image { kind, base64: again } = image_input(None, Some(&b64)).unwrap().unwrap();
        assert_eq!((kind, again.as_str()), (ImageType::Png, b64.as_str()));
        let url = format!("data:image/png;base64,{b64}");
        assert_eq!(image_input(None, Some(&url)).unwrap().unwrap().kind, ImageType::Png);
        assert!(image_input(None, None).unwrap().is_none());
        let both = image_input(Some("a.png"), Some(&b64)).unwrap_err().to_string();
        assert!(both.contains("not both"), "{both}");
        let text = STANDARD.encode(b"hello");
        assert!(image_input(None, Some(&text)).unwrap_err().to_string().contains("not a png, jpeg or webp"));
        assert!(image_input(None, Some("%%%")).unwrap_err().to_string().contains("not base64"));
    }
}
