//! How the side panel reads a long queue (#25): a page at a time, the items still in play
//! first, and only the rows events name, in one read. Pure: the panel (`ui/panel/queue.rs`)
//! sends what these build, feeds back what the server answered, and does what they decide.
//!
//! Our server pages (`cursor` → `nextCursor`, with `total` on every answer) and lists only
//! the items `changeIds` name (those events named); a server that does neither (Fabric, or ours before
//! paging) answers one list, oldest first, cut at `limit`. Each answer says which kind
//! answered, and the panel falls back to reading the whole list (as it did before paging)
//! when the server does not page, and to re-reading it on an event when the server does not
//! list the items named.

use redline_protocol::rpc::{ListChangesInput, ListChangesOutput, ListOrder};
use redline_protocol::sse::SseEvent;
use redline_protocol::{
    CLAIM_NAMES_MAX, Change, ChangeEvent, ChangeStatus, EVENT_RESET, Group, LIST_LIMIT_MAX,
};

use crate::rules::queue::{Diff, Queue, Section};

/// Rows read and shown at a time: a screenful or two, so the first paint is small.
pub const PAGE: u32 = 50;

/// The two lists the panel reads: the items still in play (which every section above
/// *Check* shows, and which a person acts on), then the done and dismissed ones, of which
/// a team has thousands, read a page at a time as the person scrolls to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Active,
    Closed,
}

impl Part {
    pub const ALL: [Part; 2] = [Part::Active, Part::Closed];

    pub fn of(status: ChangeStatus) -> Part {
        if redline_protocol::is_hidden_unless_include_done(status) { Part::Closed } else { Part::Active }
    }

    /// The sections this part's rows fall in.
    pub fn of_section(section: Section) -> Part {
        match section {
            Section::Check | Section::Done | Section::Dismissed => Part::Closed,
            _ => Part::Active,
        }
    }

    /// One page of this part: newest first, after `cursor`.
    pub fn input(
        self,
        project_id: &str,
        stage_id: Option<&str>,
        cursor: Option<String>,
        limit: u32,
    ) -> ListChangesInput {
        let (status, include_done) = match self {
            Part::Active => (None, false),
            Part::Closed => (Some(vec![ChangeStatus::Done, ChangeStatus::Dismissed]), true),
        };
        ListChangesInput {
            project_id: project_id.to_owned(),
            stage_id: stage_id.map(str::to_owned),
            status,
            include_done,
            limit: Some(limit),
            cursor,
            order: Some(ListOrder::Newest),
            ..ListChangesInput::default()
        }
    }
}

/// Whether the server pages, as far as its answers have shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Paging {
    #[default]
    Unknown,
    /// It answered with `total`: it pages (and lists the items named).
    Pages,
    /// It answered without `total`: one list cut at `limit`, so the panel asks for the
    /// most it may (as before paging).
    Whole,
}

/// Where the reading of one [`Part`] stands.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reading {
    /// Pages read since the last re-read from the top (0: not read).
    pub pages: u32,
    /// The cursor of the next page; `None` once the last was read.
    pub next: Option<String>,
}

impl Reading {
    pub fn has_more(&self) -> bool {
        self.pages == 0 || self.next.is_some()
    }
}

/// What to do after a page's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterPage {
    /// Take it.
    Take,
    /// The server does not page and cut the list at our page's size: read it again, whole.
    Again,
}

/// What to do when the person reaches the end of what is shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// More rows are loaded than shown: show another page of them.
    Show,
    /// Read this part's next page (`None`: its first).
    Read(Part, Option<String>),
    /// Everything is read and shown.
    End,
}

/// The panel's paging state for one filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pages {
    pub paging: Paging,
    pub active: Reading,
    pub closed: Reading,
    /// The server answered a `changeIds` read with other items: it ignores them, so an
    /// event re-reads the list instead.
    pub ids_ignored: bool,
    /// How many rows the list shows (the rest are loaded but not rendered yet).
    pub shown: usize,
}

