//! Where a download may go: a release's asset is downloaded from GitHub's
//! release host over https, or from the host of the API it was listed by
//! (the configured `--github-api`: GitHub Enterprise, a fake publisher on
//! loopback); a redirect is followed within its own host (any port), or over https to
//! the hosts GitHub's downloads redirect to. Anything else — another
//! host, a link-local or metadata address (`169.254.169.254`), another
//! scheme (`file://`) — is refused, naming the URL and the rule.
//!
//! Pure: the rules on parsed URLs, no effect.

use url::Url;

/// GitHub's host of release downloads: `https://github.com/<owner>/<repo>/releases/download/<tag>/<asset>`
/// (GitHub docs, "Linking to releases").
pub const GITHUB_RELEASE_HOST: &str = "github.com";

/// The hosts GitHub's release downloads redirect to, over https:
/// `release-assets.githubusercontent.com` since July 2025
/// (PyGithub/PyGithub#3315), `objects.githubusercontent.com` before it
/// (DataDog/documentation#24206, a 302 of 2024), and
/// `github-releases.githubusercontent.com` in 2021
/// (microsoft/azure-pipelines-tasks#14309).
pub const GITHUB_REDIRECT_HOSTS: &[&str] =
    &["release-assets.githubusercontent.com", "objects.githubusercontent.com", "github-releases.githubusercontent.com"];

pub use llmgw_model::text::without_credentials;

/// Whether `url` and `other` are on the same host and port.
fn same_host(url: &Url, other: &Url) -> bool {
    url.host_str().map(str::to_ascii_lowercase) == other.host_str().map(str::to_ascii_lowercase)
        && url.port_or_known_default() == other.port_or_known_default()
}

/// Whether a release listed by the API at `api` may have its asset
/// downloaded from `url`: over https from [`GITHUB_RELEASE_HOST`], or from
/// the API's own host and port.
///
/// # Errors
/// The [`HostRule`] it breaks.
pub fn check_asset_url(url: &str, api: &str) -> Result<(), HostRule> {
    let parsed = Url::parse(url).map_err(|e| HostRule::NotAUrl { why: e.to_string() })?;
    let api_url = Url::parse(api).map_err(|e| HostRule::ApiNotAUrl { api: api.to_string(), why: e.to_string() })?;
    if same_host(&parsed, &api_url) {
        return Ok(());
    }
    if parsed.scheme() == "https" && parsed.host_str().is_some_and(|h| h.eq_ignore_ascii_case(GITHUB_RELEASE_HOST)) {
        return Ok(());
    }
    Err(HostRule::AssetHost {
        host: parsed.host_str().unwrap_or_default().to_string(),
        api_host: api_url.host_str().unwrap_or_default().to_string(),
    })
}

/// The rule a URL breaks ([`check_asset_url`], [`check_redirect`]),
/// with the hosts that decide it; said as the words after the URL.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostRule {
    /// The asset URL does not parse.
    #[error("is not a valid URL: {why}")]
    NotAUrl {
        /// The URL parser's words.
        why: String,
    },
    /// The API's own URL does not parse, so nothing can be checked against it.
    #[error("cannot be checked against the API's URL `{api}`: {why}")]
    ApiNotAUrl {
        /// The API URL.
        api: String,
        /// The URL parser's words.
        why: String,
    },
    /// An asset on a host that is neither GitHub's release host nor the API's.
    #[error(
        "is on {host}, which is neither https://{GITHUB_RELEASE_HOST} nor the host of the API the release was listed \
         by ({api_host}); a release's assets are downloaded from those only"
    )]
    AssetHost {
        /// The asset's host.
        host: String,
        /// The API's host.
        api_host: String,
    },
    /// A redirect to a scheme other than http and https (`file`).
    #[error("a redirect to the scheme `{scheme}`; only http and https redirects are followed")]
    RedirectScheme {
        /// The scheme redirected to.
        scheme: String,
    },
    /// A redirect to another host than the request's, not one of GitHub's download hosts.
    #[error(
        "a redirect from {from_host} to another host; only redirects within the same host, or over https to \
         {GITHUB_RELEASE_HOST} and GitHub's download hosts ({}), are followed",
        GITHUB_REDIRECT_HOSTS.join(", ")
    )]
    RedirectHost {
        /// The host redirected from.
        from_host: String,
    },
}

