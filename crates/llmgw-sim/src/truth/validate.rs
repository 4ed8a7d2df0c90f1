//! Whether a catalog can be served: checked once, before the fake server
//! starts, so that a scenario or a test's catalog is refused in words rather
//! than served wrong.

use std::collections::BTreeSet;

use super::wheel_name::WheelName;
use super::{BodyFault, Catalog, Dist};

impl Catalog {
    /// Checks that the catalog can be served: every `published_at` is RFC
    /// 3339 UTC; no release, asset, index or index file is listed twice; a
    /// wheel asset's `wheel.filename` is its name and it has no `top` nor
    /// `files`; every index is `pypi` or `pytorch-<variant>`; every wheel file
    /// name starts with its dist's escaped name and version and has tags; a
    /// file that is a link is nothing else and points inside its asset;
    /// every fault names a release (and asset) of the catalog, answers 1 or
    /// more times, and is a `status` or a `body`, not both.
    ///
    /// # Errors
    /// The first problem, in a sentence naming the release, asset, index or
    /// fault: `release ggml-org/llama.cpp@b1 is listed twice`.
    pub fn validate(&self) -> Result<(), String> {
        let mut releases = BTreeSet::new();
        for release in &self.releases {
            let at = format!("{}@{}", release.repo, release.tag);
            if !releases.insert((release.repo.as_str(), release.tag.as_str())) {
                return Err(format!("release {at} is listed twice"));
            }
            if epoch(&release.published_at).is_none() {
                return Err(format!("release {at}: published_at `{}` is not RFC 3339 UTC", release.published_at));
            }
            let mut names = BTreeSet::new();
            for asset in &release.assets {
                if !names.insert(asset.name.as_str()) {
                    return Err(format!("asset {} is listed twice in {at}", asset.name));
                }
                if let Some(of) = &asset.sha256_of
                    && (!release.assets.iter().any(|a| &a.name == of && a.sha256_of.is_none())
                        || asset.wheel.is_some()
                        || !asset.files.is_empty())
                {
                    return Err(format!(
                        "{at} {}: sha256_of names `{of}`, which is no archive of the release (and a sidecar has no files)",
                        asset.name
                    ));
                }
                for file in &asset.files {
                    check_link(file).map_err(|e| format!("{at} {} `{}`: {e}", asset.name, file.path))?;
                }
                let Some(dist) = &asset.wheel else { continue };
                let what = format!("{at} {}", asset.name);
                if dist.filename != asset.name {
                    return Err(format!("{what}: wheel.filename is `{}`", dist.filename));
                }
                if !asset.top.is_empty() || !asset.files.is_empty() {
                    return Err(format!("{what}: a wheel asset has no top or files"));
                }
                check_wheel_name(dist).map_err(|e| format!("{what}: {e}"))?;
            }
        }
        let mut kinds = BTreeSet::new();
        for index in &self.indexes {
            let kind =
                index.kind().ok_or_else(|| format!("index `{}`: not `pypi` nor `pytorch-<variant>`", index.name))?;
            if !kinds.insert(kind) {
                return Err(format!("index `{}` is listed twice", index.name));
            }
            let mut files = BTreeSet::new();
            for dist in &index.dists {
                check_wheel_name(dist).map_err(|e| format!("index `{}`: {e}", index.name))?;
                if !files.insert(dist.filename.as_str()) {
                    return Err(format!("index `{}`: {} is listed twice", index.name, dist.filename));
                }
            }
        }
        for f in &self.faults {
            let on = format!("fault on `{}`", f.release);
            let release = self
                .releases
                .iter()
                .find(|r| r.is_named(&f.release))
                .ok_or_else(|| format!("{on}: no such release or asset"))?;
            if let Some(a) = &f.asset
                && !release.assets.iter().any(|x| &x.name == a)
            {
                return Err(format!("{on}: no such release or asset"));
            }
            if f.times == Some(0) {
                return Err(format!("{on}: `times` is 0"));
            }
            match (f.status, f.body) {
                (Some(_), None) => {}
                (None, Some(kind)) => {
                    if f.retry_after_secs.is_some() || f.rate_limit_reset_in_secs.is_some() {
                        return Err(format!(
                            "{on}: `retry_after_secs` and `rate_limit_reset_in_secs` go with a `status`, not a `body`"
                        ));
                    }
                    let needs_asset =
                        matches!(kind, BodyFault::CutShort | BodyFault::Reset | BodyFault::OneByteChanged);
                    if needs_asset && f.asset.is_none() {
                        return Err(format!("{on}: a body fault of this kind needs an `asset`"));
                    }
                }
                _ => return Err(format!("{on}: give exactly one of `status` and `body`")),
            }
        }
        Ok(())
    }
}

