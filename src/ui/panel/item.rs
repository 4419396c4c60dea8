//! One item in the panel: what was filed (title, body, screenshot, elements with their
//! computed styles, failed requests, console errors), the thread with the agent,
//! answering its open question (its choices, with an image where a shot shows one, and
//! words), dismiss/reopen, and "Show on page". Server
//! text is always text. Which question is open and what its choices are is the
//! protocol's reading of the thread (`redline_protocol::open_question`).

use leptos::prelude::*;
use redline_protocol::rpc::{
    AnswerChangeQuestion, AnswerChangeQuestionInput, GetChange, GetChangeInput, GetChangeOutput,
    SetChangeStatus, SetChangeStatusInput,
};
use redline_protocol::{
    Attachment, AttachmentKind, AuthorKind, Change, ChangeStatus, Choice, Element, ElementStyles,
    FailedRequest, Message, Timestamp, open_question, option_label,
};

use super::reading::reload;
use super::{Ctx, ErrorLine, check};
use crate::rules::chip::ChipName;
use crate::rules::locate::Located;
use crate::rules::queue;

#[component]
pub fn ItemView(change_id: String) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    // What a check saw outlives the re-reads that render the item again.
    let checked = check::CheckState::new();
    let detail = LocalResource::new({
        let change_id = change_id.clone();
        move || {
            ctx.store.version.track();
            let client = ctx.client.get_value();
            let input = GetChangeInput { change_id: change_id.clone(), ..GetChangeInput::default() };
            async move { client.call::<GetChange>(input).await.map_err(|e| e.to_string()) }
        }
    });
    ui_view! {
        <article class="item" aria-label="Item">
            <button type="button" class="back" on:click=move |_| ctx.open.set(None) aria-label="Back to the queue (Esc)">
                "\u{2190} Queue"
            </button>
            {move || match detail.get() {
                None => ui_view! { <p class="hint" role="status">"Reading the item…"</p> }.into_any(),
                Some(Err(message)) => ui_view! {
                    <ErrorLine message=format!("Could not read the item: {message}") retry=Callback::new(move |_| detail.refetch()) />
                }.into_any(),
                Some(Ok(output)) => ui_view! { <ItemDetail output checked /> }.into_any(),
            }}
        </article>
    }
}

