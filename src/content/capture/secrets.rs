//! Credentials scrubbed from the console text a capture records, before it leaves the
//! page: the value of a field or header whose name says it holds one (`Authorization`,
//! `token`, `password`, `cookie`, …, as a logged object or a request prints them), the
//! credential after `Bearer` or `Basic`, JSON web tokens (`eyJ…`) and the tokens whose
//! prefix gives them away (GitHub, GitLab, Slack, Stripe, AWS, Google, Redline's own).
//! Each becomes [`MARKER`]; the rest of the text is kept as it was.

use std::borrow::Cow;
use std::ops::Range;

/// What a scrubbed credential reads as.
pub const MARKER: &str = "[redacted]";

/// `text` with every credential in it replaced by [`MARKER`]; borrowed when it holds none.
pub fn scrub_secrets(text: &str) -> Cow<'_, str> {
    // Read as bytes (every boundary found is an ASCII byte, so a character's): the
    // page's module stays smaller than with `str`'s character patterns.
    let bytes = text.as_bytes();
    let mut scrubbed = String::new();
    let (mut copied, mut at) = (0, 0);
    while at < bytes.len() {
        let starts_word = is_word(bytes[at]) && (at == 0 || !bytes[at - 1].is_ascii_alphanumeric());
        if !starts_word {
            at += 1;
            continue;
        }
        let word_end = run(bytes, at, is_word);
        match secret_at(bytes, at, word_end) {
            Some(secret) => {
                scrubbed.push_str(&text[copied..secret.start]);
                scrubbed.push_str(MARKER);
                (copied, at) = (secret.end, secret.end);
            }
            None => at = word_end,
        }
    }
    if copied == 0 {
        return Cow::Borrowed(text);
    }
    scrubbed.push_str(&text[copied..]);
    Cow::Owned(scrubbed)
}

/// The credential that the word at `start..end` starts or introduces, if any.
fn secret_at(bytes: &[u8], start: usize, end: usize) -> Option<Range<usize>> {
    let word = &bytes[start..end];
    if word.starts_with(b"eyJ") {
        // A JSON web token (base64 of `{"`), also one cut short: its dots and all.
        let token = start..without_full_stops(bytes, start, run(bytes, start, is_base64));
        let dotted = bytes[token.clone()].contains(&b'.');
        return (dotted || token.len() >= 20).then_some(token);
    }
    if PREFIXED
        .iter()
        .any(|(prefix, rest)| word.starts_with(prefix.as_bytes()) && word.len() >= prefix.len() + rest)
    {
        return Some(start..end);
    }
    let value = skip_spaces(bytes, end);
    if is_scheme(word) && value > end {
        let credential = value..without_full_stops(bytes, value, run(bytes, value, is_token68));
        if looks_like_credential(&bytes[credential.clone()]) {
            return Some(credential);
        }
    }
    if is_secret_name(word) { value_of(bytes, end) } else { None }
}

/// The value after a secret's name ending at `name_end`: `name: value`, `name=value`,
/// `"name": "value"` (also with escaped quotes, as JSON inside JSON prints).
fn value_of(bytes: &[u8], name_end: usize) -> Option<Range<usize>> {
    let quote_at = |at: usize| -> &[u8] {
        match bytes.get(at..).unwrap_or_default() {
            [b'\\', b'"', ..] => b"\\\"",
            [b'"', ..] => b"\"",
            [b'\'', ..] => b"'",
            _ => b"",
        }
    };
    let after_name = skip_spaces(bytes, name_end + quote_at(name_end).len());
    let separator = *bytes.get(after_name).filter(|b| matches!(b, b':' | b'='))?;
    let from = skip_spaces(bytes, after_name + 1);
    if bytes[from..].starts_with(MARKER.as_bytes()) {
        return None;
    }
    let quote = quote_at(from);
    if quote.is_empty() {
        // Unquoted: a header's credential after its scheme is found from the scheme; a
        // plain lowercase word after a colon is more likely prose ("token: expired").
        let value = from..run(bytes, from, |b| !is_value_end(b));
        let word = &bytes[value.clone()];
        let scheme = value.end < bytes.len() && is_scheme(word);
        let kept = scheme || word.is_empty() || (separator == b':' && !looks_like_credential(word));
        return (!kept).then_some(value);
    }
    let inside = from + quote.len();
    let end = closing_quote(bytes, inside, quote);
    // `"Bearer abc"` keeps its scheme: which kind of credential was sent helps.
    let space = bytes[inside..end].iter().position(|&b| b == b' ');
    let scheme = space.filter(|&at| is_scheme(&bytes[inside..inside + at])).map_or(0, |at| at + 1);
    let secret = inside + scheme..end;
    (!secret.is_empty() && &bytes[secret.clone()] != MARKER.as_bytes()).then_some(secret)
}

