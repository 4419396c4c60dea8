//! The thread's rules (`shared/protocol.md`, "Message" and "Options"): what a message
//! is, which question is open, what its choices are, and what an answer says. The
//! server validates answers with them, the panel shows the choices, and the agent's CLI
//! and MCP tools print them: one reading of the thread for all three.

use crate::{Attachment, AttachmentKind, AuthorKind, ChangeStatus, Message, MessageType, Verdict};

impl Message {
    /// What the message is: its `type` when the sender stated one; otherwise (a server
    /// such as Fabric that does not send it) a user message is an answer when it chose
    /// an option, else a reply; an agent message holding one image whose label is its
    /// body is a shot; any other agent message is a question when it offers text options,
    /// else a reply.
    pub fn role(&self) -> MessageType {
        if let Some(t) = self.message_type {
            return t;
        }
        match self.author_kind {
            AuthorKind::User if self.chosen_option.is_some() => MessageType::Answer,
            AuthorKind::User => MessageType::Reply,
            AuthorKind::Agent => match self.attachments.as_slice() {
                [one] if one.url.is_some() && one.label == self.body => MessageType::Shot,
                all if all.iter().any(|a| a.kind == AttachmentKind::Option) => MessageType::Question,
                _ => MessageType::Reply,
            },
        }
    }

    /// The message's options (`kind: option`), in the order given.
    pub fn options(&self) -> impl Iterator<Item = &Attachment> {
        self.attachments.iter().filter(|a| a.kind == AttachmentKind::Option)
    }
}

/// One thing the person can pick: a text option, its image when a shot carries the same
/// label, or an option shot of its own.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    /// The key an answer sends as `chosenOption`: the text option's when there is one.
    pub key: String,
    pub label: String,
    /// The image's signed URL, when a shot shows this choice (read outputs only).
    pub image_url: Option<String>,
    /// The shot's key, when a shot shows this choice.
    pub image_key: Option<String>,
    /// Every option key that names this choice: `key`, then the keys of the shots
    /// labelled like it.
    pub keys: Vec<String>,
}

/// The item's open question and its choices.
#[derive(Clone, Debug, PartialEq)]
pub struct OpenQuestion<'a> {
    pub message: &'a Message,
    pub choices: Vec<Choice>,
}

/// Labels are one choice when equal, trimmed, ignoring case.
pub fn same_label(a: &str, b: &str) -> bool {
    a.trim().to_lowercase() == b.trim().to_lowercase()
}

/// The open question: the latest `question` message while the item is `needs_answer`;
/// its choices are its text options, then every option shot attached after it whose
/// label is new (a shot labelled like an earlier choice is that choice's image).
pub fn open_question(status: ChangeStatus, thread: &[Message]) -> Option<OpenQuestion<'_>> {
    if status != ChangeStatus::NeedsAnswer {
        return None;
    }
    let at = thread.iter().rposition(|m| m.role() == MessageType::Question)?;
    let message = &thread[at];
    let mut choices: Vec<Choice> = Vec::new();
    let shots =
        thread[at + 1..].iter().filter(|m| m.author_kind == AuthorKind::Agent).flat_map(Message::options);
    for option in message.options().chain(shots) {
        match choices.iter_mut().find(|c| same_label(&c.label, &option.label)) {
            Some(choice) => {
                choice.keys.push(option.key.clone());
                if choice.image_key.is_none() && option.url.is_some() {
                    choice.image_key = Some(option.key.clone());
                    choice.image_url = option.url.clone();
                }
            }
            None => choices.push(Choice {
                key: option.key.clone(),
                label: option.label.trim().to_owned(),
                image_url: option.url.clone(),
                image_key: option.url.is_some().then(|| option.key.clone()),
                keys: vec![option.key.clone()],
            }),
        }
    }
    Some(OpenQuestion { message, choices })
}

impl OpenQuestion<'_> {
    /// The choice an answer's `chosenOption` names: by its key, or by the key of a shot
    /// that shows it (the server records the choice's own key).
    pub fn choice(&self, key: &str) -> Option<&Choice> {
        self.choices.iter().find(|c| c.keys.iter().any(|k| k == key))
    }
}

/// The label of option `key` anywhere in a thread (an answer names one it was offered).
pub fn option_label<'a>(thread: &'a [Message], key: &str) -> Option<&'a str> {
    thread.iter().flat_map(Message::options).find(|a| a.key == key).map(|a| a.label.as_str())
}

