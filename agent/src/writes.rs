//! The agent's writes to an item, shared by the CLI and the MCP tools: each fills in
//! the lease it is made under and its author (see [`Ctx::write_lease`]), checks what it
//! can before anything is sent, and makes one RPC. The callers only read their
//! arguments and say what happened.

use std::path::Path;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use redline_protocol::*;

use super::client::Error;
use super::forge::{self, Forge};
use super::images;
use super::rules::parse_item;
use super::session::{Ctx, Lease, WriteUnder};
use super::{changeset, git};

/// Images of a question's options, each with the label of the option it shows.
pub type OptionImages = Vec<(String, Image)>;

/// An image to send: its type, read from its bytes, and the bytes in base64.
#[derive(Debug)]
pub struct Image {
    pub kind: ImageType,
    pub base64: String,
}

/// Writes on one item, as typed (`3`, `#3` or an id), under a lease resolved once.
pub struct Writer<'a> {
    ctx: &'a Ctx,
    item: &'a str,
    under: WriteUnder,
}

/// What `done` recorded.
pub struct Done {
    pub change: Change,
    /// The folder that was not a git checkout with a commit, so no commit was recorded.
    pub no_checkout: Option<String>,
}

/// The options an `ask` offers: at most [`OPTIONS_MAX`], none empty.
pub fn check_options(options: &[String]) -> Result<(), Error> {
    if options.len() > OPTIONS_MAX {
        return Err(Error::local(format!("at most {OPTIONS_MAX} options (got {})", options.len())));
    }
    if options.iter().any(|o| o.trim().is_empty()) {
        return Err(Error::local("an option must not be empty"));
    }
    Ok(())
}

/// Option images as an `ask` sends them: each names one of `options` (trimmed, ignoring
/// case), at most one per option, and together at most [`IMAGE_MAX_BYTES`].
pub fn check_option_images(options: &[String], images: &[(String, Image)]) -> Result<(), Error> {
    for (k, (label, _)) in images.iter().enumerate() {
        if !options.iter().any(|o| same_label(o, label)) {
            let offered: Vec<&str> = options.iter().map(String::as_str).collect();
            return Err(Error::local(format!(
                "the image for {label:?} names no option (the options: {})",
                if offered.is_empty() { "none".to_owned() } else { offered.join(", ") }
            )));
        }
        if images[..k].iter().any(|(l, _)| same_label(l, label)) {
            return Err(Error::local(format!("two images for the option {label:?}")));
        }
    }
    let bytes: usize = images.iter().map(|(_, i)| i.base64.len() / 4 * 3).sum();
    if bytes > IMAGE_MAX_BYTES {
        return Err(Error::local(format!(
            "a question's option images are at most {} MiB together",
            IMAGE_MAX_BYTES >> 20
        )));
    }
    Ok(())
}