/// Where the quoted text from `inside` ends: the next `quote` not escaped by a
/// backslash, or the end of the text (the buffer cuts long text short).
fn closing_quote(bytes: &[u8], inside: usize, quote: &[u8]) -> usize {
    let mut at = inside;
    while at < bytes.len() {
        if bytes[at..].starts_with(quote) {
            return at;
        }
        at += if bytes[at] == b'\\' && quote.len() == 1 { 2 } else { 1 };
    }
    bytes.len()
}

/// Tokens told by their prefix, and how many characters at least follow it.
const PREFIXED: &[(&str, usize)] = &[
    ("rl_", 43),
    ("ghp_", 30),
    ("gho_", 30),
    ("ghu_", 30),
    ("ghs_", 30),
    ("ghr_", 30),
    ("github_pat_", 30),
    ("glpat-", 20),
    ("xoxb-", 10),
    ("xoxp-", 10),
    ("xoxa-", 10),
    ("xoxr-", 10),
    ("xoxs-", 10),
    ("sk_live_", 10),
    ("sk_test_", 10),
    ("rk_live_", 10),
    ("AKIA", 16),
    ("AIza", 30),
];

/// Words in a field's or header's name that say its value is a credential, compared
/// without case, `-` or `_`.
const SECRET_NAMES: &[&str] =
    &["authorization", "token", "secret", "password", "passwd", "apikey", "cookie", "credential", "session"];

fn is_secret_name(word: &[u8]) -> bool {
    let name: Vec<u8> =
        word.iter().filter(|b| !matches!(b, b'-' | b'_')).map(u8::to_ascii_lowercase).collect();
    matches!(&name[..], b"auth" | b"pwd")
        || SECRET_NAMES.iter().any(|secret| name.windows(secret.len()).any(|part| part == secret.as_bytes()))
}

/// The HTTP authentication schemes whose credential follows them.
fn is_scheme(word: &[u8]) -> bool {
    ["bearer", "basic", "token", "digest"].iter().any(|s| word.eq_ignore_ascii_case(s.as_bytes()))
}

/// A lowercase word of letters is taken for prose ("Bearer undefined", "token: missing"),
/// unless it is as long as a key.
fn looks_like_credential(value: &[u8]) -> bool {
    !value.is_empty() && (value.len() >= 16 || !value.iter().all(u8::is_ascii_lowercase))
}

/// `end`, less the full stops before it down to `from`: a sentence's is not the token's.
fn without_full_stops(bytes: &[u8], from: usize, mut end: usize) -> usize {
    while end > from && bytes[end - 1] == b'.' {
        end -= 1;
    }
    end
}

fn skip_spaces(bytes: &[u8], from: usize) -> usize {
    run(bytes, from, |b| matches!(b, b' ' | b'\t'))
}

/// The end of the run of bytes from `start` that `belongs`.
fn run(bytes: &[u8], start: usize, belongs: impl Fn(u8) -> bool) -> usize {
    bytes[start..].iter().position(|&b| !belongs(b)).map_or(bytes.len(), |at| start + at)
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')
}

fn is_base64(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'+' | b'/' | b'=' | b'.')
}

/// RFC 7235's `token68`, the form of a scheme's credential.
fn is_token68(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=')
}

