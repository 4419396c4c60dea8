//! Rules both clients (the extension and the agent) follow: what an HTTP status means
//! for a retry (`shared/protocol.md`, "Transport"), which stage serves a URL, and how a
//! commit is shown.

use std::borrow::Cow;

use crate::{AgentPresence, Stage, Timestamp};

/// What a client does with a failed call, by its HTTP status: "408/429/5xx … transient
/// (retry with backoff), 401/403 as 'sign in again', 409 as a decision to show, 404 as
/// gone"; any other 4xx is a request to correct.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatusClass {
    Transient,
    SignIn,
    Conflict,
    Gone,
    Rejected,
}

impl StatusClass {
    pub fn of(status: u16) -> StatusClass {
        match status {
            401 | 403 => StatusClass::SignIn,
            404 => StatusClass::Gone,
            409 => StatusClass::Conflict,
            408 | 429 | 500..=599 => StatusClass::Transient,
            _ => StatusClass::Rejected,
        }
    }
}

/// Whether a call that failed with `status` may succeed later without anyone acting.
pub fn is_transient_status(status: u16) -> bool {
    StatusClass::of(status) == StatusClass::Transient
}

/// What an agent is doing, as people are told (the panel's presence line, `redline
/// doctor`): waiting for work right now, working (seen within [`WORKING_MINUTES`]), or
/// away since it was last seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentActivity {
    Waiting,
    Working,
    Away,
}

/// An agent seen this recently and not waiting is taken to be working.
pub const WORKING_MINUTES: i64 = 15;

impl AgentPresence {
    pub fn activity(&self, now: Timestamp) -> AgentActivity {
        match self.last_seen_at {
            _ if self.waiting => AgentActivity::Waiting,
            Some(seen) if now.unix_millis() - seen.unix_millis() < WORKING_MINUTES * 60_000 => {
                AgentActivity::Working
            }
            _ => AgentActivity::Away,
        }
    }

    /// `agent-a waiting`, `agent-a working (seen 3 min ago)`, `agent-a last seen 2 h ago`.
    pub fn describe(&self, now: Timestamp) -> String {
        format!("{} {}", self.name, self.doing(now))
    }

    /// [`AgentPresence::describe`] without the name.
    pub fn doing(&self, now: Timestamp) -> String {
        let ago = self.last_seen_at.map(|seen| relative_time(seen, now));
        match (self.activity(now), ago) {
            (AgentActivity::Waiting, _) => "waiting".to_owned(),
            (AgentActivity::Working, Some(ago)) => format!("working (seen {ago})"),
            (_, Some(ago)) => format!("last seen {ago}"),
            (_, None) => "not seen yet".to_owned(),
        }
    }
}

/// "just now", "5 min ago", "3 h ago", "2 d ago" (a future time reads "just now"): how
/// both clients say when something happened.
pub fn relative_time(then: Timestamp, now: Timestamp) -> String {
    let seconds = (now.unix_millis() - then.unix_millis()) / 1000;
    match seconds {
        ..45 => "just now".to_owned(),
        45..3_600 => format!("{} min ago", ((seconds + 30) / 60).max(1)),
        3_600..86_400 => format!("{} h ago", seconds / 3_600),
        _ => format!("{} d ago", seconds / 86_400),
    }
}

/// The first seven characters of a commit id, as people read it (`a91c4e2`).
pub fn short_sha(sha: &str) -> &str {
    sha.char_indices().nth(7).map_or(sha, |(i, _)| &sha[..i])
}

/// `url` without its query string and fragment: what Redline keeps of a page's address
/// (the route filed, the URL a stage is resolved from). Tokens and e-mail addresses often
/// live in those parts, and stages are matched by origin and path only.
pub fn without_query(url: &str) -> &str {
    url.find(['?', '#']).map_or(url, |at| &url[..at])
}

/// `url` as Redline keeps a page's address or a request's: without query string,
/// fragment ([`without_query`]) and user name and password
/// (`https://user:pw@host/a.png?token=x` → `https://host/a.png`), the parts that carry
/// credentials and personal data.
pub fn kept_url(url: &str) -> Cow<'_, str> {
    let url = without_query(url);
    let Some(host_at) = url.find("://").map(|at| at + 3) else { return Cow::Borrowed(url) };
    let authority_end = url[host_at..].find('/').map_or(url.len(), |at| host_at + at);
    match url[host_at..authority_end].rfind('@') {
        Some(at) => Cow::Owned([&url[..host_at], &url[host_at + at + 1..]].concat()),
        None => Cow::Borrowed(url),
    }
}

