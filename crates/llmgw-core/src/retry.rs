//! Retries of transient failures, on the [`System`]'s clock (simulated in
//! simulation, so ten minutes of backoff take no time there).
//!
//! Transient: HTTP 500, 502, 503, 504, a broken connection, 429 and GitHub's
//! rate limit (403 or 429 with `x-ratelimit-remaining: 0`). A `Retry-After`
//! is honoured, a rate limit waits for its reset, each up to [`MAX_WAIT_SECS`];
//! otherwise the delay doubles from [`BASE_DELAY_SECS`] up to
//! [`MAX_DELAY_SECS`], plus jitter of up to a quarter, for [`ATTEMPTS`]
//! attempts. Source: GitHub docs, "Rate limits for the REST API" (wait for
//! `retry-after`, else until `x-ratelimit-reset`, else back off exponentially).
//!
//! Uses: `system`.

use std::path::Path;
use std::time::Duration;

use crate::system::{Downloaded, FetchJob, Fetched, HttpResponse, SysError, System, Wait};

/// Attempts of one request, the first included.
pub const ATTEMPTS: u32 = 5;
/// The first backoff, in seconds; it doubles each time.
pub const BASE_DELAY_SECS: u64 = 2;
/// The longest backoff, in seconds.
pub const MAX_DELAY_SECS: u64 = 60;
/// The longest a server may ask us to wait (`Retry-After`, a rate limit's
/// reset), in seconds; past it the build fails with that reason.
pub const MAX_WAIT_SECS: u64 = 900;

/// Whether an HTTP status is worth asking again: a server error, 429, and a
/// 403 that is GitHub's rate limit, primary (`x-ratelimit-remaining: 0`)
/// or secondary (`retry-after`). Source: GitHub docs, "Rate limits for the
/// REST API" ("If you exceed a secondary rate limit, you will receive a
/// 403 or 429 response … If the retry-after response header is present,
/// you should not retry your request until after that many seconds").
fn transient(status: u16, wait: &Wait) -> bool {
    matches!(status, 429 | 500 | 502 | 503 | 504)
        || (status == 403 && (wait.rate_limit_reset.is_some() || wait.retry_after_secs.is_some()))
}

/// How long to wait before attempt `attempt` (1-based retries), or why not to.
fn delay(sys: &mut dyn System, what: &str, attempt: u32, wait: &Wait) -> Result<u64, String> {
    let now = sys.now();
    if let Some(reset) = wait.rate_limit_reset {
        let secs = reset.saturating_sub(now) + 1;
        return if secs <= MAX_WAIT_SECS {
            Ok(secs)
        } else {
            Err(format!(
                "GitHub's API rate limit for this address is used up until {reset} (Unix time, {secs} s from now); \
                 set GITHUB_TOKEN for a higher limit"
            ))
        };
    }
    if let Some(secs) = wait.retry_after_secs {
        return if secs <= MAX_WAIT_SECS {
            Ok(secs)
        } else {
            Err(format!("the server asks to wait {secs} s, longer than llmgw waits ({MAX_WAIT_SECS} s)"))
        };
    }
    let backoff = (BASE_DELAY_SECS << (attempt - 1).min(16)).min(MAX_DELAY_SECS);
    // Jitter that differs by request and by moment (so nodes spread), and
    // is the same in every run of a simulation.
    let seed = what.bytes().fold(u64::from(attempt) ^ now, |h, b| h.wrapping_mul(1_099_511_628_211) ^ u64::from(b));
    Ok(backoff + seed % (backoff / 4 + 1))
}

/// The last error, saying that it was the last of [`ATTEMPTS`].
fn after_attempts(e: SysError) -> SysError {
    match e {
        SysError::Http { status, message, wait } => {
            SysError::Http { status, message: format!("{message} (after {ATTEMPTS} attempts)"), wait }
        }
        SysError::Network(m) => SysError::Network(format!("{m} (after {ATTEMPTS} attempts)")),
        other => other,
    }
}

