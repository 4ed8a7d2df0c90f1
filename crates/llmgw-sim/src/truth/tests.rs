//! The truth against itself and the recipes: every embedded file parses
//! and is the release or index it is named after, every pin is served, and
//! every asset a recipe asks for is published.

use std::collections::BTreeSet;

use super::embedded::{EMBEDDED, EMBEDDED_INDEXES};
use super::stub::Backend;
use super::*;
use llmgw_core::recipe::{Engine, Source, Want, plan};
use llmgw_model::host::Host;

#[test]
fn the_embedded_catalog_parses_and_each_file_is_its_release() {
    let catalog = embedded_catalog();
    assert_eq!(catalog.releases.len(), EMBEDDED.len());
    for ((file, _), r) in EMBEDDED.iter().zip(&catalog.releases) {
        assert_eq!(*file, format!("mocks/{}/{}.json", r.engine, r.version));
        assert!(epoch(&r.published_at).is_some(), "{file}");
        assert!(!r.sources.is_empty(), "{file}");
        for a in &r.assets {
            if let Some(w) = &a.wheel {
                assert_eq!((w.filename.as_str(), a.top.as_str(), a.files.len()), (a.name.as_str(), "", 0), "{file}");
                assert_eq!(validate::check_wheel_name(w), Ok(()), "{file}");
            }
            for f in &a.files {
                let kinds = [f.elf.is_some(), f.text.is_some(), f.link.is_some()];
                assert_eq!(
                    kinds.iter().filter(|k| **k).count(),
                    1,
                    "{file} {} {}: one of elf, text or link",
                    a.name,
                    f.path
                );
                for v in f.elf.iter().flat_map(|e| &e.requires) {
                    let ok = ["GLIBC_", "GLIBCXX_", "CXXABI_"].iter().any(|p| {
                        v.strip_prefix(p).is_some_and(|n| {
                            n.split('.').all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
                        })
                    });
                    assert!(ok, "{file} {} {}: symbol version `{v}`", a.name, f.path);
                }
            }
        }
    }
}

/// The index named `name` of the embedded catalog.
fn index(name: &str) -> &'static Index {
    embedded_catalog().indexes.iter().find(|i| i.name == name).unwrap()
}

/// Whether `req` (PEP 508: `name[extras]` with specifiers, an extra's
/// marker) is served by one of `dists` (PEP 440: `==V` takes V+local).
fn served_by<'a>(req: &str, mut dists: impl Iterator<Item = &'a Dist>) -> bool {
    use std::str::FromStr;
    let body = req.split(';').next().unwrap().trim();
    let end = body.find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c))).unwrap_or(body.len());
    let (name, rest) = body.split_at(end);
    let spec = rest.split(']').next_back().unwrap().trim();
    let spec = pep440_rs::VersionSpecifiers::from_str(spec).unwrap_or_else(|e| panic!("{req}: {e}"));
    dists.any(|d| {
        llmgw_model::pep503::normalize(&d.name) == llmgw_model::pep503::normalize(name)
            && spec.contains(&pep440_rs::Version::from_str(&d.version).unwrap())
    })
}

