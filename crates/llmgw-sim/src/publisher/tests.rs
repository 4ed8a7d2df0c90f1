//! The fake publisher against the truth it serves: every release and index
//! parses and is served with matching digests, from start to start the same.

use std::io::Read;

use serde_json::Value;

use std::collections::BTreeMap;

use super::github::NOT_FOUND_TAG;
use super::pypi::{NOT_FOUND_INDEX, SIMPLE_JSON, UPLOAD_TIME};
use super::*;
use sha2::{Digest, Sha256};

use crate::truth::Dist;
use crate::truth::embedded_catalog;
use crate::truth::stub::{Backend, ElfStub};

fn client(follow: bool) -> reqwest::blocking::Client {
    let policy = if follow { reqwest::redirect::Policy::limited(10) } else { reqwest::redirect::Policy::none() };
    reqwest::blocking::Client::builder().redirect(policy).build().unwrap()
}

fn release_json(server: &FakeServer, repo: &str, tag: &str) -> Value {
    let url = format!("{}/repos/{repo}/releases/tags/{tag}", server.base_url());
    let resp = client(true).get(url).send().unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/json; charset=utf-8");
    assert_eq!(resp.headers()["x-ratelimit-remaining"], "59");
    assert_eq!(resp.headers()["x-ratelimit-resource"], "core");
    serde_json::from_slice(&resp.bytes().unwrap()).unwrap()
}

fn asset<'a>(release: &'a Value, name: &str) -> &'a Value {
    release["assets"].as_array().unwrap().iter().find(|a| a["name"] == name).unwrap()
}

#[test]
fn serves_the_release_and_each_archive_matches_its_digest() {
    let server = FakeServer::start(embedded_catalog()).unwrap();
    let base = server.base_url();
    let release = release_json(&server, "ggml-org/llama.cpp", "b11459");
    assert_eq!(release["tag_name"], "b11459");
    assert_eq!(release["target_commitish"], "master");
    // llama.cpp's b<N> releases are prereleases.
    assert_eq!((release["draft"].as_bool(), release["prerelease"].as_bool()), (Some(false), Some(true)));
    assert_eq!(release["assets"].as_array().unwrap().len(), 10);

    let name = "llama-b11459-bin-ubuntu-cuda-12.8-x64.tar.gz";
    let a = asset(&release, name);
    let id = a["id"].as_u64().unwrap();
    assert_eq!(a["url"], format!("{base}/repos/ggml-org/llama.cpp/releases/assets/{id}"));
    assert_eq!(a["browser_download_url"], format!("{base}/ggml-org/llama.cpp/releases/download/b11459/{name}"));
    assert_eq!((a["state"].as_str(), a["content_type"].as_str()), (Some("uploaded"), Some("application/gzip")));
    assert!(a["label"].is_null());

    // The download answers 302 to the archive's location, as github.com does.
    let url = a["browser_download_url"].as_str().unwrap();
    let hop = client(false).get(url).send().unwrap();
    assert_eq!(hop.status(), 302);
    assert_eq!(hop.headers()["location"], format!("{base}/github-production-release-asset/{id}/{name}"));
    assert_eq!(server.downloads(), 0);

    let resp = client(true).get(url).send().unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "application/octet-stream");
    let length: u64 = resp.headers()["content-length"].to_str().unwrap().parse().unwrap();
    let body = resp.bytes().unwrap();
    assert_eq!((length, body.len() as u64), (a["size"].as_u64().unwrap(), length));
    assert_eq!(format!("sha256:{}", hex::encode(Sha256::digest(&body))), a["digest"].as_str().unwrap());
    assert_eq!(server.downloads(), 1);

    // The archive holds the truth: the CUDA backend's stub, under llama-b11459/.
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&body[..]));
    let mut cuda = None;
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        assert!(path.starts_with("llama-b11459/"), "{path}");
        if path == "llama-b11459/libggml-cuda.so" {
            assert_eq!(entry.header().mode().unwrap(), 0o755);
            let mut data = Vec::new();
            entry.read_to_end(&mut data).unwrap();
            cuda = ElfStub::from_bytes(&data);
        }
    }
    let Some(Backend::Cuda { sass, .. }) = cuda.and_then(|s| s.backend) else { panic!("no CUDA backend") };
    assert_eq!(sass, ["8.6", "8.9", "12.0a"]);

    // Every other asset, through the API's octet-stream route.
    for each in release["assets"].as_array().unwrap() {
        let api = client(true).get(each["url"].as_str().unwrap());
        let body = api.header("accept", "application/octet-stream").send().unwrap().bytes().unwrap();
        assert_eq!(format!("sha256:{}", hex::encode(Sha256::digest(&body))), each["digest"].as_str().unwrap());
    }
    assert_eq!(server.downloads(), 11);
    let meta = client(true).get(a["url"].as_str().unwrap()).send().unwrap().bytes().unwrap();
    let meta: Value = serde_json::from_slice(&meta).unwrap();
    assert_eq!(meta["digest"], a["digest"]);
    assert_eq!(server.downloads(), 11);

    let requests = server.requests();
    assert_eq!(requests[0], ("GET".to_string(), "/repos/ggml-org/llama.cpp/releases/tags/b11459".to_string()));
    assert_eq!(requests[1], ("GET".to_string(), format!("/ggml-org/llama.cpp/releases/download/b11459/{name}")));
    assert_eq!(requests.len(), 1 + 1 + 2 + 2 * 10 + 1);

    let uv = release_json(&server, "astral-sh/uv", "0.12.20");
    assert_eq!((uv["tag_name"].as_str(), uv["target_commitish"].as_str()), (Some("0.12.20"), Some("main")));
}