/// GETs `url` as [`System::http_get`] does, asking again after a transient
/// status or a broken connection. The last answer is returned as it is.
///
/// # Errors
/// The last [`SysError`], or a [`SysError::Http`] saying why no more
/// waiting is done (a rate limit too far away).
pub fn get(sys: &mut dyn System, what: &str, url: &str, accept: &str) -> Result<HttpResponse, SysError> {
    attempts(sys, what, "asking again", None, |sys| sys.http_get(url, accept), answered_transiently)
}

/// As [`get`], for a document never more than `limit` bytes
/// ([`System::http_get_at_most`]); one going on past it is not asked again.
///
/// # Errors
/// As [`get`]; [`SysError::TooLong`].
pub fn get_at_most(
    sys: &mut dyn System,
    what: &str,
    url: &str,
    accept: &str,
    limit: (u64, &'static str),
) -> Result<HttpResponse, SysError> {
    attempts(sys, what, "asking again", None, |sys| sys.http_get_at_most(url, accept, limit), answered_transiently)
}

/// Downloads `url` to `dest` (at most `size` bytes, when declared) as
/// [`System::download`] does, starting over
/// after a transient status or a broken connection.
///
/// # Errors
/// The last [`SysError`], with `(after N attempts)` when it was retried.
pub fn download(
    sys: &mut dyn System,
    what: &str,
    url: &str,
    dest: &Path,
    size: Option<u64>,
) -> Result<Downloaded, SysError> {
    let once = |sys: &mut dyn System| {
        sys.remove(dest)?;
        sys.download(url, dest, size)
    };
    attempts(sys, what, "downloading again", None, once, failed_transiently)
}

/// Downloads and unpacks one archive as [`System::fetch_unpack`] does,
/// into its emptied directory each time, starting over after a transient
/// status or a broken connection. `first` is the result of a first attempt
/// already made (the jobs of a build are first tried side by side).
///
/// # Errors
/// As [`download`].
pub fn fetch_unpack(
    sys: &mut dyn System,
    what: &str,
    job: &FetchJob,
    first: Option<Result<Fetched, SysError>>,
) -> Result<Fetched, SysError> {
    let once = |sys: &mut dyn System| {
        sys.remove(&job.into)?;
        sys.create_dir_all(&job.into)?;
        sys.fetch_unpack(std::slice::from_ref(job)).pop().expect("one result per job")
    };
    attempts(sys, what, "downloading again", first, once, failed_transiently)
}

/// Whether an answer to a GET is worth asking again for: when to, and the
/// HTTP status (0 for a broken connection).
fn answered_transiently(result: &Result<HttpResponse, SysError>) -> Option<(Wait, u16)> {
    match result {
        Ok(r) if transient(r.status, &r.wait) => Some((r.wait, r.status)),
        Err(SysError::Network(_)) => Some((Wait::default(), 0)),
        _ => None,
    }
}

/// Whether a download failed in a way worth trying again: when to, and the
/// HTTP status (0 for a broken connection).
fn failed_transiently<T>(result: &Result<T, SysError>) -> Option<(Wait, u16)> {
    match result {
        Err(SysError::Http { status, wait, .. }) if transient(*status, wait) => Some((*wait, *status)),
        Err(SysError::Network(_)) => Some((Wait::default(), 0)),
        _ => None,
    }
}

/// Runs `attempt_once` until `again` says its result is final, or it has
/// been tried [`ATTEMPTS`] times, waiting between tries (`doing` names the
/// retry in the log: "downloading again"); `first`, when given, stands for
/// the first try. The last result is returned, an error saying it was the
/// last of [`ATTEMPTS`].
fn attempts<T>(
    sys: &mut dyn System,
    what: &str,
    doing: &str,
    mut first: Option<Result<T, SysError>>,
    mut attempt_once: impl FnMut(&mut dyn System) -> Result<T, SysError>,
    again: impl Fn(&Result<T, SysError>) -> Option<(Wait, u16)>,
) -> Result<T, SysError> {
    let mut attempt = 1;
    loop {
        let result = first.take().unwrap_or_else(|| attempt_once(sys));
        let Some((wait, status)) = again(&result) else { return result };
        if attempt >= ATTEMPTS {
            return result.map_err(after_attempts);
        }
        match delay(sys, what, attempt, &wait) {
            Ok(secs) => {
                let failed = match &result {
                    Err(e) => e.to_string(),
                    Ok(_) => format!("HTTP {status}"),
                };
                sys.retrying(&format!("{what}: {failed}; {doing} in {secs} s (attempt {} of {ATTEMPTS})", attempt + 1));
                sys.sleep(Duration::from_secs(secs));
            }
            Err(why) => return Err(SysError::Http { status, message: why, wait }),
        }
        attempt += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::system::{Cmd, Output};
    use crate::testing::NoEffects;

    /// A machine whose HTTP answers are scripted, on a clock that waits
    /// without time passing, keeping what it was told about retries.
    struct Scripted {
        effects: NoEffects,
        answers: VecDeque<Result<HttpResponse, SysError>>,
        now: u64,
        said: Vec<String>,
    }

    impl System for Scripted {
        fn effects(&self) -> &dyn crate::system::Effects {
            &self.effects
        }
        fn http_get(&mut self, _: &str, _: &str) -> Result<HttpResponse, SysError> {
            self.answers.pop_front().expect("an answer scripted")
        }
        fn run(&mut self, cmd: &Cmd) -> Result<Output, SysError> {
            panic!("nothing is run here: {}", cmd.display())
        }
        fn disk_free(&mut self, _: &Path) -> Result<u64, SysError> {
            Ok(0)
        }
        fn now(&mut self) -> u64 {
            self.now
        }
        fn sleep(&mut self, d: Duration) {
            self.now += d.as_secs();
        }
        fn retrying(&mut self, message: &str) {
            self.said.push(message.to_string());
        }
    }

    fn scripted(answers: Vec<Result<HttpResponse, SysError>>) -> Scripted {
        Scripted { effects: NoEffects, answers: answers.into(), now: 1_000_000, said: Vec::new() }
    }

    fn status(status: u16) -> Result<HttpResponse, SysError> {
        Ok(HttpResponse { status, body: vec![], wait: Wait::default(), next: None })
    }

    #[test]
    fn every_retry_says_what_failed_which_attempt_it_is_and_how_long_it_waits() {
        let dns = || Err(SysError::Network("dns error: Temporary failure in name resolution".into()));
        let mut sys = scripted(vec![dns(), status(503), dns(), status(200)]);
        let got = get(&mut sys, "release b10850", "http://x/", "*/*").unwrap();
        assert_eq!(got.status, 200);
        assert_eq!(sys.said.len(), 3, "one line per retry: {:?}", sys.said);
        let waits: Vec<u64> = sys
            .said
            .iter()
            .map(|l| l.rsplit_once(" in ").unwrap().1.split(" s ").next().unwrap().parse().unwrap())
            .collect();
        for (i, (line, wait)) in sys.said.iter().zip(&waits).enumerate() {
            let base = BASE_DELAY_SECS << i;
            assert!((base..=base + base / 4).contains(wait), "{line}");
            assert!(line.starts_with("release b10850: "), "{line}");
            assert!(line.ends_with(&format!("; asking again in {wait} s (attempt {} of {ATTEMPTS})", i + 2)), "{line}");
        }
        assert!(sys.said[0].contains("Temporary failure in name resolution"), "{}", sys.said[0]);
        assert!(sys.said[1].contains(": HTTP 503;"), "{}", sys.said[1]);
        assert_eq!(sys.now, 1_000_000 + waits.iter().sum::<u64>(), "it waited what it said");
    }

    #[test]
    fn a_failure_no_retry_can_mend_is_returned_at_once() {
        let no_route = SysError::Unreachable("this machine has no route to api.github.com; not asked again".into());
        let mut sys = scripted(vec![Err(no_route.clone())]);
        assert_eq!(get(&mut sys, "release b10850", "http://x/", "*/*").unwrap_err(), no_route);
        assert!(sys.said.is_empty());
        assert_eq!(sys.now, 1_000_000, "no wait");
    }
}
