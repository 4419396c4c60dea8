//! The server's clock. Every rule that depends on time ("`held` is computed on the
//! server's clock, never the client's") reads it here, so tests can move time forward
//! instead of sleeping through a grace window or a lease.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use redline_protocol::Timestamp;

#[derive(Clone, Debug)]
pub enum Clock {
    System,
    /// A clock that only moves when told to (tests).
    Manual(Arc<AtomicI64>),
}

impl Clock {
    pub fn manual(start: Timestamp) -> Self {
        Clock::Manual(Arc::new(AtomicI64::new(start.unix_millis())))
    }

    pub fn now(&self) -> Timestamp {
        match self {
            Clock::System => {
                let ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
                Timestamp::from_unix_millis(i64::try_from(ms).unwrap_or(i64::MAX))
            }
            Clock::Manual(ms) => Timestamp::from_unix_millis(ms.load(Ordering::SeqCst)),
        }
    }

    /// Moves a manual clock forward; the system clock cannot be moved.
    pub fn advance_millis(&self, ms: i64) {
        match self {
            Clock::System => panic!("the system clock cannot be advanced"),
            Clock::Manual(now) => {
                now.fetch_add(ms, Ordering::SeqCst);
            }
        }
    }
}