fn is_value_end(b: u8) -> bool {
    b.is_ascii_whitespace()
        || matches!(b, b',' | b';' | b'&' | b'{' | b'}' | b'[' | b']' | b'(' | b')')
        || matches!(b, b'"' | b'\'' | b'<' | b'>' | b'\\')
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const JWT: &str = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";

    #[test]
    fn logged_request_headers_lose_their_credentials() {
        let logged = r#"request failed {"url":"/api","headers":{"Authorization":"Bearer abc.DEF-123","Content-Type":"application/json","X-Api-Key":"k3y"}}"#;
        assert_eq!(
            scrub_secrets(logged),
            r#"request failed {"url":"/api","headers":{"Authorization":"Bearer [redacted]","Content-Type":"application/json","X-Api-Key":"[redacted]"}}"#
        );
        assert_eq!(
            scrub_secrets("Authorization: Basic dXNlcjpwYXNz\nAccept: */*"),
            "Authorization: Basic [redacted]\nAccept: */*"
        );
        assert_eq!(scrub_secrets("sent bearer   ya29.A0ARrd rest"), "sent bearer   [redacted] rest");
        assert_eq!(
            scrub_secrets(r#"{"password":"correct horse","user":"ann","access_token":"x"}"#),
            r#"{"password":"[redacted]","user":"ann","access_token":"[redacted]"}"#
        );
        assert_eq!(
            scrub_secrets("login?user=ann&password=hunter&next=/"),
            "login?user=ann&password=[redacted]&next=/"
        );
        assert_eq!(scrub_secrets("Cookie: sid=S3cr3t; theme=dark"), "Cookie: [redacted]; theme=dark");
    }

    #[test]
    fn json_web_tokens_go_wherever_they_are() {
        assert_eq!(
            scrub_secrets(&format!("TypeError: bad token {JWT}.")),
            "TypeError: bad token [redacted]."
        );
        assert_eq!(scrub_secrets(&format!("GET /verify/{JWT}?x 401")), "GET /verify/[redacted]?x 401");
        assert_eq!(scrub_secrets(&format!(r#"{{"jwt":"{JWT}"}}"#)), r#"{"jwt":"[redacted]"}"#);
        // Cut short by the buffer's 500 characters, still a token.
        assert_eq!(scrub_secrets("... eyJhbGciOiJIUzI1NiJ9.eyJzdW"), "... [redacted]");
        // Inside a word it is not one.
        assert_eq!(scrub_secrets("keyJump and eyJ."), "keyJump and eyJ.");
    }

    #[test]
    fn embedded_json_and_prefixed_tokens() {
        assert_eq!(
            scrub_secrets(r#"{"body":"{\"token\":\"abc123\",\"n\":1}"}"#),
            r#"{"body":"{\"token\":\"[redacted]\",\"n\":1}"}"#
        );
        assert_eq!(
            scrub_secrets(r#"{"secret":"a \"quoted\" one","ok":1}"#),
            r#"{"secret":"[redacted]","ok":1}"#
        );
        let redline = format!("rl_{}", "A".repeat(43));
        let github = format!("ghp_{}", "a1".repeat(18));
        assert_eq!(
            scrub_secrets(&format!("{redline} and {github} then AKIAIOSFODNN7EXAMPLE.")),
            "[redacted] and [redacted] then [redacted]."
        );
        // Unfinished quotes hide the rest: the buffer cuts long text short.
        assert_eq!(
            scrub_secrets(r#"{"Authorization":"Bearer eyJx"#),
            r#"{"Authorization":"Bearer [redacted]"#
        );
    }

    #[test]
    fn prose_and_other_fields_stay() {
        for kept in [
            "TypeError: Cannot read properties of undefined (reading 'token')",
            "Invalid token: expired",
            "Bearer undefined",
            "Basic auth failed for user ann",
            r#"{"tokenCount":null,"tokens":[],"session":{}}"#,
            "rl_mode is set",
            "Failed to load resource: the server responded with a status of 404 (Not Found)",
            "password: required, at least 8 characters",
            r#"{"token":""}"#,
        ] {
            assert!(matches!(scrub_secrets(kept), Cow::Borrowed(_)), "{kept} became {}", scrub_secrets(kept));
        }
    }

    proptest! {
        #[test]
        fn scrubbing_twice_changes_nothing_more(text in "[ -~]{0,80}|.{0,40}") {
            let once = scrub_secrets(&text).into_owned();
            prop_assert_eq!(scrub_secrets(&once), once.as_str());
        }

        #[test]
        fn a_token_is_gone_whatever_surrounds_it(
            before in "[ -~]{0,30}",
            after in "[ -~]{0,30}",
            form in 0..4usize,
            secret in "[A-Za-z0-9_-]{8,30}[0-9]",
        ) {
            let logged = match form {
                0 => format!("{before} {JWT}{secret} {after}"),
                1 => format!(r#"{before} {{"Authorization":"Bearer {secret}"}} {after}"#),
                2 => format!("{before} Authorization: Bearer {secret} {after}"),
                _ => format!(r#"{before} {{"refresh_token":"{secret}"}} {after}"#),
            };
            let scrubbed = scrub_secrets(&logged);
            prop_assert!(!scrubbed.contains(&secret), "{} kept in {}", secret, scrubbed);
            prop_assert!(scrubbed.contains(MARKER));
        }
    }
}