/// `text` (a console error, a computed style's `url(…)`) with every absolute URL in it
/// as [`kept_url`] keeps it. A URL runs from its scheme to the first space, quote,
/// bracket or angle bracket.
pub fn with_kept_urls(text: &str) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut kept = String::new();
    let (mut copied, mut from) = (0, 0);
    while let Some(found) = text[from..].find("://") {
        let separator = from + found;
        // ASCII bytes only, so both ends fall on character boundaries.
        let scheme = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.');
        let start = bytes[..separator].iter().rposition(|b| !scheme(b)).map_or(0, |at| at + 1);
        let ends =
            |b: &u8| b.is_ascii_whitespace() || matches!(b, b'"' | b'\'' | b'(' | b')' | b'<' | b'>' | b'`');
        let end = bytes[separator..].iter().position(ends).map_or(text.len(), |at| separator + at);
        if start < separator {
            let url = &text[start..end];
            // What is kept is never longer, and only as long when nothing was dropped.
            let kept_part = kept_url(url);
            if kept_part.len() < url.len() {
                kept.push_str(&text[copied..start]);
                kept.push_str(&kept_part);
                copied = end;
            }
        }
        from = end.max(separator + 3);
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    kept.push_str(&text[copied..]);
    Cow::Owned(kept)
}

/// Whether `url` is at or below `prefix`, at a path-segment boundary
/// (`https://a.example/app` covers `/app/x` and `/app?q`, not `/apple`). Scheme and host
/// compare without case; the path with it.
pub fn is_url_under(url: &str, prefix: &str) -> bool {
    let (url, prefix) = (origin_lowercase(url.trim()), origin_lowercase(prefix.trim()));
    let prefix = prefix.trim_end_matches('/');
    match url.strip_prefix(prefix) {
        Some(rest) => rest.is_empty() || rest.starts_with(['/', '?', '#']),
        None => false,
    }
}

fn origin_lowercase(url: &str) -> String {
    let path_at = url.find("://").map(|s| s + 3).and_then(|h| url[h..].find('/').map(|p| h + p));
    match path_at {
        Some(at) => url[..at].to_ascii_lowercase() + &url[at..],
        None => url.to_ascii_lowercase(),
    }
}

/// The stage serving `url`: the one whose `url` is the longest prefix of it.
pub fn stage_for_url<'a>(stages: &'a [Stage], url: &str) -> Option<&'a Stage> {
    stages
        .iter()
        .filter_map(|s| {
            s.url.as_deref().filter(|u| is_url_under(url, u)).map(|u| (u.trim_end_matches('/').len(), s))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, s)| s)
}

/// **(ours)** Whether `url` is a link a client may open and the server stores
/// (`commitUrl`, `pullRequestUrl`): `https://`, then something, with no space or control
/// character. The schema states the same as `patterns::HTTPS_LINK`.
pub fn is_https_link(url: &str) -> bool {
    url.strip_prefix("https://")
        .is_some_and(|rest| !rest.is_empty() && !rest.chars().any(|c| c <= ' ' || c == '\u{7f}'))
}

/// **(ours)** Whether `route` is a path the server stores as an item's `route`: it starts
/// with one `/` (`//host` is another site), and holds no backslash (which browsers read
/// as `/`), space or control character, so a stage's URL joined with it stays on the
/// stage's site (never `javascript:` or another host). The schema states the same as
/// `patterns::ROUTE`.
pub fn is_route(route: &str) -> bool {
    route.starts_with('/')
        && !route.starts_with("//")
        && !route.chars().any(|c| c == '\\' || c <= ' ' || c == '\u{7f}')
}

/// **(ours)** A commit id as the server stores one (`completeChange`'s `headCommit`, a
/// stage's `gitSha` set by `redline stage add|deploy`): 7 to 40 hex digits, surrounding
/// whitespace ignored, lower-cased (as git prints them, so equal ids compare equal);
/// `None` for anything else, which git could read as an option or a revision range.
/// The schema states the same as `patterns::COMMIT_SHA`.
pub fn commit_sha(s: &str) -> Option<String> {
    let s = s.trim();
    ((7..=40).contains(&s.len()) && s.bytes().all(|b| b.is_ascii_hexdigit())).then(|| s.to_ascii_lowercase())
}

