//! The simulated package managers: `dpkg-query`/`apt-get`, `rpm`/`dnf`,
//! `apk`, answering from the host description in their own formats.
//! Installing succeeds when the host's `packages.installable` is true (any
//! name is taken to exist in its repositories) and is remembered.

use llmgw_core::system::{Ended, Output, SysError};
use llmgw_model::host::{Host, PackageFamily};

/// The package managers' installing commands.
pub(super) const INSTALLERS: &[&str] = &["apt-get", "dnf", "apk"];

/// Runs `program args` when it is a package manager; `None` otherwise.
/// With `fails`, installing fails as a broken package manager does.
pub(super) fn run(host: &mut Host, program: &str, args: &[String], fails: bool) -> Option<Result<Output, SysError>> {
    let family = match program {
        "dpkg-query" | "apt-get" => PackageFamily::Deb,
        "rpm" | "dnf" => PackageFamily::Rpm,
        "apk" => PackageFamily::Apk,
        _ => return None,
    };
    if family != host.os.package_family {
        return Some(Err(SysError::Spawn {
            program: program.to_string(),
            message: "No such file or directory".into(),
        }));
    }
    let names: Vec<&String> =
        args.iter().filter(|a| !a.starts_with('-') && !a.contains('$') && !a.contains('%')).collect();
    Some(Ok(match (program, args.first().map(String::as_str)) {
        ("dpkg-query", _) => query(host, &names, |n, yes| {
            if yes {
                (format!("{n}\tinstalled\n"), String::new())
            } else {
                (String::new(), format!("dpkg-query: no packages found matching {n}\n"))
            }
        }),
        ("rpm", _) => query(host, &names, |n, yes| {
            (if yes { format!("{n}\n") } else { format!("package {n} is not installed\n") }, String::new())
        }),
        ("apk", Some("info")) => query(host, names.get(1..).unwrap_or(&[]), |n, yes| {
            (if yes { format!("{n}\n") } else { String::new() }, String::new())
        }),
        ("apt-get", _) | ("dnf", _) | ("apk", Some("add")) if fails => Output {
            ended: Ended::Exited(100),
            stderr: "E: Sub-process /usr/bin/dpkg returned an error code (1)\n".into(),
            ..Output::default()
        },
        ("apt-get", _) => {
            install(host, names.get(1..).unwrap_or(&[]), |n| (100, format!("E: Unable to locate package {n}\n")))
        }
        ("dnf", _) => {
            install(host, names.get(1..).unwrap_or(&[]), |n| (1, format!("Error: Unable to find a match: {n}\n")))
        }
        ("apk", Some("add")) => install(host, names.get(1..).unwrap_or(&[]), |n| {
            (1, format!("ERROR: unable to select packages:\n  {n} (no such package):\n    required by: world[{n}]\n"))
        }),
        _ => Output {
            ended: Ended::Exited(1),
            stderr: format!("{program}: unsupported arguments\n"),
            ..Output::default()
        },
    }))
}

fn query(host: &Host, names: &[&String], line: impl Fn(&str, bool) -> (String, String)) -> Output {
    let mut out = Output { ended: Ended::Exited(0), ..Output::default() };
    for n in names {
        let yes = host.packages.installed.contains(n.as_str());
        let (o, e) = line(n, yes);
        out.stdout.push_str(&o);
        out.stderr.push_str(&e);
        if !yes {
            out.ended = Ended::Exited(1);
        }
    }
    out
}

fn install(host: &mut Host, names: &[&String], refusal: impl Fn(&str) -> (i32, String)) -> Output {
    if !host.packages.installable {
        // An air-gapped node: no repository answers, so no name is found.
        let (code, stderr) = refusal(names.first().map_or("", |n| n.as_str()));
        return Output { ended: Ended::Exited(code), stderr, ..Output::default() };
    }
    let mut stdout = String::new();
    for n in names {
        if host.packages.installed.insert(n.to_string()) {
            stdout.push_str(&format!("Setting up {n} ...\n"));
        }
    }
    Output { ended: Ended::Exited(0), stdout, stderr: String::new(), ..Output::default() }
}