#[component]
fn ItemDetail(output: GetChangeOutput, checked: check::CheckState) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let GetChangeOutput { change, thread, stage_url, refind, .. } = output;
    // What this panel re-found is the latest; else what the server keeps.
    let refind = use_context::<super::refind::Found>()
        .and_then(|found| found.of_untracked(&change.change_id))
        .or(refind);
    let now = move || Timestamp::from_unix_millis(ctx.now.get());
    let created = change.created_at;
    let title = change.title.clone();
    let status = change.status;
    let elements = change.capture.as_ref().map(|c| c.elements.clone()).unwrap_or_default();
    let git_sha = change.git_sha.clone();
    let question = open_question(status, &thread).map(|open| (open.message.body.clone(), open.choices));
    let build = queue::build_line(change.branch.as_deref(), change.head_commit.as_deref());
    let links = queue::fix_links(&change);
    let meta = {
        let mut parts = vec![format!("filed by {}", change.filed_by.as_deref().unwrap_or("someone"))];
        if let Some(route) = &change.route {
            parts.push(format!("on {route}"));
        }
        if let Some(url) = &stage_url {
            parts.push(url.clone());
        }
        parts.join(" · ")
    };
    ui_view! {
        <header class="item-head">
            <h2 data-testid="item-title" class=move || if status == ChangeStatus::Done { "done" } else { "" }>
                <span class="number">{redline_protocol::display_short_id(&change.short_id)}</span>" "{title.clone()}
            </h2>
            <p class="hint">
                <span class=format!("status {}", status.as_str()) data-testid="item-status">{status_label(status)}</span>
                " · "{meta}" · "{move || queue::relative_time(created, now())}
            </p>
            {(build.is_some() || !links.is_empty()).then(|| ui_view! {
                <p class="hint" data-testid="item-build">
                    {build.clone().map(|b| ui_view! { "done in "<code>{b}</code> })}
                    {links.into_iter().enumerate().map(|(i, (label, url))| ui_view! {
                        {(i > 0 || build.is_some()).then_some(" · ")}
                        <a href=url target="_blank" rel="noopener noreferrer" data-testid="fix-link">{label}</a>
                    }).collect_view()}
                    {(change.live == Some(true)).then(|| ui_view! { " · " <span class="live">"live"</span> })}
                </p>
            })}
            {change.verified_at.map(|at| {
                let by = change.verified_by.clone().unwrap_or_else(|| "someone".to_owned());
                ui_view! {
                    <p class="hint" data-testid="item-verified">"checked on the stage: "<strong>"fixed"</strong>", by "{by}" \u{b7} "
                        {move || queue::relative_time(at, now())}</p>
                }
            })}
        </header>
        {crate::rules::verify::waits_for_check(&change).then(|| ui_view! { <check::CheckOnStage change=change.clone() stage_url=stage_url.clone() state=checked /> })}
        {change.body.clone().map(|body| ui_view! { <p class="body">{body}</p> })}
        {question.map(|(question, choices)| ui_view! { <Answer change=change.clone() question choices /> })}
        {change.screenshot_url.clone().map(|url| {
            let label = format!("Screenshot of {}", change.title);
            ui_view! { <ImageButton url label class="screenshot" /> }
        })}
        <ElementList elements=elements.clone() git_sha />
        {refind.as_ref().map(|r| ui_view! { <p class="hint" data-testid="item-refind">{r.describe()}</p> })}
        <ShowOnPage elements=refind.as_ref().map_or(elements.clone(), |r| crate::rules::refind::where_now(&elements, &r.elements)) />
        <FailedRequests requests=change.capture.as_ref().map(|c| c.failed_requests.clone()).unwrap_or_default() />
        {(!change.console_errors.is_empty()).then(|| ui_view! {
            <section aria-label="Console errors">
                <h3>"Console errors"</h3>
                <ul class="console">{change.console_errors.iter().map(|e| ui_view! { <li><code>{e.clone()}</code></li> }).collect_view()}</ul>
            </section>
        })}
        <Thread thread=thread.clone() />
        <StatusActions change=change.clone() />
    }
}

fn status_label(status: ChangeStatus) -> &'static str {
    match status {
        ChangeStatus::Open => "open",
        ChangeStatus::Claimed => "claimed",
        ChangeStatus::NeedsAnswer => "needs your answer",
        ChangeStatus::InProgress => "in progress",
        ChangeStatus::Done => "done",
        ChangeStatus::Dismissed => "dismissed",
    }
}

/// An image that opens large on click (the panel's lightbox).
#[component]
fn ImageButton(url: String, label: String, #[prop(optional)] class: &'static str) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let (u, l) = (url.clone(), label.clone());
    let aria = format!("{label} (enlarge)");
    ui_view! {
        <button type="button" class=format!("image-button {class}") aria-label=aria
            on:click=move |_| ctx.enlarged.set(Some((u.clone(), l.clone())))>
            <img src=url alt=label loading="lazy" />
        </button>
    }
}

/// Each circled element with its handles, each copyable.
#[component]
fn ElementList(elements: Vec<Element>, git_sha: Option<String>) -> impl IntoView {
    if elements.is_empty() {
        return ().into_any();
    }
    ui_view! {
        <section aria-label="Circled elements">
            <h3>"Circled elements"</h3>
            <ul class="elements">
                {elements.into_iter().map(|e| {
                    let anchor = e.source_anchor.as_deref().map(|a| queue::anchor_line(a, git_sha.as_deref()));
                    let ChipName { label, tooltip } = ChipName::of(&e);
                    ui_view! {
                        <li data-testid="element">
                            <span class="element-name" title=(!tooltip.is_empty()).then_some(tooltip)>{label}</span>
                            <dl>
                                {e.test_id.clone().map(|v| ui_view! { <Copyable name="test id" value=v /> })}
                                {anchor.map(|v| ui_view! { <Copyable name="source" value=v /> })}
                                {e.css_path.clone().map(|v| ui_view! { <Copyable name="CSS path" value=v /> })}
                            </dl>
                            {e.styles.map(|styles| ui_view! { <Styles styles /> })}
                        </li>
                    }
                }).collect_view()}
            </ul>
        </section>
    }
    .into_any()
}