/// Where the item was filed, on the stage today ("Check on stage" and `redline guard`
/// open it): the stage's origin and the item's route
/// when that is a plain path at or below the stage's own ([`is_plain_path`]); the
/// stage's URL itself otherwise. The check loads the page with the filer's cookies, so a
/// route (which anyone who may file sets) must not add a query string a page acts on
/// (`/orders?delete=1`), nor lead to another origin (`//evil.example`, a full URL) or
/// out of the stage (`/app/../admin`). `None` without a stage URL.
pub fn check_url(stage_url: Option<&str>, route: Option<&str>) -> Option<String> {
    let stage_url = stage_url?.trim();
    if stage_url.is_empty() {
        return None;
    }
    let origin = url_origin(stage_url)?;
    let on_stage = route
        .filter(|r| is_plain_path(r))
        .map(|route| format!("{origin}{route}"))
        .filter(|url| is_url_under(url, stage_url));
    Some(on_stage.unwrap_or_else(|| stage_url.to_owned()))
}

/// Whether `route` is an absolute path and nothing more, as a page's `location.pathname`
/// is: it starts with one `/` (`//host` is another origin), holds no query string,
/// fragment, backslash (which browsers read as `/`), space or control character, and no
/// `.` or `..` segment, written plainly or percent-encoded (which would leave the
/// stage's path once the browser resolves it).
pub fn is_plain_path(route: &str) -> bool {
    let dot_segment = |s: &str| {
        let s = s.to_ascii_lowercase().replace("%2e", ".");
        s == "." || s == ".."
    };
    route.starts_with('/')
        && !route.starts_with("//")
        && !route.chars().any(|c| matches!(c, '?' | '#' | '\\') || c <= ' ' || c == '\u{7f}')
        && !route.split('/').any(dot_segment)
}

