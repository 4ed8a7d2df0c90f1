//! Faults of the fake publisher: answers that come before the truth's
//! (priority 1) for `times` requests or always, an HTTP error with GitHub's
//! headers (`retry-after`, an exhausted rate limit) or a body that goes
//! wrong on the way (cut short, reset, one byte changed, slow, a redirect
//! loop). A body that breaks off is served by [`super::broken`], which the
//! fault's answer redirects to.

use std::collections::BTreeMap;
use std::io;

use wiremock::matchers::method;
use wiremock::{Mock, ResponseTemplate};

use super::github::{RATE_LIMIT_RESET, api_json, redirect};
use super::{broken, decoded_path, invalid};
use crate::truth::{self, BodyFault, Fault};

/// The routes of `faults`, on the publisher at `base` whose assets are
/// `assets` (served path and bytes by `owner/name@tag asset`), and the host
/// serving the bodies that break off, when one is needed.
///
/// # Errors
/// `InvalidData` naming the fault whose release or asset does not exist,
/// or whose answer cannot be made; the broken host cannot start.
pub(super) fn routes(
    base: &str,
    faults: &[Fault],
    assets: &BTreeMap<String, (String, Vec<u8>)>,
) -> io::Result<(Vec<Mock>, Option<broken::BrokenHost>)> {
    let mut mocks = Vec::new();
    // Faults first (priority 1): they answer before the truth does.
    let mut targets = Vec::new();
    for f in faults {
        let (target, body) = match &f.asset {
            Some(a) => assets.get(&format!("{} {a}", f.release)).cloned().map(|(p, b)| (p, Some(b))),
            None => f.release.split_once('@').map(|(repo, tag)| (format!("/repos/{repo}/releases/tags/{tag}"), None)),
        }
        .ok_or_else(|| invalid(format!("fault on `{}`: no such release or asset", f.release)))?;
        targets.push((f, target, body));
    }
    // Bodies that break off mid-way come from the broken host, which
    // the fault's answer redirects to.
    let broken: Vec<broken::Broken> = targets
        .iter()
        .filter_map(|(f, _, body)| match (f.status, f.body, body) {
            (None, Some(kind @ (BodyFault::CutShort | BodyFault::Reset)), Some(whole)) => {
                Some(broken::Broken { whole: whole.clone().into(), kind })
            }
            (None, Some(BodyFault::Endless), whole) => {
                Some(broken::Broken { whole: whole.clone().unwrap_or_default().into(), kind: BodyFault::Endless })
            }
            _ => None,
        })
        .collect();
    let broken_host = if broken.is_empty() { None } else { Some(broken::BrokenHost::start(broken)?) };
    let urls: Vec<String> = broken_host.iter().flat_map(|h| h.urls()).map(str::to_string).collect();
    let mut broken_urls = urls.iter().map(String::as_str);
    for (f, target, body) in targets {
        let answer = fault_answer(f, base, &target, body.as_deref(), &mut broken_urls)
            .map_err(|why| invalid(format!("fault on `{}`: {why}", f.release)))?;
        let mut mock = Mock::given(method("GET")).and(decoded_path(target)).respond_with(answer).with_priority(1);
        if let Some(n) = f.times {
            mock = mock.up_to_n_times(n);
        }
        mocks.push(mock);
    }
    Ok((mocks, broken_host))
}

/// The answer of a fault: its status with GitHub's headers, or a body going
/// wrong. `body` is what the target serves when it is an asset; a body that
/// breaks off is a redirect to the next of `broken_urls`.
fn fault_answer<'a>(
    f: &Fault,
    base: &str,
    target: &str,
    body: Option<&[u8]>,
    broken_urls: &mut impl Iterator<Item = &'a str>,
) -> Result<ResponseTemplate, String> {
    let whole = || body.ok_or("a body fault of this kind needs an `asset`");
    let answer = match (f.status, f.body) {
        (Some(status), None) => {
            let mut answer = api_json(status, fault_body(status));
            if let Some(secs) = f.retry_after_secs {
                answer = answer.insert_header("retry-after", secs.to_string().as_str());
            }
            if let Some(secs) = f.rate_limit_reset_in_secs {
                answer = answer
                    .insert_header("x-ratelimit-remaining", "0")
                    .insert_header("x-ratelimit-reset", RATE_LIMIT_RESET.saturating_add(secs).to_string().as_str());
            }
            answer
        }
        (None, Some(kind)) => {
            if f.retry_after_secs.is_some() || f.rate_limit_reset_in_secs.is_some() {
                return Err("`retry_after_secs` and `rate_limit_reset_in_secs` go with a `status`, not a `body`".into());
            }
            let ok = || ResponseTemplate::new(200);
            match kind {
                BodyFault::CutShort | BodyFault::Reset => {
                    whole()?;
                    redirect(broken_urls.next().ok_or("no broken body served for it")?)
                }
                BodyFault::Endless => redirect(broken_urls.next().ok_or("no endless body served for it")?),
                BodyFault::OneByteChanged => {
                    let mut changed = whole()?.to_vec();
                    let mid = changed.len() / 2;
                    if let Some(b) = changed.get_mut(mid) {
                        *b ^= 0x01;
                    }
                    ok().set_body_raw(changed, "application/octet-stream")
                }
                BodyFault::Slow => ok().set_delay(std::time::Duration::from_secs(truth::SLOW_FAULT_SECS)),
                BodyFault::RedirectLoop => redirect(&format!("{base}{target}")),
            }
        }
        _ => return Err("give exactly one of `status` and `body`".into()),
    };
    Ok(answer)
}

/// GitHub's body for an error status.
fn fault_body(status: u16) -> Vec<u8> {
    let message = match status {
        403 | 429 => {
            "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit.)"
        }
        500 => "Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        _ => "Error",
    };
    serde_json::json!({ "message": message, "status": status.to_string() }).to_string().into_bytes()
}
