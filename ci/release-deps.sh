#!/usr/bin/env bash
# The cheap check that keeps ci/release.sh from rotting (seconds, no build,
# no network beyond the registry): the dependency tree resolves for every
# release target (the static musl ones included), and every `-sys` crate in
# it is one RELEASING.md's "What the release links" table names, saying how the release
# builds and links it. A new `-sys` crate that needs a C library at link time
# fails here until RELEASING.md says how the static build gets it.
#
# And the static (musl) trees carry no nvml-wrapper: a static binary cannot
# dlopen libnvidia-ml.so.1, and lists GPUs with nvidia-smi instead.
#
# Usage: ci/release-deps.sh      exit 0 checked; 1 a crate RELEASING.md does not name, or NVML in a musl tree
set -euo pipefail
cd "$(dirname "$0")/.."

targets="x86_64-unknown-linux-musl aarch64-unknown-linux-musl x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu
  powerpc64le-unknown-linux-gnu s390x-unknown-linux-gnu"
# The crates RELEASING.md's table names: rows `| \`NAME\` | … |` of the section.
# shellcheck disable=SC2016
named=$(sed -n '/^### What the release links/,/^##/p' RELEASING.md | sed -n 's/^| `\([a-z0-9_-]*-sys\)` |.*/\1/p' | sort -u)
[ -n "$named" ] || { echo "release-deps: RELEASING.md has no \"What the release links\" table" >&2; exit 1; }
missing=0
for t in $targets; do
  sys=$(cargo tree --locked --quiet --target "$t" -e normal,build --prefix none --format '{p}' |
    awk '{print $1}' | grep -- '-sys$' | sort -u)
  for crate in $sys; do
    if ! grep -qx -- "$crate" <<<"$named"; then
      echo "release-deps: $crate (a dependency for $t) is not in RELEASING.md's \"What the release links\" table:" \
        "say there what it links and how ci/release.sh builds it (static for musl)" >&2
      missing=1
    fi
  done
  # A static binary cannot dlopen: NVML's wrapper is for the glibc builds only.
  case "$t" in
    *-musl)
      if cargo tree --locked --quiet --target "$t" -e normal --prefix none --format '{p}' | grep -q '^nvml-wrapper '; then
        echo "release-deps: nvml-wrapper is a dependency for $t, a static build that cannot dlopen" \
          "libnvidia-ml.so.1: keep it under [target.'cfg(not(target_env = \"musl\"))'.dependencies]" >&2
        missing=1
      fi
      ;;
  esac
  echo "release-deps: $t resolves; -sys crates: ${sys//$'\n'/ }"
done
exit $missing