impl Default for Pages {
    fn default() -> Pages {
        Pages {
            paging: Paging::Unknown,
            active: Reading::default(),
            closed: Reading::default(),
            ids_ignored: false,
            shown: PAGE as usize,
        }
    }
}

impl Pages {
    /// How many items to ask for at a time.
    pub fn limit(&self) -> u32 {
        match self.paging {
            Paging::Whole => LIST_LIMIT_MAX,
            _ => PAGE,
        }
    }

    pub fn reading(&self, part: Part) -> &Reading {
        match part {
            Part::Active => &self.active,
            Part::Closed => &self.closed,
        }
    }

    fn reading_mut(&mut self, part: Part) -> &mut Reading {
        match part {
            Part::Active => &mut self.active,
            Part::Closed => &mut self.closed,
        }
    }

    /// Takes note of a page of `part` read after `cursor` with `limit`; says whether to
    /// take it or read again.
    pub fn after_page(
        &mut self,
        part: Part,
        cursor: Option<&str>,
        limit: u32,
        answer: &ListChangesOutput,
    ) -> AfterPage {
        if answer.total.is_some() || answer.next_cursor.is_some() {
            self.paging = Paging::Pages;
        } else if self.paging != Paging::Pages {
            self.paging = Paging::Whole;
            if limit < LIST_LIMIT_MAX && answer.changes.len() >= limit as usize {
                return AfterPage::Again;
            }
        }
        let reading = self.reading_mut(part);
        let first = cursor.is_none();
        // A re-read of the first page keeps the cursor of a later page already read: the
        // list is newest first, so what is filed meanwhile comes before it, not after.
        if !(first && reading.pages > 1) {
            reading.next = answer.next_cursor.clone();
        }
        reading.pages = if first { reading.pages.max(1) } else { reading.pages + 1 };
        AfterPage::Take
    }

    /// What reaching the end of the shown rows does, with `loaded` rows in the store:
    /// the items in play are read to their end before the closed ones.
    pub fn next(&self, loaded: usize) -> Next {
        if self.shown < loaded {
            return Next::Show;
        }
        for part in Part::ALL {
            let reading = self.reading(part);
            if reading.has_more() {
                return Next::Read(part, reading.next.clone());
            }
        }
        Next::End
    }

    /// Whether the list has more to show: rows loaded but not shown, or pages not read.
    pub fn has_more(&self, loaded: usize) -> bool {
        self.next(loaded) != Next::End
    }

    /// The sections that may be shown: the closed ones only once every item in play is
    /// read, as those read later sort above them (rows coming in above the ones in view
    /// would move the list under the person, or follow it down page after page).
    pub fn showable(&self, mut sections: Vec<(Section, Vec<String>)>) -> Vec<(Section, Vec<String>)> {
        if self.active.has_more() {
            sections.retain(|(section, _)| Part::of_section(*section) == Part::Active);
        }
        sections
    }

    /// Shows another page's worth of rows.
    pub fn show_more(&mut self) {
        self.shown += PAGE as usize;
    }
}

/// The numbers a first page covers (newest first): from its oldest item up when more
/// pages follow, all of them (`0`) when it is the last.
pub fn covers_from(page: &ListChangesOutput) -> u64 {
    match page.next_cursor {
        Some(_) => {
            page.changes.iter().map(|c| crate::rules::queue::number_of(&c.short_id)).min().unwrap_or(0)
        }
        None => 0,
    }
}

/// The most items one read of named items asks for: its `limit` is their number, and
/// `listChanges` takes a `limit` of at most [`LIST_LIMIT_MAX`] and a `changeIds` of at
/// most [`CLAIM_NAMES_MAX`] (both 200); more are read in several.
pub const NAMED_MAX: usize =
    if (LIST_LIMIT_MAX as usize) < CLAIM_NAMES_MAX { LIST_LIMIT_MAX as usize } else { CLAIM_NAMES_MAX };

