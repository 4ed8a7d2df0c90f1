//! The report of a convergence: `{"host": NAME, "engines": [Status…]}`
//! (the shape README.md documents), and the exit code it means.
//!
//! Uses: `converge`.

use serde::{Deserialize, Serialize};

use crate::converge::Status;

/// Exit code when every want is `ready` or `not_here`.
pub const EXIT_OK: i32 = 0;
/// Exit code when any want is `failed` or `unsupported`.
pub const EXIT_FAULT: i32 = 1;
/// Exit code for bad input: a host file, a want, a flag.
pub const EXIT_BAD_INPUT: i32 = 2;
/// Exit code when the tool itself could not run (the fake server did not start).
pub const EXIT_INTERNAL: i32 = 3;

/// One host's statuses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    /// The host description's `name`.
    pub host: String,
    /// One status per want, in the order asked.
    pub engines: Vec<Status>,
}

impl Report {
    /// [`EXIT_FAULT`] when any want is `failed` or `unsupported`, else [`EXIT_OK`].
    pub fn exit_code(&self) -> i32 {
        if self.engines.iter().any(|s| s.state.is_fault()) { EXIT_FAULT } else { EXIT_OK }
    }

    /// The report as pretty JSON, with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a report always serializes");
        s.push('\n');
        s
    }
}
