//! An asset's `.sha256` sidecar: when GitHub's API gives an asset no
//! `digest` (`null`, as for assets uploaded before June 2025), the release's
//! own `<asset>.sha256`, published beside it in the same release, is the
//! digest that vouches for it.
//!
//! The forms a sidecar is written in, each one line and a newline:
//!
//! | form | written by | source |
//! | --- | --- | --- |
//! | `<hex>  <asset>` | uv's release workflow (`shasum -a 256 $ARCHIVE_FILE > $ARCHIVE_FILE.sha256`; `sha256sum` on Windows) | astral-sh/uv@00309ed `.github/workflows/build-release-binaries.yml` |
//! | `<hex> *<asset>` (then an empty line) | cargo-dist's per-artifact checksums (`writeln!("{checksum} *{file_path}")`, then a trailing newline) | axodotdev/cargo-dist@025f1c0 `cargo-dist/src/lib.rs`, `write_checksum_file` |
//! | `<hex>` | a bare digest (`sha256sum FILE \| cut -d' ' -f1`) | GNU coreutils' `sha256sum` output, its first field |
//!
//! Anything else is refused: a sidecar that cannot be read as one of these
//! vouches for nothing. A name in it must be the asset's own.

use super::github::{Asset, DigestFrom, Purpose, Release, ReleaseError};
use crate::system::System;

/// The most a sidecar may be, in bytes: 64 hex digits, two characters,
/// a file name (at most 255 bytes on Linux) and a newline or two fit.
pub const MAX_SIDECAR_BYTES: u64 = 512;

/// The sidecar of the asset `name`: `<name>.sha256`.
pub fn name_of(name: &str) -> String {
    format!("{name}.sha256")
}

/// The asset `name` of `release`, with the digest that vouches for it:
/// GitHub's `digest`; when that is `null`, the one its `<name>.sha256` in
/// the same release gives (fetched through `sys` as every asset is, with
/// the same client and redirects, at most [`MAX_SIDECAR_BYTES`]).
///
/// # Errors
/// [`ReleaseError::NoAsset`]; [`ReleaseError::NoDigest`] when GitHub gives
/// no digest and the release publishes no sidecar;
/// [`ReleaseError::Sidecar`] when the sidecar cannot be fetched or does not
/// vouch for the asset (another form, another name).
pub fn with_digest(sys: &mut dyn System, release: &Release, name: &str) -> Result<Asset, ReleaseError> {
    let mut asset = release.asset(name)?.clone();
    if asset.digest.is_some() || asset.digest_from != DigestFrom::Publisher {
        return Ok(asset);
    }
    let sidecar_name = name_of(name);
    let Ok(sidecar) = release.asset(&sidecar_name) else {
        return Err(ReleaseError::NoDigest {
            asset: name.to_string(),
            why: format!(
                "GitHub gives none, as for assets uploaded before June 2025, and release `{}` publishes no `{sidecar_name}`",
                release.tag_name
            ),
            purpose: Purpose::Install,
        });
    };
    let problem =
        |problem: String| ReleaseError::Sidecar { asset: name.to_string(), problem, purpose: Purpose::Install };
    let what = format!("{sidecar_name} (the digest of {name})");
    let limit = (MAX_SIDECAR_BYTES, "more than a .sha256 file ever is");
    let resp = crate::retry::get_at_most(sys, &what, &sidecar.browser_download_url, "application/octet-stream", limit)
        .map_err(|e| problem(format!("cannot be fetched: {e}")))?;
    if resp.status != 200 {
        return Err(problem(format!("cannot be fetched: HTTP {}", resp.status)));
    }
    let hex = parse(&resp.body, name).map_err(problem)?;
    asset.digest = Some(format!("sha256:{hex}"));
    asset.digest_from = DigestFrom::Sidecar;
    Ok(asset)
}

/// The sha256 (lowercase hex) a sidecar's bytes give for the asset `name`.
///
/// # Errors
/// What is wrong with it, in words: `is not text`, `is empty`, `holds 2
/// lines; …`, `holds `…`, which is not …`, `names `other.tar.gz` instead`.
pub fn parse(body: &[u8], name: &str) -> Result<String, String> {
    let text = std::str::from_utf8(body).map_err(|_| "is not text".to_string())?;
    let lines: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    let [line] = lines[..] else {
        return Err(if lines.is_empty() {
            "is empty".to_string()
        } else {
            format!("holds {} lines; the sidecar of one asset holds one", lines.len())
        });
    };
    let form = || {
        let shown: String = line.chars().take(120).collect();
        format!("holds `{}`, which is not `<sha256>`, `<sha256>  {name}` or `<sha256> *{name}`", shown.escape_debug())
    };
    let (hex, rest) = line.split_at_checked(64).ok_or_else(form)?;
    if !crate::recipe::is_sha256_hex(hex) {
        return Err(form());
    }
    let named = match rest {
        "" => None,
        _ => Some(rest.strip_prefix("  ").or_else(|| rest.strip_prefix(" *")).ok_or_else(form)?),
    };
    match named {
        Some(other) if other != name => Err(format!("names `{}` instead", other.escape_debug())),
        _ => Ok(hex.to_ascii_lowercase()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NAME: &str = "uv-x86_64-unknown-linux-gnu.tar.gz";

    #[test]
    fn the_three_forms_are_read_and_nothing_else() {
        let hex = "Ab".repeat(32);
        let lower = "ab".repeat(32);
        for ok in [
            format!("{hex}  {NAME}\n"),
            format!("{hex} *{NAME}\n\n"),
            format!("{hex}\n"),
            format!("{hex}  {NAME}\r\n"),
            hex.clone(),
        ] {
            assert_eq!(parse(ok.as_bytes(), NAME), Ok(lower.clone()), "{ok:?}");
        }
        let refused = |text: &str| parse(text.as_bytes(), NAME).unwrap_err();
        assert_eq!(refused(""), "is empty");
        assert!(refused(&format!("{hex} {NAME}\n")).contains("which is not `<sha256>`, `<sha256>  uv-"));
        assert!(refused(&format!("{hex}  {NAME}\n{hex}  other\n")).starts_with("holds 2 lines"));
        assert!(refused(&format!("sha256:{hex}\n")).contains("is not `<sha256>`"));
        assert!(refused(&format!("{}  {NAME}\n", &hex[..63])).contains("is not `<sha256>`"));
        assert!(refused("é").contains("is not `<sha256>`"), "not split inside a character");
        assert_eq!(refused(&format!("{hex}  uv-aarch64.tar.gz\n")), "names `uv-aarch64.tar.gz` instead");
        assert_eq!(parse(&[0xff, 0xfe], NAME).unwrap_err(), "is not text");
    }
}
