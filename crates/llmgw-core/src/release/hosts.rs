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
/// The rule it breaks, in words.
pub fn check_asset_url(url: &str, api: &str) -> Result<(), String> {
    let parsed = Url::parse(url).map_err(|e| format!("is not a valid URL: {e}"))?;
    let api = Url::parse(api).map_err(|e| format!("cannot be checked against the API's URL `{api}`: {e}"))?;
    if same_host(&parsed, &api) {
        return Ok(());
    }
    if parsed.scheme() == "https" && parsed.host_str().is_some_and(|h| h.eq_ignore_ascii_case(GITHUB_RELEASE_HOST)) {
        return Ok(());
    }
    let host = parsed.host_str().unwrap_or_default();
    Err(format!(
        "is on {host}, which is neither https://{GITHUB_RELEASE_HOST} nor the host of the API the release was listed \
         by ({}); a release's assets are downloaded from those only",
        api.host_str().unwrap_or_default()
    ))
}

/// Whether a request to `from` may be redirected to `to`: `to` is http or
/// https, and on `from`'s host (any port), or over https on one of
/// [`GITHUB_REDIRECT_HOSTS`] or [`GITHUB_RELEASE_HOST`].
///
/// # Errors
/// The rule it breaks, in words.
pub fn check_redirect(from: &Url, to: &Url) -> Result<(), String> {
    if !matches!(to.scheme(), "http" | "https") {
        return Err(format!("a redirect to the scheme `{}`; only http and https redirects are followed", to.scheme()));
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
    Err(format!(
        "a redirect from {} to another host; only redirects within the same host, or over https to {} and \
         GitHub's download hosts ({}), are followed",
        from.host_str().unwrap_or_default(),
        GITHUB_RELEASE_HOST,
        GITHUB_REDIRECT_HOSTS.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assets_come_from_githubs_release_host_or_the_apis_own() {
        let api = "https://api.github.com";
        assert_eq!(check_asset_url("https://github.com/o/r/releases/download/b1/a.tar.gz", api), Ok(()));
        assert_eq!(check_asset_url("http://127.0.0.1:9/o/r/a.tar.gz", "http://127.0.0.1:9"), Ok(()));
        let metadata = check_asset_url("http://169.254.169.254/latest/meta-data/", api).unwrap_err();
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
        let file = check_redirect(&gh, &u("file:///etc/passwd")).unwrap_err();
        assert_eq!(file, "a redirect to the scheme `file`; only http and https redirects are followed");
        assert!(check_redirect(&gh, &u("http://169.254.169.254/")).is_err());
        assert!(check_redirect(&gh, &u("http://release-assets.githubusercontent.com/x")).is_err(), "https only");
    }
}