#[test]
fn the_embedded_indexes_parse_and_every_pin_is_served() {
    let catalog = embedded_catalog();
    assert_eq!(catalog.indexes.len(), EMBEDDED_INDEXES.len());
    let pypi = index("pypi");
    for ((file, _), i) in EMBEDDED_INDEXES.iter().zip(&catalog.indexes) {
        assert_eq!(*file, format!("mocks/pypi/{}.json", i.name));
        assert!(!i.sources.is_empty(), "{file}");
        assert!(i.kind().is_some(), "{file}");
        let mut names = BTreeSet::new();
        for d in &i.dists {
            assert!(names.insert(d.filename.as_str()), "{file}: {} twice", d.filename);
            assert_eq!(validate::check_wheel_name(d), Ok(()), "{file}");
            assert!(!d.modules.is_empty(), "{file} {}", d.filename);
            // Requirements: from this index, or from PyPI (uv takes the
            // others there).
            for req in &d.requires {
                assert!(
                    served_by(req, i.dists.iter().chain(&pypi.dists)),
                    "{file} {}: nothing serves {req}",
                    d.filename
                );
            }
            if let Some(c) = &d.cuda {
                assert!(!c.sass.is_empty() && !c.toolkit.is_empty(), "{file} {}", d.filename);
                // `X.Y`, or `X.Ya` for an arch-specific cubin; PTX never arch-specific.
                let cc =
                    |s: &str| s.split_once('.').is_some_and(|(a, b)| [a, b].iter().all(|p| p.parse::<u8>().is_ok()));
                for s in &c.sass {
                    assert!(cc(s.strip_suffix('a').unwrap_or(s)), "{file} {}: sass `{s}`", d.filename);
                }
                assert!(c.ptx.iter().all(|s| cc(s)), "{file} {}: ptx {:?}", d.filename, c.ptx);
            }
            // Platform wheels come in pairs, x86_64 and aarch64, but for
            // sgl-kernel 0.2.8, which PyPI has for x86_64 only.
            let name = wheel_name::WheelName::parse(&d.filename).unwrap();
            let x86_only = d.filename == "sgl_kernel-0.2.8-cp39-abi3-manylinux2014_x86_64.whl";
            if name.platform.iter().any(|t| t.ends_with("_x86_64")) && !x86_only {
                let twin = i
                    .dists
                    .iter()
                    .any(|o| (&o.name, &o.version) == (&d.name, &d.version) && o.filename.ends_with("_aarch64.whl"));
                assert!(twin, "{file}: no aarch64 twin of {}", d.filename);
            }
            // The ELF files a wheel carries: paths inside it, symbol versions of the allowed forms.
            for e in &d.elf {
                assert!(!e.path.starts_with('/') && !e.path.contains(".."), "{file} {}: {}", d.filename, e.path);
                for v in &e.requires {
                    assert!(
                        ["GLIBC_2.", "GLIBCXX_3.4.", "CXXABI_1.3."].iter().any(|p| v.starts_with(p)),
                        "{file} {}: {v}",
                        d.filename
                    );
                }
            }
        }
    }
    // The PyTorch index holds torch, torchvision, torchaudio, all +cu129;
    // PyPI holds no local versions.
    let cu129 = index("pytorch-cu129");
    let projects: BTreeSet<&str> = cu129.dists.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(projects, BTreeSet::from(["torch", "torchaudio", "torchvision"]));
    assert!(cu129.dists.iter().all(|d| d.version.ends_with("+cu129")));
    assert!(pypi.dists.iter().all(|d| !d.version.contains('+')));
    // The release wheels' pins: from PyTorch's cu129 index or PyPI.
    for r in &catalog.releases {
        for w in r.assets.iter().filter_map(|a| a.wheel.as_ref()) {
            for req in &w.requires {
                assert!(served_by(req, cu129.dists.iter().chain(&pypi.dists)), "{}: nothing serves {req}", w.filename);
            }
        }
    }
    // sgl-kernel and sglang-kernel have SASS only and fail at import;
    // torch at first use.
    for d in &pypi.dists {
        let c = d.cuda.as_ref();
        if d.name == "sgl-kernel" || d.name == "sglang-kernel" {
            assert!(c.is_some_and(|c| c.ptx.is_empty() && c.fails_at_import), "{}", d.filename);
        } else {
            assert!(c.is_none_or(|c| !c.fails_at_import), "{}", d.filename);
        }
    }
}

#[test]
fn the_llama_cpp_truth_has_what_the_checks_rely_on() {
    let releases: Vec<_> = embedded_catalog().releases.iter().filter(|r| r.engine == "llama.cpp").collect();
    assert!(releases.len() >= 2);
    for r in releases {
        let build = &r.tag[1..];
        for a in &r.assets {
            let has = |p: &str| a.files.iter().any(|f| f.path == p);
            if a.name.starts_with("cudart-") {
                // Its own directory, the asset's name: placed beside llama-server by the installer.
                assert_eq!(Some(a.top.as_str()), a.name.strip_suffix(".tar.gz"), "{}", a.name);
                let major = if a.name.contains("cuda-12.") { "12" } else { "13" };
                assert!(has(&format!("libcudart.so.{major}")) && has(&format!("libcublas.so.{major}")), "{}", a.name);
                assert!(!has("LICENSE"), "{}: would overwrite the build's LICENSE", a.name);
                continue;
            }
            assert_eq!(a.top, format!("llama-{}", r.tag), "{}", a.name);
            let arch = if a.name.ends_with("-x64.tar.gz") { "x64" } else { "arm64" };
            assert!(has(if arch == "x64" { "libggml-cpu-x64.so" } else { "libggml-cpu-armv8.0_1.so" }), "{}", a.name);
            let server = a.files.iter().find(|f| f.path == "llama-server").unwrap().elf.as_ref().unwrap();
            assert!(server.lists_devices);
            let said = &server.version.as_ref().unwrap().stderr;
            assert!(said.starts_with("version: 0.") && said.contains(&format!("(build {build}, commit ")), "{said}");
            // Every library a file needs is in the archive (a file or a link to
            // one), in its cudart companion, or one the system provides.
            let companion = r.assets.iter().find(|c| c.name == format!("cudart-{}", a.name));
            for f in a.files.iter().filter_map(|f| Some((f.path.as_str(), f.elf.as_ref()?))) {
                for lib in &f.1.needed {
                    let system = crate::machine::ldd::SYSTEM_LIBRARIES.contains(&lib.as_str());
                    let ours = has(lib) || companion.is_some_and(|c| c.files.iter().any(|x| &x.path == lib));
                    assert!(
                        ours || system,
                        "{} {}: needs {lib}, which neither the archive nor its companion has",
                        a.name,
                        f.0
                    );
                }
            }
            for f in a.files.iter().filter(|f| f.link.is_some()) {
                let target = f.link.as_deref().unwrap();
                assert!(has(target), "{} {}: a link to {target}, which the archive lacks", a.name, f.path);
            }
            let backend =
                |lib: &str| a.files.iter().find(|f| f.path == lib).and_then(|f| f.elf.as_ref()?.backend.clone());
            if let Some(tk) = a.name.split("-cuda-").nth(1).and_then(|rest| rest.split('-').next()) {
                let Some(Backend::Cuda { toolkit, compressed, .. }) = backend("libggml-cuda.so") else {
                    panic!("{}", a.name)
                };
                assert_eq!((toolkit.as_str(), compressed), (tk, true));
                assert!(companion.is_some(), "{}: no cudart companion", a.name);
            }
            assert_eq!(a.name.contains("vulkan"), backend("libggml-vulkan.so") == Some(Backend::Vulkan), "{}", a.name);
        }
    }
}

