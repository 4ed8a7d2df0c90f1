//! Download progress on a terminal: an indicatif bar on stderr; on a pipe,
//! nothing (the library reports through `system::real::Reporter`).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressStyle};
use llmgw_system::real::{Reporter, Silent};

/// A bar per download when stderr is a terminal and `--quiet` was not
/// given, else silence.
pub fn reporter() -> Box<dyn Reporter> {
    if std::io::stderr().is_terminal() && !super::quiet() { Box::new(Bar(None)) } else { Box::new(Silent) }
}

struct Bar(Option<ProgressBar>);

impl Reporter for Bar {
    fn start(&mut self, what: &str, total: Option<u64>) {
        let bar = ProgressBar::new(total.unwrap_or(0));
        bar.set_style(
            ProgressStyle::with_template("{msg} {bar:30} {bytes}/{total_bytes} {bytes_per_sec} {eta}")
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        bar.set_message(what.to_string());
        self.0 = Some(bar);
    }

    fn advance(&mut self, done: u64, total: Option<u64>) {
        if let Some(bar) = &self.0 {
            if let Some(t) = total {
                bar.set_length(t);
            }
            bar.set_position(done);
        }
    }

    fn finish(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
        }
    }
}