/// An element's computed styles as filed: those that differ from its parent or its
/// tag's default, and the rest behind a disclosure.
#[component]
fn Styles(styles: ElementStyles) -> impl IntoView {
    let declarations = |shown: Vec<(&str, &str)>| {
        shown
            .into_iter()
            .map(
                |(name, value)| ui_view! { <dt>{name.to_owned()}</dt> <dd><code>{value.to_owned()}</code></dd> },
            )
            .collect_view()
    };
    let changed = styles.in_order(false);
    let summary = match changed.len() {
        0 => "Styles: none differ from its parent or its tag's default".to_owned(),
        1 => "Styles: 1 differs from its parent or its tag's default".to_owned(),
        n => format!("Styles: {n} differ from its parent or its tag's default"),
    };
    ui_view! {
        <details class="styles">
            <summary>{summary}</summary>
            <dl class="changed">{declarations(changed)}</dl>
            {(!styles.unchanged.is_empty()).then(|| ui_view! {
                <p class="hint">"As its parent or its tag's default:"</p>
                <dl class="unchanged">{declarations(styles.unchanged.iter().collect())}</dl>
            })}
        </details>
    }
}

/// The page's requests that failed from the moment Redline was opened until filing.
#[component]
fn FailedRequests(requests: Vec<FailedRequest>) -> impl IntoView {
    (!requests.is_empty()).then(|| {
        ui_view! {
            <section aria-label="Failed requests">
                <h3>"Failed requests"</h3>
                <ul class="console">
                    {requests.into_iter().map(|r| ui_view! {
                        <li><code>{format!("{} {}", r.method, r.url)}</code> " " <strong>{r.status_text()}</strong></li>
                    }).collect_view()}
                </ul>
            </section>
        }
    })
}

#[component]
fn Copyable(name: &'static str, value: String) -> impl IntoView {
    let copied = RwSignal::new(false);
    let v = value.clone();
    ui_view! {
        <dt>{name}</dt>
        <dd>
            <code>{value}</code>" "
            <button type="button" class="small" aria-label=format!("Copy {name}") on:click=move |_| {
                copy_text(&v);
                copied.set(true);
                set_timeout(move || copied.set(false), std::time::Duration::from_millis(1500));
            }>{move || if copied.get() { "Copied" } else { "Copy" }}</button>
        </dd>
    }
}

fn copy_text(text: &str) {
    use js_sys::Reflect;
    let clipboard = Reflect::get(&window().navigator(), &"clipboard".into()).ok();
    if let Some(clipboard) = clipboard
        && let Ok(write) = Reflect::get(&clipboard, &"writeText".into())
        && let Some(write) = wasm_bindgen::JsCast::dyn_ref::<js_sys::Function>(&write)
    {
        let _ = write.call1(&clipboard, &text.into());
    }
}

/// Highlights the elements in the tab the panel follows and says what matched.
#[component]
fn ShowOnPage(elements: Vec<Element>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    if elements.is_empty() {
        return ().into_any();
    }
    let show = Action::new_local(move |_: &()| {
        let request = crate::worker_call::ShowOnPage {
            tab_id: ctx.tab.get_untracked().map(|t| t.0),
            elements: elements.clone(),
        };
        async move { crate::ui::call(&request).await.map_err(|e| e.to_string()) }
    });
    ui_view! {
        <section aria-label="Show on page" class="show">
            <button type="button" on:click=move |_| { show.dispatch(()); } disabled=move || show.pending().get()>
                {move || if show.pending().get() { "Looking…" } else { "Show on page" }}
            </button>
            {move || show.value().get().map(|result| match result {
                Ok(located) => ui_view! {
                    <ul class="located" data-testid="located" aria-live="polite">
                        {located.iter().map(|l: &Located| ui_view! {
                            <li class=if l.matched_by.is_some() { "found" } else { "missing" }>{l.sentence()}</li>
                        }).collect_view()}
                    </ul>
                }.into_any(),
                Err(message) => ui_view! {
                    <ErrorLine message retry=Callback::new(move |_| { show.dispatch(()); }) />
                }.into_any(),
            })}
        </section>
    }
    .into_any()
}