#[test]
fn every_asset_the_recipes_ask_for_is_published() {
    let catalog = embedded_catalog();
    let published: BTreeSet<(&str, &str, &str)> = catalog
        .releases
        .iter()
        .flat_map(|r| r.assets.iter().map(move |a| (r.repo.as_str(), r.tag.as_str(), a.name.as_str())))
        .collect();
    // Every engine version published: the releases, and the engines' own
    // projects on PyPI.
    // python-build-standalone's CPython is no engine: uv asks for it (below).
    let mut wants: BTreeSet<(String, String)> = catalog
        .releases
        .iter()
        .filter(|r| Engine::parse(&r.engine).is_ok())
        .map(|r| (r.engine.clone(), r.version.clone()))
        .collect();
    for d in &index("pypi").dists {
        if Engine::parse(&d.name).is_ok() {
            wants.insert((d.name.clone(), d.version.clone()));
        }
    }
    let (mut asked, mut wheels, mut requirements) = (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for arch in ["amd64", "arm64"] {
        for nvidia in [
            "null",
            r#"{"driver": "580.95.05", "gpus": [{"name": "A10", "compute_capability": "8.6", "memory_mib": 24576}]}"#,
            r#"{"driver": "535.183.01", "gpus": [{"name": "A10", "compute_capability": "8.6", "memory_mib": 24576}]}"#,
        ] {
            let host = Host::from_json(&format!(
                r#"{{"name": "t", "arch": "{arch}",
                    "os": {{"id": "ubuntu", "version": "24.04", "package_family": "deb", "libc": "glibc", "glibc": "2.39", "glibcxx": "3.4.33"}},
                    "cpu": {{"model": "x", "flags": ["avx2"]}}, "nvidia": {nvidia},
                    "disk_free_gb": 100, "packages": {{"installed": [], "installable": true}}}}"#
            ))
            .unwrap();
            for (engine, version) in &wants {
                let want = Want::new(Engine::parse(engine).unwrap(), version);
                let Ok(p) = plan(&want, &host) else { continue };
                for b in &p.candidates {
                    match &b.source {
                        Source::Archives { repo, tag, assets, .. } => {
                            for a in assets {
                                asked.insert((repo.clone(), tag.clone(), a.clone()));
                            }
                        }
                        Source::Python(env) => {
                            if let Some(w) = &env.wheel {
                                let matching: Vec<_> = published
                                    .iter()
                                    .filter(|(r, t, n)| {
                                        (*r, *t) == (w.repo.as_str(), w.tag.as_str())
                                            && n.starts_with(&w.prefix)
                                            && n.ends_with(&w.suffix)
                                    })
                                    .collect();
                                assert_eq!(matching.len(), 1, "{w:?}: {matching:?}");
                                wheels.insert(matching[0].2.to_string());
                            }
                            if let Some(x) = &env.extra_index {
                                assert!(
                                    catalog.indexes.iter().any(|i| i.name == x.name
                                        && i.kind() == Some(IndexKind::Pytorch(x.pytorch_path.clone()))),
                                    "{x:?}"
                                );
                            }
                            requirements.extend(env.requirements.iter().cloned());
                        }
                    }
                }
            }
        }
    }
    // Every archive build is a candidate on one of these hosts: of b10850
    // (no Linux CUDA build yet) cpu x2, vulkan x2; of b11459 cpu x2, vulkan
    // x2, cuda-13.4 x2 and cuda-12.8 (two assets each); uv 0.12.20 and 0.13.9 x2.
    assert_eq!(asked.len(), 18, "{asked:#?}");
    for (repo, tag, name) in &asked {
        assert!(published.contains(&(repo.as_str(), tag.as_str(), name.as_str())), "{repo}@{tag} has no {name}");
    }
    // vLLM's CUDA 12.9 build, on each architecture.
    assert_eq!(
        wheels,
        BTreeSet::from([
            "vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_aarch64.whl".to_string(),
            "vllm-0.20.1+cu129-cp38-abi3-manylinux_2_31_x86_64.whl".to_string(),
        ])
    );
    assert!(requirements.len() >= 4, "{requirements:?}");
    for req in &requirements {
        assert!(served_by(req, index("pypi").dists.iter()), "PyPI has no {req}");
    }
}