/// What an answer message says: the person's words, repeating the chosen label when
/// they do not already (`"Dark: but keep the logo"`); the label alone without words.
pub fn answer_text(words: &str, chosen_label: Option<&str>) -> String {
    let words = words.trim();
    match chosen_label.map(str::trim) {
        None => words.to_owned(),
        Some(label) if words.is_empty() => label.to_owned(),
        Some(label) if words.to_lowercase().contains(&label.to_lowercase()) => words.to_owned(),
        Some(label) => format!("{label}: {words}"),
    }
}

/// Whether an item's thread waits on the agent: its last message is the person's.
pub fn is_answered(thread: &[Message]) -> bool {
    thread.last().is_some_and(|m| m.author_kind == AuthorKind::User)
}

/// The label of a `verdict` message's after-screenshot (`verifyChange`'s `screenshotKey`).
pub const VERDICT_SHOT_LABEL: &str = "after";

/// What a `verdict` message says: the verdict, then the person's words
/// (`"Still wrong: the total is still red"`, `"Fixed"`), so a thread reads on its own.
pub fn verdict_text(verdict: Verdict, words: &str) -> String {
    let said = verdict_said(verdict);
    match words.trim() {
        "" => said.to_owned(),
        words => format!("{said}: {words}"),
    }
}

/// How a `verdict` message of `verdict` starts ([`verdict_text`]): what tells the two
/// verdicts apart in a stored thread (`getStats` counts the `still_wrong` ones).
pub fn verdict_said(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Fixed => "Fixed",
        Verdict::StillWrong => "Still wrong",
    }
}

/// The `still_wrong` verdict that sent an item back to the agents, while nobody has
/// taken it up again: the item is `open` (a `still_wrong` verdict reopens it and
/// `claim` moves it on) and its thread's last message is a verdict.
pub fn sent_back(status: ChangeStatus, thread: &[Message]) -> Option<&Message> {
    if status != ChangeStatus::Open {
        return None;
    }
    thread.last().filter(|m| m.role() == MessageType::Verdict)
}

