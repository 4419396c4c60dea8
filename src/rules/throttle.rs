//! Spacing calls that a browser rate-limits (`captureVisibleTab`: 2 a second). Callers
//! reserve a slot and wait for it, so a burst queues instead of failing. Pure.

/// Slots at least `spacing_ms` apart, handed out in call order.
#[derive(Debug, Clone, PartialEq)]
pub struct Throttle {
    spacing_ms: f64,
    next_free_ms: f64,
}

impl Throttle {
    pub const fn new(spacing_ms: f64) -> Throttle {
        Throttle { spacing_ms, next_free_ms: f64::NEG_INFINITY }
    }

    /// Reserves the next slot at or after `now_ms`; returns how long to wait for it.
    pub fn reserve(&mut self, now_ms: f64) -> f64 {
        let slot = self.next_free_ms.max(now_ms);
        self.next_free_ms = slot + self.spacing_ms;
        slot - now_ms
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_call_goes_at_once_and_a_burst_queues() {
        let mut throttle = Throttle::new(500.0);
        assert_eq!(throttle.reserve(1_000.0), 0.0);
        assert_eq!(throttle.reserve(1_000.0), 500.0);
        assert_eq!(throttle.reserve(1_100.0), 900.0);
    }

    #[test]
    fn an_idle_throttle_does_not_delay() {
        let mut throttle = Throttle::new(500.0);
        throttle.reserve(0.0);
        assert_eq!(throttle.reserve(10_000.0), 0.0);
        assert_eq!(throttle.reserve(10_200.0), 300.0);
    }
}
