//! Issue 26, kinds 5 and 12: a server that trickles, stalls or redirects
//! where it should not, against the client every download goes through
//! (`llmgw_system::http::Http`). Deadlines are on time, checked after every
//! read however small; a read that times out says so.

use std::time::{Duration, Instant};

use llmgw_core::system::{FetchJob, SysError};
use llmgw_system::http::Http;

#[path = "../support/trickle.rs"]
mod trickle;
use trickle::{Body, serve};

/// A 3,306-byte body at one byte a second, against a 2-second deadline:
/// refused as too slow within the deadline and one read's slack, for a
/// document, a download and an archive alike.
#[test]
fn a_trickle_is_refused_at_its_deadline() {
    let base = serve(Body::Trickle { len: 3306, every: Duration::from_secs(1) });
    let http = Http::loopback(2, 5).unwrap().with_min_deadline(2);
    let dir = tempfile::tempdir().unwrap();
    let slack = Duration::from_secs(6);

    let started = Instant::now();
    let got = http.http_get(&format!("{base}/release"), "application/json");
    assert!(matches!(got, Err(SysError::TooSlow { secs: 2, .. })), "{got:?}");
    assert!(started.elapsed() < slack, "document: {:?}", started.elapsed());

    let started = Instant::now();
    let got = http.download(&format!("{base}/asset"), &dir.path().join("asset"), Some(3306));
    assert!(matches!(got, Err(SysError::TooSlow { secs: 2, .. })), "{got:?}");
    assert!(started.elapsed() < slack, "download: {:?}", started.elapsed());

    let started = Instant::now();
    let into = dir.path().join("unpacked");
    std::fs::create_dir(&into).unwrap();
    let job = FetchJob { url: format!("{base}/archive.tar.gz"), into, size: Some(3306) };
    let got = http.fetch_unpack(&[job], &|_, _, _| {});
    assert!(matches!(got.as_slice(), [Err(SysError::TooSlow { secs: 2, .. })]), "{got:?}");
    assert!(started.elapsed() < slack, "archive: {:?}", started.elapsed());
    let said = SysError::TooSlow { secs: 2, min_rate: 1653 }.to_string();
    assert_eq!(said, "the download took longer than 2 s, its deadline (at least 1653 bytes a second)");
}

/// Headers, then silence: the read's limit ends it, in words that say it
/// timed out (reqwest's own are "error decoding response body").
#[test]
fn a_stalled_body_says_it_timed_out() {
    let base = serve(Body::Stall { len: 1000 });
    let http = Http::loopback(2, 1).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let got = http.download(&format!("{base}/asset"), &dir.path().join("asset"), Some(1000)).unwrap_err();
    assert_eq!(got.to_string(), "the download timed out: no byte arrived for 1 s, the limit on each read");
    assert!(matches!(got, SysError::Network(_)), "asked again, as a broken connection is: {got:?}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    let got = http.http_get(&format!("{base}/release"), "application/json").unwrap_err();
    assert!(got.to_string().contains("timed out"), "{got}");
}