/// Checks that a file which is a symbolic link is only that, and that its
/// target is relative and stays inside the asset (as the unpacker demands).
fn check_link(file: &super::File) -> Result<(), String> {
    let Some(target) = &file.link else { return Ok(()) };
    if file.elf.is_some() || file.text.is_some() {
        return Err("a link has no `elf` or `text` of its own".to_string());
    }
    let mut depth = file.path.matches('/').count();
    for part in target.split('/') {
        match part {
            "" if target.starts_with('/') => return Err(format!("link to `{target}` is absolute")),
            ".." if depth == 0 => return Err(format!("link to `{target}` leaves the asset")),
            ".." => depth -= 1,
            "" | "." => {}
            _ => depth += 1,
        }
    }
    Ok(())
}

/// Checks that a wheel's file name is `{escaped name}-{version}-…`, the
/// name escaped as in the wheel's `.dist-info` ([`Dist::dist_info`]).
pub(super) fn check_wheel_name(dist: &Dist) -> Result<(), String> {
    let info = dist.dist_info();
    let prefix = format!("{}-", info.strip_suffix(".dist-info").unwrap_or(&info));
    let tagged = WheelName::parse(&dist.filename).is_some_and(|n| !n.tags().is_empty());
    if dist.filename.starts_with(&prefix) && tagged {
        Ok(())
    } else {
        Err(format!("wheel file name `{}` is not `{prefix}<tags>.whl`", dist.filename))
    }
}

/// Seconds since the Unix epoch of an RFC 3339 UTC timestamp as GitHub
/// writes them, `2026-10-20T14:03:11Z` (fractional seconds are allowed and
/// dropped); `None` for anything else, including other offsets than `Z`.
pub fn epoch(rfc3339: &str) -> Option<u64> {
    let s = rfc3339.strip_suffix('Z')?;
    let (date, time) = s.split_once('T')?;
    let time = time.split_once('.').map_or(time, |(whole, frac)| {
        if !frac.is_empty() && frac.bytes().all(|b| b.is_ascii_digit()) { whole } else { "" }
    });
    let num = |t: &str, len: usize| -> Option<u64> {
        (t.len() == len && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse().ok()).flatten()
    };
    let mut d = date.split('-');
    let (year, month, day) = (num(d.next()?, 4)?, num(d.next()?, 2)?, num(d.next()?, 2)?);
    let mut t = time.split(':');
    let (hour, min, sec) = (num(t.next()?, 2)?, num(t.next()?, 2)?, num(t.next()?, 2)?);
    if d.next().is_some() || t.next().is_some() || year < 1970 || hour > 23 || min > 59 || sec > 60 {
        return None;
    }
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    let month_days = [31, if leap { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if !(1..=12).contains(&month) || day == 0 || day > month_days[month as usize - 1] {
        return None;
    }
    // Days from 1970-01-01 to the civil date (H. Hinnant's days_from_civil,
    // on years shifted to start in March so that Feb 29 ends a year).
    let (y, m) = if month <= 2 { (year - 1, month + 9) } else { (year, month - 3) };
    let era = y / 400;
    let yoe = y % 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3_600 + min * 60 + sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rfc3339_utc() {
        assert_eq!(epoch("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(epoch("2026-10-20T14:03:11Z"), Some(1_792_504_991));
        assert_eq!(epoch("2026-10-02T18:11:40Z"), Some(1_790_964_700));
        assert_eq!(epoch("2000-02-29T23:59:59.123Z"), Some(951_868_799));
        assert_eq!(epoch("2024-12-31T00:00:00Z"), Some(1_735_603_200));
        for bad in [
            "2026-10-20T14:03:11",
            "2026-10-20T14:03:11+02:00",
            "2026-10-20 14:03:11Z",
            "2026-13-01T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-10-20T24:00:00Z",
            "2026-10-20T14:03:11.Z",
            "1969-12-31T23:59:59Z",
            "26-10-20T14:03:11Z",
            "2026-10-20T14:03Z",
        ] {
            assert_eq!(epoch(bad), None, "{bad}");
        }
    }
}