/// The person's messages in an item's thread that wait to be shown to the item's agent
/// (docs/protocol-additions.md, "Answers reach the agent"): every answer not in `shown`
/// while the item is with the agent (`in_progress`, or `needs_answer` again after a new
/// question), and, while a verdict has sent it back (`open`), the latest verdict if not
/// in `shown`. What the agent wrote since does not matter; what it was shown does.
///
/// `shown` is `None` from a server that does not keep what was shown (such as Fabric):
/// then the person's last message waits while they spoke last, as the protocol says.
pub fn undelivered<'a>(
    status: ChangeStatus,
    thread: &'a [Message],
    shown: Option<&[String]>,
) -> Vec<&'a Message> {
    let Some(shown) = shown else {
        let last = match status {
            ChangeStatus::Open => sent_back(status, thread),
            ChangeStatus::InProgress if is_answered(thread) => thread.last(),
            _ => None,
        };
        return last.into_iter().collect();
    };
    let unseen = |m: &&Message| !shown.contains(&m.message_id);
    match status {
        ChangeStatus::InProgress | ChangeStatus::NeedsAnswer => thread
            .iter()
            .filter(|m| m.author_kind == AuthorKind::User && m.role() == MessageType::Answer)
            .filter(unseen)
            .collect(),
        ChangeStatus::Open => thread
            .iter()
            .rev()
            .find(|m| m.role() == MessageType::Verdict)
            .filter(unseen)
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Timestamp;

    fn message(
        kind: AuthorKind,
        t: Option<MessageType>,
        body: &str,
        attachments: Vec<Attachment>,
    ) -> Message {
        Message {
            message_id: format!("m-{body}"),
            change_id: "c".into(),
            author_kind: kind,
            author_name: None,
            body: body.into(),
            attachments,
            chosen_option: None,
            created_at: Timestamp::from_unix_millis(0),
            message_type: t,
        }
    }

    fn text(key: &str, label: &str) -> Attachment {
        Attachment { key: key.into(), label: label.into(), kind: AttachmentKind::Option, url: None }
    }

    fn shot(key: &str, label: &str, kind: AttachmentKind) -> Message {
        let a = Attachment { key: key.into(), label: label.into(), kind, url: Some(format!("/blobs/{key}")) };
        message(AuthorKind::Agent, Some(MessageType::Shot), label, vec![a])
    }

    fn ask(body: &str, options: &[(&str, &str)]) -> Message {
        let options = options.iter().map(|(k, l)| text(k, l)).collect();
        message(AuthorKind::Agent, Some(MessageType::Question), body, options)
    }

    fn answer(body: &str) -> Message {
        message(AuthorKind::User, Some(MessageType::Answer), body, vec![])
    }

    fn ids(messages: Vec<&Message>) -> Vec<&str> {
        messages.into_iter().map(|m| m.message_id.as_str()).collect()
    }

    #[test]
    fn an_answer_waits_for_the_agent_until_shown_whatever_the_agent_wrote_since() {
        // Answered before the last option shot: the agent spoke last, the answer still waits.
        let thread = vec![
            ask("Which?", &[("o1", "Red"), ("o2", "Blue")]),
            answer("Red"),
            shot("s", "Blue", AttachmentKind::Option),
        ];
        assert_eq!(ids(undelivered(ChangeStatus::InProgress, &thread, Some(&[]))), ["m-Red"]);
        assert_eq!(
            ids(undelivered(ChangeStatus::InProgress, &thread, Some(&["m-Red".into()]))),
            Vec::<&str>::new()
        );
        // A second question asked before the first answer was shown: it still waits.
        let mut asked_again = thread.clone();
        asked_again.push(ask("And the border?", &[]));
        assert_eq!(ids(undelivered(ChangeStatus::NeedsAnswer, &asked_again, Some(&[]))), ["m-Red"]);
        // Fabric keeps nothing of the kind: the person speaking last is the rule.
        assert!(undelivered(ChangeStatus::InProgress, &thread, None).is_empty());
        assert_eq!(ids(undelivered(ChangeStatus::InProgress, &thread[..2], None)), ["m-Red"]);
        assert!(undelivered(ChangeStatus::Done, &thread[..2], Some(&[])).is_empty());
    }

    #[test]
    fn a_verdict_that_sent_the_item_back_waits_until_shown() {
        let verdict = message(AuthorKind::User, Some(MessageType::Verdict), "Still wrong: red", vec![]);
        let thread = vec![
            answer("Red"),
            verdict,
            message(AuthorKind::Agent, Some(MessageType::Reply), "looking", vec![]),
        ];
        let shown = ["m-Red".to_owned()];
        assert_eq!(ids(undelivered(ChangeStatus::Open, &thread, Some(&shown))), ["m-Still wrong: red"]);
        let shown = ["m-Still wrong: red".to_owned()];
        assert!(undelivered(ChangeStatus::Open, &thread, Some(&shown)).is_empty());
    }

    #[test]
    fn an_option_image_in_the_question_itself_is_that_options_image() {
        let mut question = ask("Which?", &[("o1", "Red"), ("o2", "Blue")]);
        question.attachments.push(Attachment {
            key: "b2".into(),
            label: "blue".into(),
            kind: AttachmentKind::Option,
            url: Some("/blobs/b2".into()),
        });
        let thread = [question];
        let open = open_question(ChangeStatus::NeedsAnswer, &thread).unwrap();
        let choices: Vec<(&str, Option<&str>)> =
            open.choices.iter().map(|c| (c.key.as_str(), c.image_key.as_deref())).collect();
        assert_eq!(choices, [("o1", None), ("o2", Some("b2"))]);
        assert_eq!(open.choice("b2").unwrap().key, "o2");
    }

    #[test]
    fn the_open_question_is_the_latest_question_not_the_latest_shot() {
        let thread = vec![
            ask("Which header?", &[("o1", "Dark"), ("o2", "Light"), ("o3", "Keep it dark, add an accent")]),
            shot("s1", "dark", AttachmentKind::Option),
            shot("s2", "Light ", AttachmentKind::Option),
            shot("s3", "Keep it dark, add an accent", AttachmentKind::Option),
        ];
        let open = open_question(ChangeStatus::NeedsAnswer, &thread).unwrap();
        assert_eq!(open.message.body, "Which header?");
        let keys: Vec<(&str, Option<&str>)> =
            open.choices.iter().map(|c| (c.key.as_str(), c.image_key.as_deref())).collect();
        assert_eq!(keys, [("o1", Some("s1")), ("o2", Some("s2")), ("o3", Some("s3"))]);
        assert_eq!(open.choices[0].label, "Dark", "the text option's label is shown");
        assert_eq!(open.choice("s2").unwrap().key, "o2", "a shot's key names its text option");
        assert!(open.choice("nope").is_none());
        assert!(open_question(ChangeStatus::InProgress, &thread).is_none());
    }

    #[test]
    fn extra_option_shots_are_further_choices_and_evidence_is_not_a_choice() {
        let thread = vec![
            shot("old", "Before the question", AttachmentKind::Option),
            ask("Which?", &[("o1", "A")]),
            shot("s1", "B", AttachmentKind::Option),
            shot("e1", "A", AttachmentKind::Evidence),
            shot("s2", "b", AttachmentKind::Option),
        ];
        let open = open_question(ChangeStatus::NeedsAnswer, &thread).unwrap();
        let choices: Vec<(&str, &str, Option<&str>)> =
            open.choices.iter().map(|c| (c.key.as_str(), c.label.as_str(), c.image_key.as_deref())).collect();
        assert_eq!(choices, [("o1", "A", None), ("s1", "B", Some("s1"))]);
        assert!(open.choice("old").is_none(), "a shot from before the question is not its option");
        assert_eq!(open.choice("s2").unwrap().key, "s1", "a second shot of a label is the same choice");
    }

    #[test]
    fn a_later_question_replaces_the_earlier_one() {
        let mut answer = message(AuthorKind::User, Some(MessageType::Answer), "A", vec![]);
        answer.chosen_option = Some("o1".into());
        let thread = vec![ask("First?", &[("o1", "A")]), answer, ask("Second?", &[("o2", "C")])];
        let open = open_question(ChangeStatus::NeedsAnswer, &thread).unwrap();
        assert_eq!(open.message.body, "Second?");
        assert!(open.choice("o1").is_none());
        assert_eq!(option_label(&thread, "o1"), Some("A"));
    }

    #[test]
    fn untyped_messages_from_other_servers_get_a_role() {
        let mut m = ask("Which?", &[("o1", "A")]);
        m.message_type = None;
        assert_eq!(m.role(), MessageType::Question);
        let mut s = shot("s1", "A", AttachmentKind::Option);
        s.message_type = None;
        assert_eq!(s.role(), MessageType::Shot);
        let plain = message(AuthorKind::Agent, None, "Looking into it", vec![]);
        assert_eq!(plain.role(), MessageType::Reply);
        let mut user = message(AuthorKind::User, None, "A", vec![]);
        assert_eq!(user.role(), MessageType::Reply);
        user.chosen_option = Some("o1".into());
        assert_eq!(user.role(), MessageType::Answer);
        let thread = vec![m, s];
        let open = open_question(ChangeStatus::NeedsAnswer, &thread).unwrap();
        assert_eq!(open.message.body, "Which?");
        assert_eq!(open.choices.len(), 1);
    }

    #[test]
    fn an_answer_repeats_the_chosen_label() {
        assert_eq!(answer_text("", Some("Dark")), "Dark");
        assert_eq!(answer_text("  ", Some(" Dark ")), "Dark");
        assert_eq!(answer_text("keep the logo", Some("Dark")), "Dark: keep the logo");
        assert_eq!(answer_text("The dark one, please", Some("Dark")), "The dark one, please");
        assert_eq!(answer_text(" just words ", None), "just words");
    }

    #[test]
    fn a_verdict_says_what_it_is_and_sends_back_only_a_reopened_item() {
        assert_eq!(verdict_text(Verdict::Fixed, "  "), "Fixed");
        assert_eq!(verdict_text(Verdict::Fixed, "looks right"), "Fixed: looks right");
        assert_eq!(verdict_text(Verdict::StillWrong, " still red "), "Still wrong: still red");
        let verdict = message(AuthorKind::User, Some(MessageType::Verdict), "Still wrong: red", vec![]);
        let note = message(AuthorKind::Agent, Some(MessageType::Note), "Done", vec![]);
        let thread = vec![note.clone(), verdict.clone()];
        assert_eq!(sent_back(ChangeStatus::Open, &thread).map(|m| m.body.as_str()), Some("Still wrong: red"));
        assert!(sent_back(ChangeStatus::Done, &thread).is_none(), "a fixed item stays done");
        assert!(sent_back(ChangeStatus::Claimed, &thread).is_none(), "taken up again");
        assert!(sent_back(ChangeStatus::Open, &[verdict, note]).is_none());
    }

    #[test]
    fn message_types_round_trip() {
        for t in MessageType::ALL {
            assert_eq!(MessageType::from_wire(t.as_str()), Some(t));
        }
        assert_eq!(MessageType::from_wire("other"), None);
    }
}
