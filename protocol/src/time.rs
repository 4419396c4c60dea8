//! `Timestamp`: an instant in UTC, ISO-8601 on the wire.
//!
//! The protocol says "Dates are ISO-8601 UTC strings on the wire". This wrapper keeps
//! milliseconds since the Unix epoch so rules can compare instants, and formats like
//! JavaScript's `Date.toISOString()` (`2026-11-29T17:35:27.123Z`). It has no
//! dependencies so the crate stays light on wasm; it never reads a clock — the caller
//! passes `now` (the protocol's rules use the server's clock only).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// An instant, in milliseconds since 1970-01-01T00:00:00Z.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct Timestamp(i64);

/// Why a string is not an ISO-8601 / RFC 3339 date-time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TimestampError(&'static str);

impl fmt::Display for TimestampError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "not an ISO-8601 date-time: {}", self.0)
    }
}

impl std::error::Error for TimestampError {}

impl Timestamp {
    pub const fn from_unix_millis(ms: i64) -> Self {
        Timestamp(ms)
    }

    pub const fn unix_millis(self) -> i64 {
        self.0
    }

    pub const fn plus_millis(self, ms: i64) -> Self {
        Timestamp(self.0.saturating_add(ms))
    }

    pub const fn plus_seconds(self, s: i64) -> Self {
        self.plus_millis(s.saturating_mul(1000))
    }

    pub const fn plus_minutes(self, m: i64) -> Self {
        self.plus_seconds(m.saturating_mul(60))
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`. Digits past milliseconds
    /// are dropped (truncated, not rounded).
    pub fn parse(s: &str) -> Result<Self, TimestampError> {
        let b = s.as_bytes();
        if b.len() < 20 {
            return Err(TimestampError("too short"));
        }
        let num = |from: usize, len: usize| -> Result<i64, TimestampError> {
            let part = b.get(from..from + len).ok_or(TimestampError("truncated"))?;
            part.iter().try_fold(0i64, |acc, c| {
                if c.is_ascii_digit() {
                    Ok(acc * 10 + i64::from(c - b'0'))
                } else {
                    Err(TimestampError("expected a digit"))
                }
            })
        };
        let expect = |at: usize, allowed: &[u8]| -> Result<(), TimestampError> {
            match b.get(at) {
                Some(c) if allowed.contains(c) => Ok(()),
                _ => Err(TimestampError("unexpected separator")),
            }
        };
        let year = num(0, 4)?;
        expect(4, b"-")?;
        let month = num(5, 2)?;
        expect(7, b"-")?;
        let day = num(8, 2)?;
        expect(10, b"Tt ")?;
        let hour = num(11, 2)?;
        expect(13, b":")?;
        let minute = num(14, 2)?;
        expect(16, b":")?;
        let second = num(17, 2)?;
        if !(1..=12).contains(&month) || day < 1 || day > days_in_month(year, month) {
            return Err(TimestampError("date out of range"));
        }
        // 60 is a leap second; it is folded into :59 since nothing here needs more.
        if hour > 23 || minute > 59 || second > 60 {
            return Err(TimestampError("time out of range"));
        }
        let mut at = 19;
        let mut millis = 0i64;
        if b.get(at) == Some(&b'.') {
            at += 1;
            let start = at;
            while b.get(at).is_some_and(u8::is_ascii_digit) {
                if at - start < 3 {
                    millis = millis * 10 + i64::from(b[at] - b'0');
                }
                at += 1;
            }
            if at == start {
                return Err(TimestampError("empty fraction"));
            }
            for _ in (at - start)..3 {
                millis *= 10;
            }
        }
        let offset_minutes = match b.get(at) {
            Some(b'Z' | b'z') if at + 1 == b.len() => 0,
            Some(sign @ (b'+' | b'-')) if at + 6 == b.len() => {
                let h = num(at + 1, 2)?;
                expect(at + 3, b":")?;
                let m = num(at + 4, 2)?;
                if h > 23 || m > 59 {
                    return Err(TimestampError("offset out of range"));
                }
                let total = h * 60 + m;
                if *sign == b'-' { -total } else { total }
            }
            _ => return Err(TimestampError("missing or malformed time zone")),
        };
        let days = days_from_civil(year, month, day);
        let secs = days * 86_400 + hour * 3600 + minute * 60 + second.min(59) - offset_minutes * 60;
        Ok(Timestamp(secs * 1000 + millis))
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.rem_euclid(1000);
        let secs = self.0.div_euclid(1000);
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        write!(f, "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{ms:03}Z", rem / 3600, rem % 3600 / 60, rem % 60)
    }
}

impl FromStr for Timestamp {
    type Err = TimestampError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Timestamp::parse(s)
    }
}

impl Serialize for Timestamp {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Timestamp::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// On the wire a timestamp is an ISO-8601 UTC string.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({ "type": "string", "format": "date-time" })
    }
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

// Howard Hinnant's days_from_civil / civil_from_days (proleptic Gregorian calendar).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_to_iso_string() {
        assert_eq!(Timestamp::from_unix_millis(0).to_string(), "1970-01-01T00:00:00.000Z");
        assert_eq!(Timestamp::from_unix_millis(1_795_973_727_123).to_string(), "2026-11-29T17:35:27.123Z");
        assert_eq!(Timestamp::from_unix_millis(-1).to_string(), "1969-12-31T23:59:59.999Z");
    }

    #[test]
    fn parses_and_round_trips() {
        for ms in [0, 951_782_400_000, 1_795_973_727_123, -86_400_000, 4_102_444_800_999] {
            let t = Timestamp::from_unix_millis(ms);
            assert_eq!(Timestamp::parse(&t.to_string()), Ok(t));
        }
    }

    #[test]
    fn accepts_offsets_and_other_precisions() {
        let z = Timestamp::parse("2026-11-29T17:35:27Z").unwrap();
        assert_eq!(Timestamp::parse("2026-11-29T19:35:27+02:00"), Ok(z));
        assert_eq!(Timestamp::parse("2026-11-29T12:05:27-05:30"), Ok(z));
        assert_eq!(Timestamp::parse("2026-11-29T17:35:27.123456789Z"), Ok(z.plus_millis(123)));
        assert_eq!(Timestamp::parse("2026-11-29T17:35:27.5Z"), Ok(z.plus_millis(500)));
    }

    #[test]
    fn rejects_garbage() {
        for bad in [
            "",
            "2026-11-29",
            "2026-11-29T17:35:27",
            "2026-13-01T00:00:00Z",
            "2026-02-29T00:00:00Z",
            "2026-11-29T24:00:00Z",
            "2026-11-29T17:35:27.Z",
            "2026-11-29T17:35:27Zjunk",
            "2026-11-29T17:35:27+0200",
        ] {
            assert!(Timestamp::parse(bad).is_err(), "{bad}");
        }
        assert!(Timestamp::parse("2024-02-29T00:00:00Z").is_ok());
    }

    #[test]
    fn serde_is_a_string() {
        let t = Timestamp::from_unix_millis(1_000);
        assert_eq!(serde_json::to_string(&t).unwrap(), "\"1970-01-01T00:00:01.000Z\"");
        let back: Timestamp = serde_json::from_str("\"1970-01-01T00:00:01Z\"").unwrap();
        assert_eq!(back, t);
    }
}