/// Whether a request to `from` may be redirected to `to`: `to` is http or
/// https, and on `from`'s host (any port), or over https on one of
/// [`GITHUB_REDIRECT_HOSTS`] or [`GITHUB_RELEASE_HOST`].
///
/// # Errors
/// [`HostRule::RedirectScheme`] or [`HostRule::RedirectHost`].
pub fn check_redirect(from: &Url, to: &Url) -> Result<(), HostRule> {
    if !matches!(to.scheme(), "http" | "https") {
        return Err(HostRule::RedirectScheme { scheme: to.scheme().to_string() });
    }
    // The same host on another port is the same machine (a mirror's file server beside it).
    if from.host_str().map(str::to_ascii_lowercase) == to.host_str().map(str::to_ascii_lowercase) {
        return Ok(());
    }
    let host = to.host_str().unwrap_or_default().to_ascii_lowercase();
    let known = host == GITHUB_RELEASE_HOST || GITHUB_REDIRECT_HOSTS.contains(&host.as_str());
    if to.scheme() == "https" && known {
        return Ok(());
    }
    Err(HostRule::RedirectHost { from_host: from.host_str().unwrap_or_default().to_string() })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_come_from_githubs_release_host_or_the_apis_own() {
        let api = "https://api.github.com";
        assert_eq!(check_asset_url("https://github.com/o/r/releases/download/b1/a.tar.gz", api), Ok(()));
        assert_eq!(check_asset_url("http://127.0.0.1:9/o/r/a.tar.gz", "http://127.0.0.1:9"), Ok(()));
        let metadata = check_asset_url("http://169.254.169.254/latest/meta-data/", api).unwrap_err().to_string();
        assert!(metadata.starts_with("is on 169.254.169.254, which is neither https://github.com"), "{metadata}");
        assert!(check_asset_url("http://github.com/o/r/a.tar.gz", api).is_err(), "https only");
        assert!(check_asset_url("http://127.0.0.1:10/a", "http://127.0.0.1:9").is_err(), "another port");
    }

    #[test]
    fn credentials_never_show() {
        assert_eq!(
            without_credentials("https://ops:s3cret@mirror.internal/llmgw"),
            "https://***@mirror.internal/llmgw"
        );
        assert_eq!(without_credentials("https://tok@mirror.internal/"), "https://***@mirror.internal/");
        assert_eq!(without_credentials("https://mirror.internal/llmgw"), "https://mirror.internal/llmgw");
        assert_eq!(without_credentials("https://ops:s3cret@mirror:99999/x"), "https://***@mirror:99999/x");
    }

    #[test]
    fn redirects_stay_on_their_host_or_go_to_githubs_download_hosts() {
        let u = |s: &str| Url::parse(s).unwrap();
        let gh = u("https://github.com/o/r/releases/download/b1/a.tar.gz");
        assert_eq!(check_redirect(&gh, &u("https://release-assets.githubusercontent.com/x?sig=1")), Ok(()));
        assert_eq!(check_redirect(&u("http://mirror:8080/a"), &u("http://mirror:8080/b")), Ok(()));
        assert_eq!(check_redirect(&u("http://127.0.0.1:8080/a"), &u("http://127.0.0.1:9/b")), Ok(()));
        let file = check_redirect(&gh, &u("file:///etc/passwd")).unwrap_err().to_string();
        assert_eq!(file, "a redirect to the scheme `file`; only http and https redirects are followed");
        assert!(check_redirect(&gh, &u("http://169.254.169.254/")).is_err());
        assert!(check_redirect(&gh, &u("http://release-assets.githubusercontent.com/x")).is_err(), "https only");
    }
}
