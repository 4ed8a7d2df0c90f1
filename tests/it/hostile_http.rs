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

/// Issue 26, kinds 12 and 14: a redirect to `file://` is refused in words
/// that say so (not "HTTP 302"), and one to a link-local metadata address
/// is never followed; each refusal names the URL and the rule.
#[test]
fn a_redirect_goes_nowhere_a_download_may_not() {
    let http = Http::loopback(2, 5).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = serve(Body::Redirect { to: "file:///etc/passwd".into() });
    let got = http.download(&format!("{file}/asset"), &dir.path().join("a"), None).unwrap_err();
    assert_eq!(
        got.to_string(),
        "refused to follow the server to `file:///etc/passwd`: a redirect to the scheme `file`; only http and https \
         redirects are followed"
    );
    let metadata = serve(Body::Redirect { to: "http://169.254.169.254/latest/meta-data/".into() });
    let got = http.http_get(&format!("{metadata}/release"), "application/json").unwrap_err();
    let SysError::RefusedUrl { url, rule } = &got else { panic!("{got:?}") };
    assert_eq!(url, "http://169.254.169.254/latest/meta-data/");
    assert!(
        rule.starts_with("a redirect from 127.0.0.1 to another host; only redirects within the same host"),
        "{rule}"
    );
    assert!(!dir.path().join("a").exists() || std::fs::read(dir.path().join("a")).unwrap().is_empty());
}

/// Issue 26, kind 14: the credentials of `--offline-base` never reach a
/// log or a message, even at `-vv`, even when the mirror's answer is refused.
#[test]
fn credentials_in_the_offline_base_are_never_shown() {
    let t = tempfile::tempdir().unwrap();
    let mirror = serve(Body::Redirect { to: "file:///etc/passwd".into() });
    let base = mirror.replace("http://", "http://ops:s3cret@") + "/mirror";
    let sums = t.path().join("sums.json");
    let asset = "uv-x86_64-unknown-linux-gnu.tar.gz";
    std::fs::write(&sums, format!("{{\"{asset}\": \"{}\"}}", "0".repeat(64))).unwrap();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("llmgw"))
        .args(["-vv", "provision", "--host"])
        .arg(super::host_path("v100.json"))
        .args(["--want", "uv@0.12.20", "--offline-base", &base, "--offline-sha256"])
        .arg(&sums)
        .arg("--engines-dir")
        .arg(t.path().join("engines"))
        .output()
        .unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(all.contains("refused to follow the server to `file:///etc/passwd`"), "the mirror was asked: {all}");
    assert!(!all.contains("s3cret"), "{all}");
    let bad = std::process::Command::new(assert_cmd::cargo::cargo_bin("llmgw"))
        .args(["provision", "--want", "uv@0.12.20", "--offline-base", "ftp://ops:s3cret@mirror/x", "--offline-sha256"])
        .arg(&sums)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{said}");
    assert!(said.contains("`ftp://***@mirror/x`") && !said.contains("s3cret"), "{said}");
}

/// Issue 26, kind 11: an offline install from a bundle's manifest holds
/// the mirror to the size the manifest declares: an endless body is cut
/// there and refused, not read up to 16 GiB.
#[test]
fn an_offline_mirror_is_held_to_the_manifests_size() {
    let t = tempfile::tempdir().unwrap();
    let base = serve(Body::Endless) + "/mirror";
    let manifest = t.path().join("manifest.json");
    let files = serde_json::json!([{"engine": "uv", "version": "0.12.20", "arch": "amd64", "variant": "x86_64",
        "asset": "uv-x86_64-unknown-linux-gnu.tar.gz", "size": 4096, "sha256": "ab".repeat(32)}]);
    std::fs::write(&manifest, serde_json::json!({"format": 1, "files": files, "llmgw": []}).to_string()).unwrap();
    let started = Instant::now();
    let out = std::process::Command::new(assert_cmd::cargo::cargo_bin("llmgw"))
        .args(["provision", "--format", "json", "--host"])
        .arg(super::host_path("v100.json"))
        .args(["--want", "uv@0.12.20", "--offline-base", &base, "--offline-sha256"])
        .arg(&manifest)
        .arg("--engines-dir")
        .arg(t.path().join("engines"))
        .output()
        .unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(all.contains("the answer goes on past 4096 bytes"), "{all}");
    assert!(started.elapsed() < Duration::from_secs(60), "{:?}", started.elapsed());
}

/// A server that takes the request and never answers: the first byte's
/// limit (the client's limit on each read) ends it, as a failure worth
/// asking again.
#[test]
fn a_server_that_never_answers_is_given_up_at_the_first_bytes_limit() {
    let base = serve(Body::Silent);
    let http = Http::loopback(2, 1).unwrap();
    let started = Instant::now();
    let got = http.http_get(&format!("{base}/release"), "application/json").unwrap_err();
    assert!(matches!(got, SysError::Network(_)), "{got:?}");
    assert!(got.to_string().contains("timed out"), "{got}");
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}