#[test]
fn archives_and_ids_are_the_same_from_start_to_start() {
    let digests = |s: &FakeServer| -> Vec<(Value, Value, Value)> {
        [("ggml-org/llama.cpp", "b11459"), ("astral-sh/uv", "0.12.20"), ("vllm-project/vllm", "v0.20.1")]
            .iter()
            .flat_map(|(repo, tag)| {
                let r = release_json(s, repo, tag);
                let assets = r["assets"].as_array().unwrap().clone();
                assets.into_iter().map(|a| (a["name"].clone(), a["id"].clone(), a["digest"].clone()))
            })
            .collect()
    };
    let (a, b) = (FakeServer::start(embedded_catalog()).unwrap(), FakeServer::start(embedded_catalog()).unwrap());
    assert_ne!(a.base_url(), b.base_url());
    assert_eq!(digests(&a), digests(&b));
    let url = |s: &FakeServer| {
        format!("{}/astral-sh/uv/releases/download/0.12.20/uv-aarch64-unknown-linux-gnu.tar.gz", s.base_url())
    };
    let body = |s: &FakeServer| client(true).get(url(s)).send().unwrap().bytes().unwrap();
    assert_eq!(body(&a), body(&b));
    assert_eq!((a.downloads(), b.downloads()), (1, 1));
    // The index pages differ only in the server's address.
    for project in ["torch", "sgl-kernel", "numpy"] {
        let page = |s: &FakeServer| {
            let text = client(true).get(format!("{}/{project}/", s.pypi_simple_url())).send().unwrap().text();
            text.unwrap().replace(&s.base_url(), "BASE")
        };
        assert_eq!(page(&a), page(&b), "{project}");
    }
}

#[test]
fn an_unknown_tag_is_githubs_404() {
    let server = FakeServer::start(embedded_catalog()).unwrap();
    let url = format!("{}/repos/ggml-org/llama.cpp/releases/tags/b99999", server.base_url());
    let resp = client(true).get(url).send().unwrap();
    assert_eq!(resp.status(), 404);
    assert_eq!(resp.headers()["content-type"], "application/json; charset=utf-8");
    assert_eq!(resp.headers()["x-ratelimit-limit"], "60");
    assert_eq!(resp.text().unwrap(), NOT_FOUND_TAG);
    let missing = format!("{}/ggml-org/llama.cpp/releases/download/b11459/nope.tar.gz", server.base_url());
    assert_eq!(client(true).get(missing).send().unwrap().status(), 404);
    assert_eq!(server.downloads(), 0);
    assert_eq!(server.requests().len(), 2);
}