/// The read of the items events named (at most [`NAMED_MAX`]): `changeIds` naming them,
/// done ones too, and `limit` their number, which tells a server that ignores
/// `changeIds` apart ([`named_of`]).
pub fn named_input(project_id: &str, stage_id: Option<&str>, change_ids: &[String]) -> ListChangesInput {
    ListChangesInput {
        project_id: project_id.to_owned(),
        stage_id: stage_id.map(str::to_owned),
        include_done: true,
        limit: Some(change_ids.len() as u32),
        change_ids: Some(change_ids.to_vec()),
        ..ListChangesInput::default()
    }
}

/// The answer to a read of named items ([`named_input`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Named {
    /// Each item asked for, listed or not.
    Read(Rows),
    /// An item not asked for came back: the server ignores `changeIds`.
    Ignored,
}

/// What a read of named items says of each: the rows to apply, together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rows {
    /// The items listed, as they are now, in the order asked.
    pub found: Vec<Change>,
    /// The groups the answers listed (those of `found`).
    pub groups: Vec<Group>,
    /// The items not listed under the filter (gone, or on another stage): their rows
    /// are dropped.
    pub absent: Vec<String>,
}

impl Rows {
    /// Adds another read's (items named past [`NAMED_MAX`] are read in several).
    pub fn add(&mut self, other: Rows) {
        self.found.extend(other.found);
        self.groups.extend(other.groups);
        self.absent.extend(other.absent);
    }

    /// Applies them to the queue in one go: the listed rows merged, the others dropped.
    pub fn apply(self, queue: &mut Queue) -> Diff {
        let mut diff = queue.merge(self.found, &self.groups);
        for id in &self.absent {
            diff.removed.extend(queue.remove(id).removed);
        }
        diff
    }
}

/// Reads the answer to the read of `asked`. Asking for as many items as are named makes
/// a server that ignores `changeIds` answer with the first that many of its list: if all
/// of them were asked for, they are the items asked for, or (fewer) its whole list, right
/// either way; if one was not, it ignores them. An item asked for and not listed is not
/// under the filter, whichever server answered.
pub fn named_of(asked: &[String], answer: ListChangesOutput) -> Named {
    let ListChangesOutput { mut changes, groups, .. } = answer;
    if changes.len() > asked.len() || changes.iter().any(|c| !asked.contains(&c.change_id)) {
        return Named::Ignored;
    }
    let mut rows = Rows { groups, ..Rows::default() };
    for (i, id) in asked.iter().enumerate() {
        // A name given twice is one item.
        if asked[..i].contains(id) {
            continue;
        }
        match changes.iter().position(|c| &c.change_id == id) {
            Some(at) => rows.found.push(changes.swap_remove(at)),
            None => rows.absent.push(id.clone()),
        }
    }
    Named::Read(rows)
}

/// What the panel does about the events of one chunk of the stream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hints {
    /// Re-read the first pages: a `reset`, or an event the panel cannot read.
    pub reread: bool,
    /// Read these items again (each once, in the order first named).
    pub changed: Vec<String>,
}

impl Hints {
    pub fn reread() -> Hints {
        Hints { reread: true, changed: Vec::new() }
    }

    pub fn is_empty(&self) -> bool {
        !self.reread && self.changed.is_empty()
    }

    /// Adds `other`'s (hints arriving while a read runs wait for it).
    pub fn add(&mut self, other: Hints) {
        self.reread |= other.reread;
        for id in other.changed {
            if !self.changed.contains(&id) {
                self.changed.push(id);
            }
        }
    }

    pub fn of(events: &[SseEvent]) -> Hints {
        let mut hints = Hints::default();
        for event in events {
            match serde_json::from_str::<ChangeEvent>(&event.data) {
                Ok(change) if event.event != EVENT_RESET => {
                    hints.add(Hints { reread: false, changed: vec![change.change_id] })
                }
                _ => hints.reread = true,
            }
        }
        hints
    }
}

/// A section's heading count: `50+` while its part has pages not read.
pub fn count_label(loaded: usize, more: bool) -> String {
    if more { format!("{loaded}+") } else { loaded.to_string() }
}

