//! An asset GitHub's API gives no digest (`null`): the release's own
//! `<asset>.sha256` beside it is the digest (uv publishes one per archive),
//! read from the same release through the same client; one that disagrees
//! with the bytes, is not a sidecar, or is too long is refused naming the
//! asset and what is wrong; with neither, the asset is refused unverified.
//! Scenarios `mocks/scenarios/uv-*sidecar*.json` and `uv-no-digest-no-sidecar`.

use llmgw_core::converge::{State, Status};
use llmgw_core::recipe::Want;
use llmgw_sim::Simulation;
use llmgw_sim::truth::scenario::Scenario;
use llmgw_sim::truth::{Catalog, embedded_catalog};

const UV: &str = "uv-x86_64-unknown-linux-gnu.tar.gz";

fn scenario(name: &str) -> Catalog {
    let path = super::host_path(&format!("../../mocks/scenarios/{name}.json"));
    Scenario::from_json(&std::fs::read_to_string(path).unwrap()).unwrap().apply(embedded_catalog()).unwrap()
}

fn requests_to(sim: &Simulation, path_part: &str) -> usize {
    sim.server().requests().iter().filter(|(_, p)| p.contains(path_part)).count()
}

/// uv@0.13.9 on the V100 host (x86_64) against `catalog`.
fn uv(catalog: &Catalog) -> (Simulation, Status) {
    let mut sim = Simulation::with_catalog(super::host("v100.json"), catalog).unwrap();
    let s = sim.converge(&[Want::parse("uv@0.13.9").unwrap()]).engines.remove(0);
    (sim, s)
}

/// GETs `url` from the fake server: the body.
fn get(url: &str) -> Vec<u8> {
    let http = llmgw_system::http::Http::loopback(10, 60).unwrap();
    let resp = http.http_get(url, "*/*").unwrap();
    assert_eq!(resp.status, 200, "{url}");
    resp.body
}

/// Release 0.13.9 of uv as the fake server's API gives it: the asset named `name`.
fn api_asset(sim: &Simulation, name: &str) -> serde_json::Value {
    let url = format!("{}/repos/astral-sh/uv/releases/tags/0.13.9", sim.server().base_url());
    let json: serde_json::Value = serde_json::from_slice(&get(&url)).unwrap();
    json["assets"].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap().clone()
}

/// The archive's own sha256 as the fake server publishes it in the API.
fn published_sha256() -> String {
    let sim = Simulation::with_catalog(super::host("v100.json"), embedded_catalog()).unwrap();
    let digest = api_asset(&sim, UV)["digest"].as_str().unwrap().to_string();
    digest.strip_prefix("sha256:").unwrap().to_string()
}

#[test]
fn the_release_publishes_a_sidecar_beside_each_uv_archive_in_uvs_own_form() {
    let sim = Simulation::with_catalog(super::host("v100.json"), embedded_catalog()).unwrap();
    let url = format!("{}/repos/astral-sh/uv/releases/tags/0.13.9", sim.server().base_url());
    let json: serde_json::Value = serde_json::from_slice(&get(&url)).unwrap();
    let names: Vec<&str> = json["assets"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            UV,
            "uv-x86_64-unknown-linux-gnu.tar.gz.sha256",
            "uv-aarch64-unknown-linux-gnu.tar.gz",
            "uv-aarch64-unknown-linux-gnu.tar.gz.sha256"
        ]
    );
    let sidecar = get(api_asset(&sim, &format!("{UV}.sha256"))["browser_download_url"].as_str().unwrap());
    assert_eq!(String::from_utf8(sidecar).unwrap(), format!("{}  {UV}\n", published_sha256()));
}

#[test]
fn without_githubs_digest_uv_is_verified_against_its_sidecar_and_installed() {
    let (sim, s) = uv(&scenario("uv-digest-from-sidecar"));
    assert_eq!(s.state, State::Ready, "{}", s.detail);
    // The sidecar through its 302 to the asset host, as every asset is; read once.
    assert_eq!(requests_to(&sim, &format!("/download/0.13.9/{UV}.sha256")), 1);
    assert_eq!(requests_to(&sim, &format!("{UV}.sha256")), 2);
    let api = api_asset(&sim, UV);
    assert!(api["digest"].is_null(), "the API gives none: {api}");
}

#[test]
fn a_sidecar_that_disagrees_with_the_bytes_is_refused_naming_the_asset_and_both_digests() {
    let (sim, s) = uv(&scenario("uv-sidecar-disagrees"));
    assert_eq!(s.state, State::Failed);
    let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    let expected = format!(
        "{UV}: sha256 {} does not match the digest in the publisher's {UV}.sha256 {empty}, downloaded twice",
        published_sha256()
    );
    assert!(s.detail.contains(&expected), "{}", s.detail);
    assert_eq!(requests_to(&sim, &format!("/download/0.13.9/{UV}")), 2 + 1, "the archive twice, the sidecar once");
}