impl<'a> Writer<'a> {
    /// Writes on `item` under `lease`, its missing parts found now (see
    /// [`Ctx::write_lease`]).
    pub fn new(ctx: &'a Ctx, item: &'a str, lease: &Lease) -> Writer<'a> {
        Writer { ctx, item, under: ctx.write_lease(item, lease) }
    }

    /// The item as the server takes it, and the group, fence and author of the write.
    fn prepare(&self) -> Result<(String, Option<String>, Option<u64>, String), Error> {
        let change_id = parse_item(self.item).map_err(Error::Local)?;
        let WriteUnder { group_id, fence, author } = self.under.clone();
        Ok((change_id, group_id, fence, author))
    }

    /// The name the write is made as.
    pub fn author(&self) -> String {
        self.under.author.clone()
    }

    /// Asks `question` offering `options`, with `images` of some of them (each by its
    /// option's label), all in one write: the question never shows without its images.
    pub async fn ask(
        &self,
        question: String,
        options: Vec<String>,
        images: OptionImages,
    ) -> Result<Message, Error> {
        check_options(&options)?;
        check_option_images(&options, &images)?;
        let (change_id, group_id, fence, author_name) = self.prepare()?;
        let option_images: Vec<OptionImage> = images
            .into_iter()
            .map(|(label, image)| OptionImage {
                label,
                content_type: image.kind.content_type().to_owned(),
                image_base64: image.base64,
            })
            .collect();
        let input = AskChangeQuestionInput {
            change_id,
            project_id: Some(self.ctx.project_id.clone()),
            question,
            author_name,
            option: (!options.is_empty()).then_some(options),
            option_images: (!option_images.is_empty()).then_some(option_images),
            group_id,
            fence,
        };
        Ok(self.ctx.api.call::<AskChangeQuestion>(input).await?.message)
    }

    pub async fn reply(&self, body: String, image: Option<(Image, String)>) -> Result<Message, Error> {
        let (change_id, group_id, fence, author_name) = self.prepare()?;
        let (content_type, image_base64, image_label) = match image {
            Some((image, label)) => {
                (Some(image.kind.content_type().to_owned()), Some(image.base64), Some(label))
            }
            None => (None, None, None),
        };
        let input = ReplyToChangeInput {
            change_id,
            project_id: Some(self.ctx.project_id.clone()),
            body,
            author_name,
            content_type,
            image_base64,
            image_label,
            group_id,
            fence,
        };
        Ok(self.ctx.api.call::<ReplyToChange>(input).await?.message)
    }

    pub async fn shot(
        &self,
        label: String,
        kind: AttachmentKind,
        image: Image,
    ) -> Result<AttachChangeShotOutput, Error> {
        let (change_id, group_id, fence, author_name) = self.prepare()?;
        let input = AttachChangeShotInput {
            change_id,
            project_id: Some(self.ctx.project_id.clone()),
            label,
            kind,
            content_type: image.kind.content_type().to_owned(),
            image_base64: image.base64,
            author_name,
            group_id,
            fence,
        };
        self.ctx.api.call::<AttachChangeShot>(input).await
    }

    /// Marks the item done with `commit` (resolved in the checkout at `cwd`), or else
    /// the newest commit of the checkout's branch whose trailer names the item (refused
    /// when there is none); the branch given, else the checkout's. When the checkout's
    /// remote is on GitHub or GitLab, the commit's page goes with it, and the pull
    /// request's: `pr`, else the one the commit's `PR:` or `Pull-Request:` trailer names.
    pub async fn done(
        &self,
        note: Option<String>,
        commit: Option<String>,
        branch: Option<String>,
        pr: Option<u64>,
        cwd: &Path,
    ) -> Result<Done, Error> {
        if pr == Some(0) {
            return Err(Error::local("pr: a pull request's number is 1 or more"));
        }
        let (change_id, group_id, fence, author_name) = self.prepare()?;
        let mut no_checkout = None;
        let head = git::head(cwd);
        let (head_commit, branch) = match (commit, &head) {
            (Some(c), _) => (Some(git::resolve(cwd, &c).unwrap_or(c)), branch),
            (None, Some(head)) => {
                (Some(self.commit_naming(&change_id, cwd).await?), branch.or(head.branch.clone()))
            }
            (None, None) => {
                no_checkout = Some(cwd.display().to_string());
                (None, branch)
            }
        };
        let forge = git::remote_url(cwd, head.as_ref().and_then(|h| h.branch.as_deref()))
            .and_then(|url| Forge::from_remote(&url));
        let commit_url = forge.as_ref().zip(head_commit.as_deref()).and_then(|(f, sha)| f.commit_url(sha));
        let pr = pr.or_else(|| {
            let trailers = git::commit_trailers(cwd, head_commit.as_deref()?)?;
            forge::pull_request_in_trailers(&trailers)
        });
        let pull_request_url = forge.as_ref().zip(pr).map(|(f, n)| f.pull_request_url(n));
        let input = CompleteChangeInput {
            change_id,
            project_id: Some(self.ctx.project_id.clone()),
            branch,
            head_commit,
            note,
            author_name: Some(author_name),
            group_id,
            fence,
            commit_url,
            pull_request_url,
        };
        let change = self.ctx.api.call::<CompleteChange>(input).await?.change;
        Ok(Done { change, no_checkout })
    }

    /// The commit on the checkout's branch whose `Change-Id:` or `Change:` trailer
    /// names the item, so items close in any order whatever `HEAD` is.
    async fn commit_naming(&self, change_id: &str, cwd: &Path) -> Result<String, Error> {
        let input = GetChangeInput {
            change_id: change_id.to_owned(),
            project_id: Some(self.ctx.project_id.clone()),
            claimed_by: None,
            ..GetChangeInput::default()
        };
        let change = self.ctx.api.call::<GetChange>(input).await?.change;
        let log = git::trailers_log(cwd).map_err(Error::Local)?;
        changeset::commit_with_trailer(&log, &change.change_id, &change.short_id)
            .ok_or_else(|| Error::local(changeset::no_commit_message(&change)))
    }
}

/// An image file as the protocol takes it: its type from its bytes, and base64.
pub(crate) fn read_image(path: &Path) -> Result<Image, Error> {
    image_of(path, images::read_bounded(path).map_err(Error::Local)?)
}

/// The image file `path` held `bytes`: its type from them, and base64.
pub(crate) fn image_of(path: &Path, bytes: Vec<u8>) -> Result<Image, Error> {
    let kind = ImageType::sniff(&bytes)
        .ok_or_else(|| Error::local(format!("{} is not a png, jpeg or webp image", path.display())))?;
    Ok(Image { kind, base64: STANDARD.encode(&bytes) })
}

/// An image's label when none is given: its file's name.
pub(crate) fn file_label(path: &Path) -> String {
    path.file_name().map_or_else(|| "image".to_owned(), |n| n.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn png() -> Image {
        Image { kind: ImageType::Png, base64: "iVBORw0KGgo=".into() }
    }

    #[test]
    fn option_images_name_an_option_once() {
        let options = ["Red".to_owned(), "Blue".to_owned()];
        assert!(check_option_images(&options, &[("red ".into(), png()), ("Blue".into(), png())]).is_ok());
        let stray = check_option_images(&options, &[("Green".into(), png())]).unwrap_err().to_string();
        assert!(stray.contains("\"Green\" names no option (the options: Red, Blue)"), "{stray}");
        let twice = check_option_images(&options, &[("Red".into(), png()), ("RED".into(), png())]);
        assert!(twice.unwrap_err().to_string().contains("two images for the option \"RED\""));
    }

    #[test]
    fn options_are_checked_before_anything_is_sent() {
        assert!(check_options(&[]).is_ok());
        assert!(check_options(&["A".into(), "B".into()]).is_ok());
        let seven: Vec<String> = (0..7).map(|i| i.to_string()).collect();
        assert!(check_options(&seven).unwrap_err().to_string().contains("at most 6 options (got 7)"));
        assert!(
            check_options(&["A".into(), " ".into()]).unwrap_err().to_string().contains("must not be empty")
        );
    }
}
