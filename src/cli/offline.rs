//! `--offline-base URL --offline-sha256 FILE` of `simulate` and
//! `provision`: every want installed from an offline mirror, checked against
//! the control plane's checksums only.

// The CLI reads the checksums file the user names.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;

use llmgw_core::recipe::Want;

use super::input::Failure;

/// The offline flags.
#[derive(Debug, Clone, clap::Args)]
pub struct Offline {
    /// The offline mirror's URL (layout <URL>/<engine>/<version>/<asset>): every want installs from it
    /// and never contacts the publisher. Needs --offline-sha256; refused with a wants file whose wants carry
    /// their own offline_base.
    #[arg(long, value_name = "URL", requires = "offline_sha256", value_parser = super::input::http_url)]
    offline_base: Option<String>,
    /// The checksums the control plane holds: a JSON object of asset name -> sha256, or a bundle's
    /// manifest.json (each want takes its engine and version's). An asset without one is refused. Needs
    /// --offline-base.
    #[arg(long, value_name = "FILE", requires = "offline_base")]
    offline_sha256: Option<PathBuf>,
}

impl Offline {
    /// The wants, each made offline when the flags are given, with the
    /// checksums of its engine and version when the file is a manifest.
    /// A want that carries its own offline fields (from a wants file) is
    /// refused: the mirror is given in one place.
    pub fn apply(&self, wants: Vec<Want>) -> Result<Vec<Want>, Failure> {
        let (Some(base), Some(file)) = (&self.offline_base, &self.offline_sha256) else { return Ok(wants) };
        if let Some((i, w)) = wants.iter().enumerate().find(|(_, w)| w.offline_base.is_some()) {
            return Err(Failure::BadInput(format!(
                "--offline-base and --offline-sha256 are given, and the wants file's wants[{i}] ({w}) carries its own \
                 offline_base and offline_sha256; give the mirror either with the flags or in the wants file"
            )));
        }
        let text = super::input::read(super::input::CHECKSUMS, file)
            .map_err(|e| Failure::BadInput(format!("--offline-sha256: {}", e.message())))?;
        let sums = llmgw_core::offline::checksums::checksums_from_json(&text)
            .map_err(|e| Failure::BadInput(format!("--offline-sha256 `{}`: {e}", file.display())))?;
        wants
            .into_iter()
            .map(|w| {
                let name = w.to_string();
                let mine = sums.for_want(w.engine, &w.version);
                if mine.is_empty() {
                    return Err(Failure::BadInput(format!(
                        "--offline-sha256 `{}`: the manifest lists no file of {} {}, wanted by {name}",
                        file.display(),
                        w.engine,
                        w.version
                    )));
                }
                let sizes = sums.sizes_for_want(w.engine, &w.version);
                let w =
                    w.offline(base, mine).map_err(|e| Failure::BadInput(format!("--offline-base with {name}: {e}")))?;
                Ok(llmgw_core::recipe::Want { offline_size: sizes, ..w })
            })
            .collect()
    }
}