#[test]
fn a_sidecar_that_is_not_one_is_refused_before_any_download() {
    let (sim, s) = uv(&scenario("uv-sidecar-malformed"));
    assert_eq!(s.state, State::Failed);
    assert!(
        s.detail.contains(&format!(
            "asset `{UV}` has no sha256 digest from GitHub, and its {UV}.sha256 holds `{UV}: OK`, which is not \
             `<sha256>`, `<sha256>  {UV}` or `<sha256> *{UV}`; it cannot be verified, so it is not installed"
        )),
        "{}",
        s.detail
    );
    assert_eq!(requests_to(&sim, &format!("/download/0.13.9/{UV}")), 1, "the sidecar only, never the archive");
}

#[test]
fn with_neither_digest_nor_sidecar_the_refusal_says_both_are_missing() {
    let (sim, s) = uv(&scenario("uv-no-digest-no-sidecar"));
    assert_eq!(s.state, State::Failed);
    assert!(
        s.detail.contains(&format!(
            "asset `{UV}` has no sha256 digest (GitHub gives none, as for assets uploaded before June 2025, and \
             release `0.13.9` publishes no `{UV}.sha256`); it cannot be verified, so it is not installed"
        )),
        "{}",
        s.detail
    );
    assert_eq!(requests_to(&sim, "/download/0.13.9/"), 0, "nothing downloaded");
}

#[test]
fn a_sidecar_longer_than_a_sidecar_ever_is_cut_and_refused() {
    let long = "0".repeat(600);
    let text = format!(
        r#"{{"description": "x", "digests": [{{"release": "astral-sh/uv@0.13.9", "asset": "{UV}", "no_api_digest": true, "sidecar_line": "{long}"}}]}}"#
    );
    let catalog = Scenario::from_json(&text).unwrap().apply(embedded_catalog()).unwrap();
    let (_, s) = uv(&catalog);
    assert_eq!(s.state, State::Failed);
    assert!(
        s.detail.contains(&format!(
            "its {UV}.sha256 cannot be fetched: the answer goes on past 512 bytes, more than a .sha256 file ever is"
        )),
        "{}",
        s.detail
    );
}

#[test]
fn a_scenario_digest_patch_naming_nothing_or_both_is_refused_with_where() {
    let apply = |rest: &str| {
        let text = format!(r#"{{"description": "x", "digests": [{{"release": "astral-sh/uv@0.13.9", {rest}}}]}}"#);
        Scenario::from_json(&text).unwrap().apply(embedded_catalog()).map(drop).unwrap_err()
    };
    assert_eq!(
        apply(r#""asset": "nope.tar.gz", "no_api_digest": true"#),
        "digests[0]: release `astral-sh/uv@0.13.9` has no archive `nope.tar.gz`"
    );
    assert_eq!(
        apply(&format!(r#""asset": "{UV}", "sidecar_line": "x", "no_sidecar": true"#)),
        "digests[0]: give `sidecar_line` or `no_sidecar`, not both"
    );
    assert_eq!(
        apply(&format!(r#""asset": "{UV}""#)),
        "digests[0]: changes nothing: give `no_api_digest`, `sidecar_line` or `no_sidecar`"
    );
    assert_eq!(
        apply(&format!(r#""asset": "{UV}", "sidecar_line": "x""#)),
        "digests[0]: a `sidecar_line` is read only when GitHub gives no digest: add `\"no_api_digest\": true`"
    );
    let llama = r#"{"description": "x", "digests": [{"release": "ggml-org/llama.cpp@b10850", "asset": "llama-b10850-bin-ubuntu-x64.tar.gz", "no_sidecar": true}]}"#;
    assert_eq!(
        Scenario::from_json(llama).unwrap().apply(embedded_catalog()).map(drop).unwrap_err(),
        "digests[0]: release `ggml-org/llama.cpp@b10850` publishes no `llama-b10850-bin-ubuntu-x64.tar.gz.sha256` to change"
    );
}

#[test]
fn a_bundle_takes_the_sidecars_digest_too_and_refuses_uv_with_neither() {
    let bundle = |catalog: &Catalog| {
        let publisher = llmgw_sim::publisher::FakeServer::start(catalog).unwrap();
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("b.tar");
        let api = publisher.base_url();
        let args = ["bundle", "create", "--github-api", &api, "--want", "uv@0.13.9", "--arch", "amd64", "--out"];
        let got = assert_cmd::Command::cargo_bin("llmgw").unwrap().args(args).arg(&out).output().unwrap();
        (got.status.code(), String::from_utf8(got.stderr).unwrap())
    };
    let (code, err) = bundle(&scenario("uv-digest-from-sidecar"));
    assert_eq!(code, Some(0), "{err}");
    let (code, err) = bundle(&scenario("uv-no-digest-no-sidecar"));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!("publishes no `{UV}.sha256`); it cannot be verified, so it is not bundled")),
        "{err}"
    );
    let (code, err) = bundle(&scenario("uv-sidecar-malformed"));
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(&format!("its {UV}.sha256 holds `{UV}: OK`")) && err.contains("so it is not bundled"),
        "{err}"
    );
}