#[test]
fn a_bad_catalog_is_refused() {
    let mut catalog = embedded_catalog().clone();
    catalog.releases[0].published_at = "yesterday".into();
    let err = FakeServer::start(&catalog).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("published_at `yesterday`"), "{err}");
    let mut catalog = embedded_catalog().clone();
    catalog.releases.push(catalog.releases[1].clone());
    assert!(FakeServer::start(&catalog).unwrap_err().to_string().contains("listed twice"));

    let refused = |change: &dyn Fn(&mut Catalog)| {
        let mut catalog = embedded_catalog().clone();
        change(&mut catalog);
        let err = FakeServer::start(&catalog).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        err.to_string()
    };
    let vllm = |c: &mut Catalog| -> usize { c.releases.iter().position(|r| r.engine == "vllm").unwrap() };
    let err = refused(&|c| {
        let i = vllm(c);
        c.releases[i].assets[0].wheel.as_mut().unwrap().filename = "vllm-0.20.1-py3-none-any.whl".into();
    });
    assert!(err.contains("wheel.filename is `vllm-0.20.1-py3-none-any.whl`"), "{err}");
    let err = refused(&|c| {
        let i = vllm(c);
        c.releases[i].assets[0].top = "vllm".into();
    });
    assert!(err.contains("a wheel asset has no top or files"), "{err}");
    let err = refused(&|c| c.indexes[0].name = "conda".into());
    assert!(err.contains("index `conda`: not `pypi` nor `pytorch-<variant>`"), "{err}");
    let err = refused(&|c| c.indexes.push(c.indexes[1].clone()));
    assert!(err.contains("index `pytorch-cu129` is listed twice"), "{err}");
    let err = refused(&|c| {
        let d = c.indexes[0].dists[0].clone();
        c.indexes[0].dists.push(d);
    });
    assert!(err.contains("is listed twice"), "{err}");
    let err = refused(&|c| c.indexes[0].dists[0].version = "0.20.2".into());
    assert!(err.contains("-0.20.2-<tags>.whl`"), "{err}");
}

/// GETs a project page of the JSON simple API, asserting a 200 in PEP 691's type.
fn simple_json(url: &str) -> Value {
    let resp = client(false).get(url).header("accept", SIMPLE_JSON).send().unwrap();
    assert_eq!(resp.status(), 200, "{url}");
    assert_eq!(resp.headers()["content-type"], SIMPLE_JSON);
    serde_json::from_slice(&resp.bytes().unwrap()).unwrap()
}

/// The files of a wheel, by name.
fn unzip(bytes: &[u8]) -> BTreeMap<String, String> {
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    (0..zip.len())
        .map(|i| {
            let mut f = zip.by_index(i).unwrap();
            let mut text = String::new();
            f.read_to_string(&mut text).unwrap();
            (f.name().unwrap().to_string(), text)
        })
        .collect()
}

/// Downloads every file of a project page, checking its sha256, size and
/// core metadata; returns (filename, the Dist the wheel says it is).
fn check_files(page: &Value) -> Vec<(String, Dist)> {
    let mut out = Vec::new();
    for f in page["files"].as_array().unwrap() {
        let (name, url) = (f["filename"].as_str().unwrap(), f["url"].as_str().unwrap());
        let body = client(false).get(url).send().unwrap();
        assert_eq!(body.status(), 200, "{url}");
        let body = body.bytes().unwrap();
        assert_eq!(hex::encode(Sha256::digest(&body)), f["hashes"]["sha256"].as_str().unwrap(), "{name}");
        assert_eq!(body.len() as u64, f["size"].as_u64().unwrap(), "{name}");
        assert_eq!(f["yanked"], false);
        let meta = client(false).get(format!("{url}.metadata")).send().unwrap().text().unwrap();
        assert_eq!(hex::encode(Sha256::digest(meta.as_bytes())), f["core-metadata"]["sha256"].as_str().unwrap());
        let files = unzip(&body);
        let (info, _) = files.keys().find(|k| k.ends_with(".dist-info/METADATA")).unwrap().split_once('/').unwrap();
        assert_eq!(files[&format!("{info}/METADATA")], meta, "{name}");
        let dist: Dist = serde_json::from_str(&files[&format!("{info}/{}", wheel::SIM_FILE)]).unwrap();
        assert_eq!(dist.filename, name);
        assert_eq!(f.get("requires-python").and_then(Value::as_str), dist.requires_python.as_deref(), "{name}");
        // PyPI's upload time where the truth has it, else the fixed one.
        assert_eq!(f["upload-time"].as_str(), Some(dist.upload_time.as_deref().unwrap_or(UPLOAD_TIME)), "{name}");
        out.push((name.to_string(), dist));
    }
    out
}