#[component]
fn Thread(thread: Vec<Message>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    if thread.is_empty() {
        return ui_view! { <p class="hint">"No messages yet. The agent\u{2019}s questions and replies appear here."</p> }.into_any();
    }
    ui_view! {
        <section aria-label="Thread">
            <h3>"Thread"</h3>
            <ol class="thread">
                {thread.iter().map(|m| {
                    let created = m.created_at;
                    let who = match (m.author_kind, m.author_name.clone()) {
                        (AuthorKind::Agent, Some(name)) => format!("{name} (agent)"),
                        (AuthorKind::Agent, None) => "the agent".to_owned(),
                        (AuthorKind::User, Some(name)) => name,
                        (AuthorKind::User, None) => "you".to_owned(),
                    };
                    let evidence: Vec<Attachment> = m.attachments.iter().filter(|a| a.kind == AttachmentKind::Evidence).cloned().collect();
                    // An answer names its option by key; people read the label (a server
                    // that does not know it any more gets a generic word, never the key).
                    let chosen = m.chosen_option.as_deref().map(|key| option_label(&thread, key).unwrap_or("an option").to_owned());
                    let options: Vec<Attachment> = m.options().cloned().collect();
                    ui_view! {
                        <li class=format!("message {}", m.author_kind.as_str()) data-testid="message" data-type=m.role().as_str()>
                            <p class="hint"><strong>{who}</strong>" · "{move || queue::relative_time(created, Timestamp::from_unix_millis(ctx.now.get()))}</p>
                            <p class="body">{m.body.clone()}</p>
                            {chosen.map(|label| ui_view! { <p class="hint" data-testid="chosen">"chose "<strong>{label}</strong></p> })}
                            {evidence.into_iter().map(|a| {
                                let label = a.label.clone();
                                ui_view! {
                                    <figure class="evidence">
                                        {a.url.clone().map(|url| ui_view! { <ImageButton url label=label.clone() /> })}
                                        <figcaption>{a.label.clone()}</figcaption>
                                    </figure>
                                }
                            }).collect_view()}
                            {(!options.is_empty()).then(|| ui_view! {
                                <ul class="option-list">{options.into_iter().map(|o| {
                                    let label = format!("Option: {}", o.label);
                                    ui_view! {
                                        <li>
                                            {o.url.clone().map(|url| ui_view! { <ImageButton url label class="thumb" /> })}
                                            <span class="hint">"option "{o.label.clone()}</span>
                                        </li>
                                    }
                                }).collect_view()}</ul>
                            })}
                        </li>
                    }
                }).collect_view()}
            </ol>
        </section>
    }
    .into_any()
}

/// Answering the agent's open question: its choices in the order the protocol gives
/// them (each with its image when a shot shows it), optional words, and a plain reply.
/// The words go as typed: the server repeats the chosen label in the answer.
#[component]
fn Answer(change: Change, question: String, choices: Vec<Choice>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let words = RwSignal::new(String::new());
    let change_id = change.change_id.clone();
    let answer = Action::new_local(move |chosen: &Option<String>| {
        let body = words.get_untracked();
        let missing = body.trim().is_empty() && chosen.is_none();
        let input = AnswerChangeQuestionInput {
            change_id: change_id.clone(),
            project_id: None,
            body,
            chosen_option: chosen.clone(),
        };
        let client = ctx.client.get_value();
        async move {
            if missing {
                return Err("Write an answer, or pick an option.".to_owned());
            }
            client.call::<AnswerChangeQuestion>(input).await.map_err(|e| e.to_string())?;
            words.set(String::new());
            reload(ctx);
            Ok::<(), String>(())
        }
    });
    let last = RwSignal::new(None::<String>);
    let send = move |chosen: Option<String>| {
        last.set(chosen.clone());
        answer.dispatch(chosen);
    };
    let pending = Signal::derive(move || answer.pending().get());
    ui_view! {
        <section class="answer" aria-labelledby="answer-heading" data-testid="answer">
            <h3 id="answer-heading">"The agent asks"</h3>
            <p class="question" data-testid="question">{question}</p>
            {(!choices.is_empty()).then(|| ui_view! {
                <ul class="choices" aria-label="Choices">
                    {choices.into_iter().map(|choice| ui_view! { <ChoiceView choice pending send /> }).collect_view()}
                </ul>
            })}
            <label for="answer-words">"Your answer (optional with a choice)"</label>
            <textarea id="answer-words" rows="3" prop:value=move || words.get()
                on:input=move |e| words.set(event_target_value(&e))></textarea>
            <div class="actions">
                <button type="button" class="primary" disabled=pending on:click=move |_| send(None)>"Send answer"</button>
                <Show when=move || pending.get()><span class="hint" role="status">"Sending your answer…"</span></Show>
            </div>
            {move || answer.value().get().and_then(Result::err).map(|m| ui_view! {
                <ErrorLine message=m retry=Callback::new(move |_| { answer.dispatch(last.get_untracked()); }) />
            })}
        </section>
    }
}