/// `scheme://host[:port]` of a URL.
pub fn url_origin(url: &str) -> Option<&str> {
    let host_at = url.find("://")? + 3;
    let end = url[host_at..].find(['/', '?', '#']).map_or(url.len(), |i| host_at + i);
    (end > host_at).then(|| &url[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StageType;

    #[test]
    fn commit_ids_are_seven_to_forty_hex_digits() {
        assert_eq!(commit_sha(" A91C4E2\n").as_deref(), Some("a91c4e2"));
        assert!(commit_sha(&"f".repeat(40)).is_some());
        for refused in ["beef", "a91c4e", "", &"f".repeat(41), "--output=x", "a91c4e2..HEAD", "g91c4e2"] {
            assert_eq!(commit_sha(refused), None, "{refused:?}");
        }
    }

    #[test]
    fn an_agent_is_waiting_working_or_away() {
        let now = Timestamp::from_unix_millis(10 * 3_600_000);
        let agent = |waiting, minutes: Option<i64>| AgentPresence {
            name: "agent-a".into(),
            waiting,
            last_seen_at: minutes.map(|m| Timestamp::from_unix_millis(now.unix_millis() - m * 60_000)),
        };
        assert_eq!(agent(true, Some(0)).describe(now), "agent-a waiting");
        assert_eq!(agent(false, Some(0)).describe(now), "agent-a working (seen just now)");
        assert_eq!(agent(false, Some(14)).describe(now), "agent-a working (seen 14 min ago)");
        assert_eq!(agent(false, Some(15)).activity(now), AgentActivity::Away);
        assert_eq!(agent(false, Some(15)).describe(now), "agent-a last seen 15 min ago");
        assert_eq!(agent(false, Some(180)).describe(now), "agent-a last seen 3 h ago");
        assert_eq!(agent(false, Some(3 * 24 * 60)).describe(now), "agent-a last seen 3 d ago");
        assert_eq!(agent(false, None).describe(now), "agent-a not seen yet");
    }

    #[test]
    fn times_read_like_people_say_them() {
        let t = Timestamp::from_unix_millis;
        assert_eq!(relative_time(t(0), t(10_000)), "just now");
        assert_eq!(relative_time(t(10_000), t(0)), "just now");
        assert_eq!(relative_time(t(0), t(50_000)), "1 min ago");
        assert_eq!(relative_time(t(0), t(5 * 60_000)), "5 min ago");
        assert_eq!(relative_time(t(0), t(3 * 3_600_000 + 5)), "3 h ago");
        assert_eq!(relative_time(t(0), t(49 * 3_600_000)), "2 d ago");
    }

    #[test]
    fn query_strings_and_fragments_are_dropped() {
        assert_eq!(
            without_query("https://a.example/app/orders?token=s3cret#me@x.example"),
            "https://a.example/app/orders"
        );
        assert_eq!(without_query("/orders#top"), "/orders");
        assert_eq!(without_query("/orders?q=a#b?c"), "/orders");
        assert_eq!(without_query("https://a.example/app/"), "https://a.example/app/");
    }

    #[test]
    fn a_kept_url_has_no_user_name_password_query_or_fragment() {
        assert_eq!(kept_url("https://user:pw@host.example/a.png?token=x"), "https://host.example/a.png");
        assert_eq!(kept_url("https://a@b@host.example"), "https://host.example");
        assert_eq!(
            kept_url("https://host.example/@me/x?q#f"),
            "https://host.example/@me/x",
            "a path's @ stays"
        );
        assert_eq!(kept_url("https://host.example/?next=https://u:p@x"), "https://host.example/");
        assert!(matches!(kept_url("https://host.example/a"), Cow::Borrowed("https://host.example/a")));
        assert_eq!(kept_url("/orders?id=1"), "/orders");
    }

    #[test]
    fn urls_in_text_are_kept_as_a_pages_address_is() {
        assert_eq!(
            with_kept_urls("GET https://user:pw@host.example/a.png?token=x 404 (Not Found)"),
            "GET https://host.example/a.png 404 (Not Found)"
        );
        assert_eq!(
            with_kept_urls(r#"url("https://u:p@cdn.example/bg.png?sig=1"), url(http://cdn.example/x.svg#i)"#),
            r#"url("https://cdn.example/bg.png"), url(http://cdn.example/x.svg)"#
        );
        assert_eq!(
            with_kept_urls("Failed: (https://h.example/x?a=https://u:p@i.example/y) and ftp://o@f.example/z"),
            "Failed: (https://h.example/x) and ftp://f.example/z"
        );
        assert_eq!(with_kept_urls("été https://h.example/é?x=ü fin"), "été https://h.example/é fin");
        let plain = "TypeError: x is undefined at https://h.example/app.js:3:7";
        assert!(matches!(with_kept_urls(plain), Cow::Borrowed(p) if p == plain));
        assert_eq!(with_kept_urls("://nothing?x"), "://nothing?x", "no scheme, no URL");
    }

    #[test]
    fn statuses_map_to_what_a_client_does() {
        for s in [408, 429, 500, 502, 503, 599] {
            assert!(is_transient_status(s), "{s}");
        }
        assert_eq!(StatusClass::of(401), StatusClass::SignIn);
        assert_eq!(StatusClass::of(403), StatusClass::SignIn);
        assert_eq!(StatusClass::of(404), StatusClass::Gone);
        assert_eq!(StatusClass::of(409), StatusClass::Conflict);
        assert_eq!(StatusClass::of(400), StatusClass::Rejected);
        assert_eq!(StatusClass::of(413), StatusClass::Rejected);
    }

    #[test]
    fn short_shas() {
        assert_eq!(short_sha("a91c4e2ffff"), "a91c4e2");
        assert_eq!(short_sha("abc"), "abc");
        assert_eq!(short_sha(""), "");
    }

    #[test]
    fn prefixes_stop_at_segment_boundaries() {
        assert!(is_url_under("https://a.example/app/orders", "https://a.example/app"));
        assert!(is_url_under("https://a.example/app", "https://a.example/app/"));
        assert!(is_url_under("https://a.example/?q=1", "https://a.example"));
        assert!(is_url_under("HTTPS://A.Example/app", "https://a.example/app"));
        assert!(!is_url_under("https://a.example/App", "https://a.example/app"));
        assert!(!is_url_under("https://a.example/apple", "https://a.example/app"));
        assert!(!is_url_under("https://a.example.evil.com/", "https://a.example"));
    }

    fn stage(id: &str, url: &str) -> Stage {
        Stage {
            stage_id: id.into(),
            project_id: "p".into(),
            branch: id.into(),
            stage_type: StageType::Preview,
            url: Some(url.into()),
            git_sha: None,
            deployment_id: None,
            changes_enabled: true,
            created_at: Timestamp::from_unix_millis(0),
        }
    }

    #[test]
    fn the_longest_prefix_serves_a_url() {
        let stages = [
            stage("main", "https://demo.example.com/"),
            stage("feat", "https://demo.example.com/preview/feat"),
        ];
        let at = |u| stage_for_url(&stages, u).map(|s| s.stage_id.as_str());
        assert_eq!(at("https://demo.example.com/orders"), Some("main"));
        assert_eq!(at("https://demo.example.com/preview/feat/x?y"), Some("feat"));
        assert_eq!(at("https://demo.example.com"), Some("main"));
        assert_eq!(at("https://demo.example.community"), None);
    }
}