#[test]
fn serves_pypi_and_the_pytorch_index_in_the_json_simple_api() {
    let server = FakeServer::start(embedded_catalog()).unwrap();
    let (pypi, whl) = (server.pypi_simple_url(), server.pytorch_url());
    assert_eq!(
        (pypi.clone(), whl.clone()),
        (format!("{}/pypi/simple", server.base_url()), format!("{}/whl", server.base_url()))
    );

    // PyPI's torch: CUDA 12.6, 12.8 and 13.0 builds (none for aarch64
    // before 2.11), a build-tag re-upload of 2.10.0, no +cu129.
    let torch = simple_json(&format!("{pypi}/torch/"));
    assert_eq!(torch["meta"]["api-version"], "1.1");
    assert_eq!(torch["name"], "torch");
    assert_eq!(torch["versions"], serde_json::json!(["2.7.1", "2.8.0", "2.10.0", "2.11.0", "2.14.0", "2.14.1"]));
    let files = check_files(&torch);
    let names: Vec<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names[..4],
        [
            "torch-2.10.0-3-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.10.0-cp312-cp312-manylinux_2_28_aarch64.whl",
            "torch-2.10.0-cp312-cp312-manylinux_2_28_x86_64.whl",
            "torch-2.11.0-cp312-cp312-manylinux_2_28_aarch64.whl",
        ]
    );
    let toolkit = |d: &Dist| d.cuda.as_ref().map(|c| c.toolkit.clone());
    assert_eq!(toolkit(&files[0].1).as_deref(), Some("12.8"));
    assert_eq!(toolkit(&files[1].1), None, "PyPI's torch 2.10.0 for aarch64 has no CUDA");
    assert_eq!(toolkit(&files[3].1).as_deref(), Some("13.0"));
    // PyPI's own upload time.
    assert_eq!(torch["files"][3]["upload-time"], "2026-03-23T18:11:06.000000Z");
    assert!(torch["files"][0]["url"].as_str().unwrap().starts_with(&format!("{}/pypi/files/", server.base_url())));
    assert_eq!(server.downloads(), 13);

    // The cu129 index: only torch, torchvision and torchaudio, +cu129.
    let cu129 = simple_json(&format!("{whl}/cu129/torch/"));
    assert_eq!(cu129["versions"], serde_json::json!(["2.11.0+cu129"]));
    let files = check_files(&cu129);
    assert_eq!(files.len(), 2);
    assert!(files.iter().all(|(_, d)| d.version == "2.11.0+cu129" && toolkit(d).as_deref() == Some("12.9")));
    let url = cu129["files"][1]["url"].as_str().unwrap();
    assert_eq!(url, format!("{whl}/cu129/torch-2.11.0%2Bcu129-cp312-cp312-manylinux_2_28_x86_64.whl"));
    assert_eq!(server.downloads(), 15);
    // The same file with a literal `+`.
    let plus = client(false).get(url.replace("%2B", "+")).send().unwrap();
    assert_eq!(plus.status(), 200);
    assert_eq!(
        hex::encode(Sha256::digest(plus.bytes().unwrap())),
        cu129["files"][1]["hashes"]["sha256"].as_str().unwrap()
    );
    assert_eq!(server.downloads(), 16);
    for p in ["torchvision", "torchaudio"] {
        assert_eq!(simple_json(&format!("{whl}/cu129/{p}/"))["files"].as_array().unwrap().len(), 2);
    }
    let numpy = client(false).get(format!("{whl}/cu129/numpy/")).send().unwrap();
    assert_eq!(numpy.status(), 404);
    assert_eq!(numpy.text().unwrap(), NOT_FOUND_INDEX);
    assert_eq!(client(false).get(format!("{pypi}/no-such-project/")).send().unwrap().status(), 404);

    // torchvision on PyPI: a py3 wheel, a Requires-Python with an exclusion.
    let torchvision = simple_json(&format!("{pypi}/torchvision/"));
    let last = torchvision["files"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(last["filename"], "torchvision-0.29.2-py3-none-manylinux_2_28_x86_64.whl");
    assert_eq!(last["requires-python"], ">=3.10,!=3.14.1");

    // Names are normalized (PEP 503): 301 to the page, as PyPI answers.
    for asked in ["SGL_Kernel/", "sgl.kernel/", "sgl-kernel"] {
        let resp = client(false).get(format!("{pypi}/{asked}")).send().unwrap();
        assert_eq!(resp.status(), 301, "{asked}");
        assert_eq!(resp.headers()["location"], format!("{pypi}/sgl-kernel/"));
    }
    let kernel = simple_json(&format!("{pypi}/sgl-kernel/"));
    assert_eq!(kernel["versions"], serde_json::json!(["0.2.8", "0.3.16.post3"]));
    let kernels = check_files(&kernel);
    let k =
        &kernels.iter().find(|(n, _)| n == "sgl_kernel-0.3.16.post3-cp310-abi3-manylinux2014_aarch64.whl").unwrap().1;
    assert!(k.cuda.as_ref().is_some_and(|c| c.fails_at_import && c.ptx.is_empty()));
    // A .metadata is not a download.
    assert_eq!(server.downloads(), 16 + 3);
}

