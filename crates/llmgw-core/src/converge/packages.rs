//! The OS packages a build needs: those missing are installed through the
//! host's package manager (`apt-get`, `dnf`, `apk`), in the words of the
//! package manager when it fails.

use super::failure::BuildFailure;
use crate::parse::packages;
use crate::recipe::Build;
use crate::system::{Cmd, System};
use llmgw_model::host::PackageFamily;

/// Installs the OS packages `build` needs on `family` that are missing;
/// those it installed. On a system without a package manager nothing can
/// be installed, but a compiler the build needs at run time is looked for
/// (`gcc --version`): the libraries the others provide are `ldd`'s to find.
///
/// # Errors
/// [`BuildFailure::Packages`] with the package manager's first line; a
/// [`BuildFailure::System`] when it cannot be run.
pub fn ensure(sys: &mut dyn System, family: PackageFamily, build: &Build) -> Result<Vec<String>, BuildFailure> {
    let needed = build.packages_for(family);
    if family == PackageFamily::None {
        let wants_gcc = build.packages.values().any(|p| p.iter().any(|n| n == "gcc"));
        if wants_gcc && !sys.run(&Cmd::new("gcc", ["--version"])).is_ok_and(|o| o.success()) {
            return Err(BuildFailure::Packages(
                "needs gcc (Triton builds its kernels' launcher with it when a model first loads), \
                 and this system has none and no package manager the installer can use"
                    .into(),
            ));
        }
        return Ok(vec![]);
    }
    if needed.is_empty() {
        return Ok(vec![]);
    }
    let Some(query) = packages::query_command(family, needed) else {
        unreachable!("a family without a package manager names no packages")
    };
    let out = sys.run(&query)?;
    let have = packages::parse_installed(family, &out.stdout);
    let missing: Vec<String> = needed.iter().filter(|n| !have.contains(*n)).cloned().collect();
    if missing.is_empty() {
        return Ok(missing);
    }
    let install = packages::install_command(family, &missing).expect("a family with a query installs");
    let out = sys
        .run(&install)
        .map_err(|e| BuildFailure::Packages(format!("could not install {}: {e}", missing.join(", "))))?;
    if !out.success() {
        let said = out.stderr.lines().chain(out.stdout.lines()).find(|l| !l.trim().is_empty()).unwrap_or("").trim();
        return Err(BuildFailure::Packages(format!(
            "could not install the OS package {} (`{}` {}: {said})",
            missing.join(", "),
            install.display(),
            out.ended
        )));
    }
    Ok(missing)
}

/// The packages a build takes its libraries from, by family, in words:
/// `libgomp1 on deb; libgomp on rpm; libgomp on apk`.
pub fn by_family(build: &Build) -> String {
    build.packages.iter().map(|(f, p)| format!("{} on {}", p.join(", "), f.as_str())).collect::<Vec<_>>().join("; ")
}