/// One choice: a button that answers with its key (its image inside when a shot shows
/// it), and for an image a button that enlarges it.
#[component]
fn ChoiceView(
    choice: Choice,
    pending: Signal<bool>,
    send: impl Fn(Option<String>) + Copy + 'static,
) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let Choice { key, label, image_url, .. } = choice;
    let pick_label = format!("Pick {label}");
    let class = if image_url.is_some() { "choice with-image" } else { "choice" };
    let key_attr = key.clone();
    let enlarge = image_url.clone().map(|url| {
        let (aria, shown) = (format!("Enlarge {label}"), label.clone());
        ui_view! {
            <button type="button" class="small enlarge" aria-label=aria
                on:click=move |_| ctx.enlarged.set(Some((url.clone(), shown.clone())))>"\u{2922}"</button>
        }
    });
    ui_view! {
        <li class=class data-testid="option" data-option-key=key_attr>
            <button type="button" class="choice-pick" aria-label=pick_label disabled=pending
                on:click=move |_| send(Some(key.clone()))>
                // The label is the button's text; the image repeats it.
                {image_url.map(|url| ui_view! { <img src=url alt="" /> })}
                <span class="choice-label">{label}</span>
            </button>
            {enlarge}
        </li>
    }
}

/// Dismiss (any open item) or reopen (a dismissed or done one), after a confirmation.
#[component]
fn StatusActions(change: Change) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let confirming = RwSignal::new(false);
    let (target, label) = match change.status {
        ChangeStatus::Dismissed | ChangeStatus::Done => (ChangeStatus::Open, "Reopen"),
        _ => (ChangeStatus::Dismissed, "Dismiss"),
    };
    let change_id = change.change_id.clone();
    let set = Action::new_local(move |_: &()| {
        let input = SetChangeStatusInput { change_id: change_id.clone(), project_id: None, status: target };
        let client = ctx.client.get_value();
        async move {
            client.call::<SetChangeStatus>(input).await.map_err(|e| e.to_string())?;
            confirming.set(false);
            reload(ctx);
            Ok::<(), String>(())
        }
    });
    let number = redline_protocol::display_short_id(&change.short_id);
    ui_view! {
        <div class="actions status-actions">
            <Show when=move || !confirming.get() fallback=move || ui_view! {
                <span role="alertdialog" aria-label=format!("{label} {number}?") class="confirm">
                    {format!("{label} {number}?")}" "
                    <button type="button" class="primary" on:click=move |_| { set.dispatch(()); } disabled=move || set.pending().get()>
                        {format!("Yes, {}", label.to_lowercase())}
                    </button>
                    <button type="button" on:click=move |_| confirming.set(false)>"Cancel"</button>
                </span>
            }>
                <button type="button" on:click=move |_| confirming.set(true)>{label}</button>
            </Show>
        </div>
        {move || set.value().get().and_then(Result::err).map(|m| ui_view! {
            <ErrorLine message=m retry=Callback::new(move |_| { set.dispatch(()); }) pending=Signal::derive(move || set.pending().get()) />
        })}
    }
}
