//! What the package managers say is installed, and how to ask them.
//!
//! Queries: `dpkg-query -W -f '${Package}\t${db:Status-Status}\n' NAMES…`
//! (deb), `rpm -q --queryformat '%{NAME}\n' NAMES…` (rpm), `apk info -e NAMES…` (apk).
//! Each exits non-zero when any name is missing, so the parsers read the
//! output, not the exit code.

use std::collections::BTreeSet;

use crate::system::Cmd;
use llmgw_model::host::PackageFamily;

/// The command that asks which of `names` are installed; `None` for a
/// family without a package manager.
pub fn query_command(family: PackageFamily, names: &[String]) -> Option<Cmd> {
    let (program, mut args): (&str, Vec<String>) = match family {
        PackageFamily::Deb => {
            ("dpkg-query", vec!["-W".into(), "-f".into(), "${Package}\t${db:Status-Status}\n".into()])
        }
        PackageFamily::Rpm => ("rpm", vec!["-q".into(), "--queryformat".into(), "%{NAME}\n".into()]),
        PackageFamily::Apk => ("apk", vec!["info".into(), "-e".into()]),
        PackageFamily::None => return None,
    };
    args.extend(names.iter().cloned());
    Some(Cmd::new(program, args).timeout(60))
}

/// The command that installs `names`, non-interactively; `None` for a
/// family without a package manager.
pub fn install_command(family: PackageFamily, names: &[String]) -> Option<Cmd> {
    let cmd = match family {
        PackageFamily::Deb => {
            Cmd::new("apt-get", ["install", "-y", "--no-install-recommends"]).env("DEBIAN_FRONTEND", "noninteractive")
        }
        PackageFamily::Rpm => Cmd::new("dnf", ["install", "-y"]),
        PackageFamily::Apk => Cmd::new("apk", ["add", "--no-cache"]),
        PackageFamily::None => return None,
    };
    let mut cmd = cmd.timeout(600);
    cmd.args.extend(names.iter().cloned());
    Some(cmd)
}

/// The installed package names in a query's standard output.
pub fn parse_installed(family: PackageFamily, stdout: &str) -> BTreeSet<String> {
    stdout
        .lines()
        .filter_map(|l| match family {
            PackageFamily::Deb => {
                let (name, status) = l.split_once('\t')?;
                (status.trim() == "installed").then(|| name.trim().to_string())
            }
            // rpm prints "package X is not installed" for the missing ones.
            PackageFamily::Rpm => {
                let t = l.trim();
                (!t.is_empty() && !t.contains(' ')).then(|| t.to_string())
            }
            PackageFamily::Apk => Some(l.trim().to_string()).filter(|t| !t.is_empty() && !t.contains(' ')),
            PackageFamily::None => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_each_family() {
        let deb = parse_installed(PackageFamily::Deb, "libgomp1\tinstalled\nlibvulkan1\tconfig-files\n");
        assert_eq!(deb.into_iter().collect::<Vec<_>>(), ["libgomp1"]);
        let rpm = parse_installed(PackageFamily::Rpm, "libgomp\npackage vulkan-loader is not installed\n");
        assert_eq!(rpm.into_iter().collect::<Vec<_>>(), ["libgomp"]);
        let apk = parse_installed(PackageFamily::Apk, "libgomp\n");
        assert_eq!(apk.into_iter().collect::<Vec<_>>(), ["libgomp"]);
    }

    #[test]
    fn commands_name_the_packages() {
        let names = vec!["libvulkan1".to_string()];
        assert_eq!(
            install_command(PackageFamily::Deb, &names).unwrap().display(),
            "apt-get install -y --no-install-recommends libvulkan1"
        );
        assert!(query_command(PackageFamily::None, &names).is_none());
    }
}
