//! When the agent's next pass comes: [`Schedule`], the backoff after a
//! failed pass.
//!
//! llmgw's own rule, kept from its first version (docs/facts.md §10).
//! Installed engines are checked again every
//! [`RECHECK_EVERY`] (10 minutes); after a pass in which any want ended
//! `failed`, the next pass comes after [`FIRST_RETRY`] (1 minute), then 2,
//! 4, 8 minutes, and never later than [`RECHECK_EVERY`]; one pass without a
//! failure resets the backoff. A lock held by a new machine's own package
//! updates clears in a minute or two; ten minutes' wait would leave the node
//! idle for no reason.
//!
//! One difference from that first version: there, a failure that reached the cap
//! (10 minutes) also reset the backoff to 1 minute, so a node that kept
//! failing went 1, 2, 4, 8, 10, 1, 2, … minutes; here the cap holds until a
//! pass is clean, as the issue asks ("up to 10").

use std::time::Duration;

/// How often installed engines are checked again when nothing failed: 10
/// minutes. A library removed by an unrelated upgrade is found here rather
/// than by the next replica to start.
pub const RECHECK_EVERY: Duration = Duration::from_secs(600);

/// The wait after the first failed pass: 1 minute; it doubles after each
/// further failed pass, up to [`RECHECK_EVERY`].
pub const FIRST_RETRY: Duration = Duration::from_secs(60);

/// The backoff state between passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Schedule {
    /// The wait after the next failed pass.
    retry: Duration,
}

impl Default for Schedule {
    fn default() -> Schedule {
        Schedule { retry: FIRST_RETRY }
    }
}

impl Schedule {
    /// The wait until the next pass, given whether the pass that just ended
    /// had any want `failed` (`unsupported` is no reason to come back
    /// sooner: nothing published runs there).
    pub fn after_pass(&mut self, any_failed: bool) -> Duration {
        if any_failed {
            let next = self.retry;
            self.retry = (self.retry * 2).min(RECHECK_EVERY);
            next
        } else {
            self.retry = FIRST_RETRY;
            RECHECK_EVERY
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn minutes(s: &mut Schedule, outcomes: &[bool]) -> Vec<u64> {
        outcomes.iter().map(|&f| s.after_pass(f).as_secs() / 60).collect()
    }

    #[test]
    fn failures_back_off_from_one_minute_to_ten_and_stay_there() {
        let mut s = Schedule::default();
        assert_eq!(minutes(&mut s, &[true; 7]), [1, 2, 4, 8, 10, 10, 10]);
    }

    #[test]
    fn one_clean_pass_resets_the_backoff() {
        let mut s = Schedule::default();
        assert_eq!(minutes(&mut s, &[true, true, true, false, true, false, false]), [1, 2, 4, 10, 1, 10, 10]);
    }
}