#[test]
fn serves_the_vllm_release_wheels() {
    let server = FakeServer::start(embedded_catalog()).unwrap();
    let release = release_json(&server, "vllm-project/vllm", "v0.20.1");
    assert_eq!(release["tag_name"], "v0.20.1");
    let names: Vec<&str> = release["assets"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_x86_64.whl",
            "vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_aarch64.whl"
        ]
    );
    for (n, name) in names.iter().enumerate() {
        let a = asset(&release, name);
        assert_eq!(a["content_type"], "application/octet-stream");
        let url = a["browser_download_url"].as_str().unwrap();
        for url in [url.to_string(), url.replace('+', "%2B")] {
            let body = client(true).get(&url).send().unwrap();
            assert_eq!(body.status(), 200, "{url}");
            let body = body.bytes().unwrap();
            assert_eq!(format!("sha256:{}", hex::encode(Sha256::digest(&body))), a["digest"].as_str().unwrap());
            assert_eq!(body.len() as u64, a["size"].as_u64().unwrap());
            let files = unzip(&body);
            let meta = &files["vllm-0.20.1+cu129.dist-info/METADATA"];
            assert!(meta.contains("Version: 0.20.1+cu129\n") && meta.contains("Requires-Dist: torch==2.11.0\n"));
            let dist: Dist = serde_json::from_str(&files["vllm-0.20.1+cu129.dist-info/llmgw-sim.json"]).unwrap();
            assert_eq!(dist.cuda.unwrap().toolkit, "12.9");
            assert!(files.contains_key("vllm/__init__.py"));
        }
        assert_eq!(server.downloads(), 2 * (n + 1));
    }
}

#[test]
fn the_release_list_is_newest_first_a_page_at_a_time_with_a_link_to_the_next() {
    let server = FakeServer::start(embedded_catalog()).unwrap();
    let base = format!("{}/repos/ggml-org/llama.cpp/releases", server.base_url());
    let page = |query: &str| {
        let resp = client(true).get(format!("{base}{query}")).send().unwrap();
        assert_eq!(resp.status(), 200);
        let link = resp.headers().get("link").map(|v| v.to_str().unwrap().to_string());
        let body: Value = serde_json::from_slice(&resp.bytes().unwrap()).unwrap();
        let tags: Vec<String> =
            body.as_array().unwrap().iter().map(|r| r["tag_name"].as_str().unwrap().to_string()).collect();
        (tags, link)
    };
    let (tags, link) = page("");
    assert_eq!((tags, link), (vec!["b11459".to_string(), "b10850".to_string()], None), "newest first, one page");
    let (tags, link) = page("?per_page=1&page=1");
    assert_eq!(tags, ["b11459"]);
    assert_eq!(
        link.as_deref(),
        Some(format!(r#"<{base}?per_page=1&page=2>; rel="next", <{base}?per_page=1&page=2>; rel="last""#).as_str())
    );
    let (tags, link) = page("?per_page=1&page=2");
    assert_eq!((tags, link), (vec!["b10850".to_string()], None));
    assert!(page("?per_page=1&page=3").0.is_empty());
}