/// The sections cut to the first `shown` rows in order (a section left with none is not
/// shown).
pub fn window(sections: &[(Section, Vec<String>)], shown: usize) -> Vec<(Section, Vec<String>)> {
    let mut left = shown;
    let mut out = Vec::new();
    for (section, ids) in sections {
        if left == 0 {
            break;
        }
        let take = ids.len().min(left);
        left -= take;
        out.push((*section, ids[..take].to_vec()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn change(id: &str, short: u32, status: &str) -> Change {
        serde_json::from_value(json!({
            "changeId": id, "shortId": short.to_string(), "projectId": "p", "stageId": "s",
            "groupId": null, "title": "t", "body": null, "status": status,
            "route": "/", "gitSha": null, "deploymentId": null, "locale": null, "viewport": null,
            "capture": null, "screenshotKey": null, "consoleErrors": [], "source": "extension",
            "filedBy": "ada", "branch": null, "headCommit": null, "resolvedAt": null, "live": null,
            "createdAt": "2026-12-01T00:00:00Z", "held": false, "heldUntil": null,
        }))
        .unwrap()
    }

    fn answer(n: usize, next: Option<&str>, total: Option<u64>) -> ListChangesOutput {
        let changes = (0..n).map(|i| change(&format!("c{i}"), i as u32 + 1, "open")).collect();
        ListChangesOutput { changes, groups: vec![], next_cursor: next.map(str::to_owned), total }
    }

    #[test]
    fn a_paging_server_is_read_a_page_at_a_time_in_play_first() {
        let mut pages = Pages::default();
        assert_eq!(pages.limit(), PAGE);
        assert_eq!(pages.next(0), Next::Read(Part::Active, None));
        assert_eq!(
            pages.after_page(Part::Active, None, PAGE, &answer(50, Some("951"), Some(1200))),
            AfterPage::Take
        );
        assert_eq!(pages.paging, Paging::Pages);
        // 50 loaded and 50 shown: the next page of the items in play.
        assert_eq!(pages.next(50), Next::Read(Part::Active, Some("951".into())));
        pages.after_page(Part::Active, Some("951"), PAGE, &answer(10, None, Some(1200)));
        assert_eq!(pages.active, Reading { pages: 2, next: None });
        pages.show_more();
        // Closed sections wait until every item in play is read.
        let sections = vec![(Section::Waiting, vec!["a".to_owned()]), (Section::Done, vec!["d".to_owned()])];
        pages.active.next = Some("1".into());
        assert_eq!(pages.showable(sections.clone()), sections[..1]);
        pages.active.next = None;
        assert_eq!(pages.showable(sections.clone()), sections);
        // 60 loaded, 100 shown: then the closed ones, from their first page.
        assert_eq!(pages.next(60), Next::Read(Part::Closed, None));
        pages.after_page(Part::Closed, None, PAGE, &answer(50, Some("400"), Some(1200)));
        assert_eq!(pages.next(110), Next::Show);
        // A re-read of the first page keeps a later page's cursor.
        pages.after_page(Part::Closed, Some("400"), PAGE, &answer(50, Some("300"), Some(1200)));
        pages.after_page(Part::Closed, None, PAGE, &answer(50, Some("450"), Some(1201)));
        assert_eq!(pages.closed, Reading { pages: 2, next: Some("300".into()) });
        pages.shown = 160;
        assert_eq!(pages.next(160), Next::Read(Part::Closed, Some("300".into())));
        pages.after_page(Part::Closed, Some("300"), PAGE, &answer(3, None, Some(1201)));
        assert_eq!(pages.next(160), Next::End);
        assert!(!pages.has_more(160));
        assert!(pages.has_more(161));
    }

    #[test]
    fn a_first_page_covers_from_its_oldest_item_unless_it_is_the_last() {
        assert_eq!(covers_from(&answer(3, Some("1"), Some(9))), 1);
        let mut page = answer(3, Some("x"), Some(9));
        page.changes.reverse();
        page.changes[2].short_id = "40".into();
        assert_eq!(covers_from(&page), 2);
        assert_eq!(covers_from(&answer(3, None, Some(3))), 0);
        assert_eq!(covers_from(&answer(0, Some("x"), Some(3))), 0);
    }

    #[test]
    fn a_server_that_does_not_page_is_read_whole() {
        let mut pages = Pages::default();
        // A full page with no total and no cursor: cut, perhaps; ask for the most.
        assert_eq!(pages.after_page(Part::Active, None, PAGE, &answer(50, None, None)), AfterPage::Again);
        assert_eq!(pages.limit(), LIST_LIMIT_MAX);
        assert_eq!(
            pages.after_page(Part::Active, None, LIST_LIMIT_MAX, &answer(200, None, None)),
            AfterPage::Take
        );
        assert_eq!(pages.active, Reading { pages: 1, next: None });
        // A short answer from an unknown server is whole already.
        let mut pages = Pages::default();
        assert_eq!(pages.after_page(Part::Active, None, PAGE, &answer(3, None, None)), AfterPage::Take);
        assert_eq!(pages.paging, Paging::Whole);
        // A paging server's last page has a total and no cursor: taken as it is.
        let mut pages = Pages::default();
        assert_eq!(pages.after_page(Part::Active, None, PAGE, &answer(50, None, Some(50))), AfterPage::Take);
        assert_eq!(pages.paging, Paging::Pages);
    }

    fn listed(changes: Vec<Change>) -> ListChangesOutput {
        ListChangesOutput { changes, groups: vec![], next_cursor: None, total: None }
    }

    fn ids(names: &[&str]) -> Vec<String> {
        names.iter().map(|&n| n.to_owned()).collect()
    }

    #[test]
    fn a_read_of_named_items_tells_whether_the_server_lists_only_those() {
        let asked = ids(&["a", "b", "c"]);
        // Any order; the rows come in the order asked, the ones not listed are absent.
        let Named::Read(rows) =
            named_of(&asked, listed(vec![change("c", 3, "done"), change("a", 1, "open")]))
        else {
            panic!("read")
        };
        assert_eq!(rows.found.iter().map(|c| c.change_id.as_str()).collect::<Vec<_>>(), ["a", "c"]);
        assert_eq!(rows.absent, ids(&["b"]));
        // None listed: all absent, whichever server answered.
        assert!(matches!(named_of(&asked, listed(vec![])), Named::Read(r) if r.absent == asked));
        // One item not asked for, or more than asked: the server ignores `changeIds`.
        let other = listed(vec![change("a", 1, "open"), change("x", 9, "open")]);
        assert_eq!(named_of(&asked, other), Named::Ignored);
        let more = listed(vec![change("a", 1, "open"), change("a", 1, "open")]);
        assert_eq!(named_of(&ids(&["a"]), more), Named::Ignored);
        // A name given twice is one item.
        assert!(
            matches!(named_of(&ids(&["b", "b"]), listed(vec![])), Named::Read(r) if r.absent == ids(&["b"]))
        );
        let input = named_input("p", Some("s"), &asked);
        assert_eq!((input.limit, input.include_done, input.stage_id.as_deref()), (Some(3), true, Some("s")));
        assert_eq!(input.change_ids, Some(asked));
        assert_eq!(NAMED_MAX, 200);
    }

    #[test]
    fn named_rows_are_applied_together() {
        let mut queue = Queue::default();
        queue.merge(vec![change("a", 1, "open"), change("b", 2, "open"), change("c", 3, "open")], &[]);
        let mut rows = Rows { found: vec![change("a", 1, "done")], groups: vec![], absent: ids(&["b"]) };
        rows.add(Rows { found: vec![change("d", 4, "open")], groups: vec![], absent: ids(&["e"]) });
        let diff = rows.apply(&mut queue);
        assert_eq!(diff, Diff { added: ids(&["d"]), changed: ids(&["a"]), removed: ids(&["b"]) });
        assert_eq!(queue.get("a").map(|r| r.change.status), Some(ChangeStatus::Done));
        assert!(queue.get("b").is_none() && queue.get("c").is_some());
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod properties {
        use super::*;
        use proptest::prelude::*;

        proptest! {
            /// Any answer listing some of the items asked for, in any order, finds each
            /// listed (in the order asked) and says the rest are absent; an item not asked
            /// for makes it ignored.
            #[test]
            fn each_item_asked_for_is_found_or_absent(
                asked in 1..40usize,
                picks in prop::collection::vec(any::<bool>(), 40),
                order in prop::collection::vec(any::<u32>(), 40),
                extra in prop::option::of(0..=40usize),
            ) {
                let names: Vec<String> = (0..asked).map(|i| format!("c{i}")).collect();
                let mut listed_ids: Vec<usize> = (0..asked).filter(|&i| picks[i]).collect();
                listed_ids.sort_by_key(|&i| order[i]);
                let mut answer: Vec<Change> =
                    listed_ids.iter().map(|&i| change(&names[i], i as u32 + 1, "open")).collect();
                if let Some(at) = extra {
                    answer.insert(at.min(answer.len()), change("other", 99, "open"));
                    prop_assert_eq!(named_of(&names, listed(answer)), Named::Ignored);
                    return Ok(());
                }
                let Named::Read(rows) = named_of(&names, listed(answer)) else {
                    return Err(TestCaseError::fail("ignored"));
                };
                let found: Vec<&str> = rows.found.iter().map(|c| c.change_id.as_str()).collect();
                let want: Vec<&str> = (0..asked).filter(|&i| picks[i]).map(|i| names[i].as_str()).collect();
                prop_assert_eq!(found, want);
                let absent: Vec<&str> = (0..asked).filter(|&i| !picks[i]).map(|i| names[i].as_str()).collect();
                prop_assert_eq!(rows.absent.iter().map(String::as_str).collect::<Vec<_>>(), absent);
            }
        }
    }

    #[test]
    fn parts_ask_for_their_statuses_newest_first() {
        let active = Part::Active.input("p", None, None, PAGE);
        assert_eq!(
            (active.include_done, active.status, active.order),
            (false, None, Some(ListOrder::Newest))
        );
        let closed = Part::Closed.input("p", Some("s"), Some("7".into()), PAGE);
        assert_eq!(closed.status, Some(vec![ChangeStatus::Done, ChangeStatus::Dismissed]));
        assert_eq!((closed.include_done, closed.cursor.as_deref()), (true, Some("7")));
        assert_eq!(Part::of(ChangeStatus::NeedsAnswer), Part::Active);
        assert_eq!(Part::of(ChangeStatus::Dismissed), Part::Closed);
        assert_eq!(Part::of_section(Section::Check), Part::Closed);
        assert_eq!(Part::of_section(Section::Held), Part::Active);
    }

    #[test]
    fn events_name_rows_and_a_reset_rereads() {
        let event = |name: &str, data: &str| SseEvent { event: name.into(), data: data.into(), id: None };
        let asked = r#"{"type":"asked","changeId":"a","shortId":"1","seq":3}"#;
        let done = r#"{"type":"done","changeId":"b","shortId":"2","seq":4}"#;
        let hints = Hints::of(&[event("message", asked), event("message", done), event("message", asked)]);
        assert_eq!(hints, Hints { reread: false, changed: vec!["a".into(), "b".into()] });
        assert!(Hints::of(&[event("reset", "")]).reread);
        assert!(Hints::of(&[event("message", "{}")]).reread);
        let mut all = Hints::default();
        assert!(all.is_empty());
        all.add(hints);
        all.add(Hints::reread());
        assert!(all.reread && all.changed.len() == 2);
    }

    #[test]
    fn the_window_cuts_sections_in_order() {
        let ids = |n: usize, p: &str| (0..n).map(|i| format!("{p}{i}")).collect::<Vec<_>>();
        let sections = vec![
            (Section::NeedsAnswer, ids(2, "q")),
            (Section::Waiting, ids(5, "w")),
            (Section::Done, ids(9, "d")),
        ];
        let cut = window(&sections, 4);
        assert_eq!(cut, vec![(Section::NeedsAnswer, ids(2, "q")), (Section::Waiting, ids(2, "w"))]);
        assert_eq!(window(&sections, 100), sections);
        assert_eq!(count_label(50, true), "50+");
        assert_eq!(count_label(7, false), "7");
    }
}
