#!/usr/bin/env bash
# Builds llmgw's release: one binary per target that runs on any Linux of its
# architecture (glibc 2.17 and newer, or none at all), release archives with
# their sha256, and checks on every binary. RELEASING.md, "Release builds",
# shows its output; ci/README.md says what it prints.
#
# Usage: ci/release.sh VERSION [--out DIR] [--targets "T1 T2 …"] [--no-build] [--clean]
#   VERSION      llmgw's version, as Cargo.toml has it (the archives are named by it)
#   --out DIR    where the archives go (default dist/); emptied of llmgw-* first
#   --targets    a subset of the targets below (default: all of them)
#   --no-build   check and pack binaries built by an earlier run
#   --clean      afterwards, remove each cross target's intermediate files
#                (target/<triple>/release/{deps,build,.fingerprint,incremental})
#   LLMGW_CACHE  cache root (default $HOME/.cache/llmgw): the tools' virtual
#                environment, the older glibc unpacked
#
# Targets: x86_64-unknown-linux-gnu and aarch64-unknown-linux-gnu for glibc 2.17
# (NVML loaded with dlopen), x86_64-unknown-linux-musl and aarch64-unknown-linux-musl
# (static; GPUs through nvidia-smi), powerpc64le-unknown-linux-gnu (zig's
# glibc 2.19, the oldest it has for it; see zig_glibc) and
# s390x-unknown-linux-gnu (glibc 2.17). The first four must build; the last
# two are built where the toolchain allows it, and said when it does not
# (powerpc64le does not link with zig 0.17.1: RELEASING.md, "Release builds").
#
# What it installs: cargo-zigbuild and ziglang (pinned) into a virtual environment
# of its own; the Rust targets with rustup; qemu-user and Debian's cross C
# libraries (libc6-<arch>-cross, libgcc-s1-<arch>-cross, the loader of a gnu
# binary under qemu) with apt-get when they are missing and apt-get is here.
#
# Checks, each failing the script (exit 1):
#   - every gnu binary's GLIBC floor (`llmgw inspect --format json`) is at most 2.17;
#   - every musl binary has no PT_INTERP (readelf -l) and no DT_NEEDED (inspect);
#   - every binary runs `simulate --host matrix/hosts/v100.json --format json`,
#     the foreign ones under qemu-<arch>, and prints byte for byte what the
#     native build (`cargo build`, this machine's glibc) prints, with its exit code;
#   - every binary runs `discover` and says which GPU discovery it used; a musl
#     one says that NVML cannot be loaded by a static binary;
#   - every archive made twice is the same bytes.
# And, where Debian 11's glibc 2.31 can be had from the Debian mirror apt
# already uses, every gnu binary runs `simulate` on it: the x86_64 one in a
# chroot of it, the foreign ones under qemu-<arch> -L it; output as above.
#
# Exit: 0 all built and checked; 1 a build or a check failed; 2 bad arguments.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"

say() { printf 'release: %s\n' "$*" >&2; }
bad() { say "$*"; exit 2; }
fail() { say "FAILED: $*"; failures=$((failures + 1)); }
failures=0

ALL_TARGETS="x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl powerpc64le-unknown-linux-gnu s390x-unknown-linux-gnu"
REQUIRED="x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl aarch64-unknown-linux-musl"
GLIBC_FLOOR=2.17
TOOLS_PINS="cargo-zigbuild==0.24.1 ziglang==0.17.1"

version=""
out="$repo/dist"
targets="$ALL_TARGETS"
build=1
clean=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || bad "--out needs a directory"; out=$2; shift ;;
    --targets) [ $# -ge 2 ] || bad "--targets needs a list"; targets=$2; shift ;;
    --no-build) build=0 ;;
    --clean) clean=1 ;;
    -h|--help) sed -n '2,40p' "$0"; exit 0 ;;
    -*) bad "unknown option $1 (see --help)" ;;
    *) [ -z "$version" ] || bad "one VERSION only, not also $1"; version=$1 ;;
  esac
  shift
done
[ -n "$version" ] || bad "usage: ci/release.sh VERSION [--out DIR] [--targets LIST] [--no-build] [--clean]"
crate_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
[ "$version" = "$crate_version" ] ||
  bad "VERSION $version is not the crate's version in Cargo.toml ($crate_version), which \`llmgw --version\` prints"
for t in $targets; do
  case " $ALL_TARGETS " in *" $t "*) ;; *) bad "--targets: unknown target $t (the targets: $ALL_TARGETS)" ;; esac
done
mkdir -p "$out" || bad "--out $out cannot be made"
out=$(cd "$out" && pwd)

cache=${LLMGW_CACHE:-$HOME/.cache/llmgw}
tools=$cache/release-tools
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

arch_of() { echo "${1%%-*}"; }                       # x86_64, aarch64, powerpc64le, s390x
is_musl() { case "$1" in *-musl) return 0 ;; *) return 1 ;; esac; }
qemu_of() {
  case "$(arch_of "$1")" in
    x86_64) echo "" ;; aarch64) echo qemu-aarch64 ;; powerpc64le) echo qemu-ppc64le ;; s390x) echo qemu-s390x ;;
  esac
}
# The glibc zig links a gnu target against: 2.17, but for powerpc64le, whose
# port began with glibc 2.19 (zig has no older one for it: "unable to provide
# libc for target powerpc64le-linux-gnu.2.17"), while its symbols are
# versioned GLIBC_2.17 as aarch64's are; the floor check below reads what the
# binary really needs. zig's headers for it default to IEEE 128-bit long
# double, whose printf (__printfieee128) only glibc 2.32 has: the C code of
# that target is compiled with -mabi=ibmlongdouble (CFLAGS_<target> below),
# the long double glibc 2.17's ppc64le ABI has.
zig_glibc() { case "$1" in powerpc64le-*) echo 2.19 ;; *) echo "$GLIBC_FLOOR" ;; esac; }
# Debian's name of an architecture, for its cross libraries.
deb_arch() {
  case "$(arch_of "$1")" in aarch64) echo arm64 ;; powerpc64le) echo ppc64el ;; s390x) echo s390x ;; esac
}
# The sysroot qemu-user loads a gnu binary's loader and libraries from.
sysroot_of() {
  case "$(arch_of "$1")" in
    aarch64) echo /usr/aarch64-linux-gnu ;; powerpc64le) echo /usr/powerpc64le-linux-gnu ;; s390x) echo /usr/s390x-linux-gnu ;;
  esac
}

# ---------------------------------------------------------------- the tools
for tool in readelf sha256sum tar gzip python3; do
  command -v "$tool" >/dev/null || { say "needs $tool"; exit 1; }
done
if [ "$build" = 1 ]; then
  command -v python3 >/dev/null || { say "needs python3 (for cargo-zigbuild's virtual environment)"; exit 1; }
  if [ ! -f "$tools/.llmgw-pins" ] || [ "$(cat "$tools/.llmgw-pins")" != "$TOOLS_PINS" ]; then
    say "installing into $tools: $TOOLS_PINS"
    rm -rf "$tools"
    mkdir -p "$cache"
    python3 -m venv "$tools"
    # shellcheck disable=SC2086
    "$tools/bin/pip" install --quiet --disable-pip-version-check $TOOLS_PINS
    printf '%s' "$TOOLS_PINS" >"$tools/.llmgw-pins"
  fi
  # shellcheck disable=SC2086
  rustup target add $targets >/dev/null
fi
need_apt=""
for t in $targets; do
  q=$(qemu_of "$t")
  [ -z "$q" ] || command -v "$q" >/dev/null || need_apt="$need_apt qemu-user"
  if [ -n "$q" ] && ! is_musl "$t" && [ ! -d "$(sysroot_of "$t")/lib" ]; then
    need_apt="$need_apt libc6-$(deb_arch "$t")-cross libgcc-s1-$(deb_arch "$t")-cross"
  fi
done
if [ -n "$need_apt" ]; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    say "installing with apt-get:$need_apt"
    apt-get update -qq >/dev/null
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $need_apt >/dev/null
  else
    say "cannot install$need_apt (no apt-get, or not root): the foreign binaries will not be run"
  fi
fi

# ---------------------------------------------------------------- the builds
# The native build: what every other binary's output is compared with, and
# the llmgw whose `inspect` reads them all.
say "native build (cargo build --locked)"
nice -n 19 cargo build --locked --quiet
native=$repo/target/debug/llmgw

built=""
declare -A why_not
for t in $targets; do
  zig_target=$t
  is_musl "$t" || zig_target=$t.$(zig_glibc "$t")
  bin=$repo/target/$t/release/llmgw
  if [ "$build" = 1 ]; then
    say "building $zig_target (cargo zigbuild --release, nice -n 19)"
    start=$(date +%s)
    if PATH="$tools/bin:$PATH" CFLAGS_powerpc64le_unknown_linux_gnu=-mabi=ibmlongdouble \
      nice -n 19 cargo zigbuild --release --locked --quiet \
      --target "$zig_target" >"$work/build-$t.log" 2>&1; then
      say "built $t in $(($(date +%s) - start)) s"
    else
      # The compiler's or linker's own words where there are some, else cargo's.
      why_not[$t]=$(grep -m 1 -oE '(ld\.lld: error: .*|fatal error: .*|error: unable to provide libc.*)' "$work/build-$t.log" ||
        grep -m 1 -E '^error' "$work/build-$t.log" || tail -n 1 "$work/build-$t.log")
      tail -n 30 "$work/build-$t.log" >&2
      case " $REQUIRED " in
        *" $t "*) fail "$t did not build: ${why_not[$t]}" ;;
        *) say "$t not built (the toolchain does not allow it here): ${why_not[$t]}" ;;
      esac
      continue
    fi
  fi
  if [ -x "$bin" ]; then
    built="$built $t"
  else
    why_not[$t]=${why_not[$t]:-"no binary at $bin (run without --no-build)"}
    case " $REQUIRED " in *" $t "*) fail "$t: ${why_not[$t]}" ;; esac
  fi
done

# ---------------------------------------------------------------- the checks
# inspect's JSON: the GLIBC floor (or -) and the NEEDED libraries, one line each.
inspect_facts() {
  "$native" inspect --format json "$1" | python3 -c '
import json, sys
r = json.load(sys.stdin)
floor = (r["summary"]["floors"].get("GLIBC") or {}).get("version") or "-"
needed = [n for f in r["files"] for n in f["elf"]["needed"]]
print(floor)
print(" ".join(needed) or "-")'
}
# Whether version $1 <= $2 (dotted numbers).
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]; }

run_on() { # TARGET BIN ARGS…: runs BIN natively or under qemu-<arch>
  local t=$1 bin=$2; shift 2
  local q; q=$(qemu_of "$t")
  if [ -z "$q" ]; then "$bin" "$@"
  elif is_musl "$t"; then "$q" "$bin" "$@"
  else "$q" -L "$(sysroot_of "$t")" "$bin" "$@"
  fi
}

host=matrix/hosts/v100.json
set +e
"$native" simulate --host "$host" --format json >"$work/native.json" 2>/dev/null
native_code=$?
set -e
say "native simulate exited $native_code, $(wc -c <"$work/native.json") bytes"

declare -A size floor links runs gpu
for t in $built; do
  bin=$repo/target/$t/release/llmgw
  size[$t]=$(stat -c %s "$bin")
  mapfile -t facts < <(inspect_facts "$bin")
  if is_musl "$t"; then
    interp=$(readelf -lW "$bin" | grep -c 'Requesting program interpreter' || true)
    if [ "${facts[1]}" != "-" ] || [ "$interp" != 0 ]; then
      fail "$t is not static: NEEDED ${facts[1]}, PT_INTERP $interp"
    fi
    floor[$t]="none (static)"
    links[$t]="no PT_INTERP, no DT_NEEDED"
  else
    floor[$t]=${facts[0]}
    links[$t]=${facts[1]}
    version_le "${facts[0]}" "$GLIBC_FLOOR" || fail "$t needs GLIBC_${facts[0]}, above $GLIBC_FLOOR"
  fi

  q=$(qemu_of "$t")
  if [ -n "$q" ] && ! command -v "$q" >/dev/null; then
    fail "$t cannot be run: no $q"
    continue
  fi
  how=${q:-native}
  set +e
  run_on "$t" "$bin" simulate --host "$host" --format json >"$work/$t.json" 2>"$work/$t.err"
  code=$?
  set -e
  if [ "$code" = "$native_code" ] && cmp -s "$work/native.json" "$work/$t.json"; then
    runs[$t]="$how: simulate identical to native (exit $code)"
  else
    runs[$t]="$how: simulate DIFFERS (exit $code)"
    fail "$t: simulate under $how exited $code and printed $(wc -c <"$work/$t.json") bytes; native exited $native_code with $(wc -c <"$work/native.json") bytes"
    head -n 5 "$work/$t.err" >&2
  fi

  set +e
  run_on "$t" "$bin" discover --engines-dir "$work/engines" >"$work/$t.host.json" 2>"$work/$t.discover"
  code=$?
  set -e
  line=$(grep -m 1 '^llmgw: GPU discovery: ' "$work/$t.discover" || true)
  gpu[$t]=${line#llmgw: GPU discovery: }
  if [ "$code" != 0 ] || [ -z "$line" ]; then
    fail "$t: discover exited $code without saying its GPU discovery: $(head -n 3 "$work/$t.discover")"
  elif is_musl "$t" && ! grep -q 'NVML cannot be loaded by a static binary' <<<"$line"; then
    fail "$t: discover does not say that a static binary cannot load NVML: $line"
  elif ! is_musl "$t" && grep -q 'static' <<<"$line"; then
    fail "$t: a glibc build says it is static: $line"
  fi
done

# ---------------------------------------------------------------- older glibc
# Debian 11's libc6 (glibc 2.31: Ubuntu 20.04's and Debian 11's), the oldest
# the Debian mirror apt already uses still serves (older suites are only in
# Debian's archive), for each gnu target's architecture, unpacked with
# dpkg-deb -x into a root of its own: the x86_64 build runs `simulate` in a
# chroot of it, the foreign ones under qemu-<arch> -L it (its loader and libc
# found there first, as they are in a chroot).
declare -A old
deb_arch_of() { case "$(arch_of "$1")" in x86_64) echo amd64 ;; *) deb_arch "$1" ;; esac; }
gnu_built=""
for t in $built; do is_musl "$t" || gnu_built="$gnu_built $t"; done
if [ -n "$gnu_built" ] && command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null && [ "$(id -u)" = 0 ]; then
  mirror=$(sed -n 's/^URIs: *\([^ ]*\).*/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v security | head -n 1)
  [ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  apt_dir=$work/apt
  mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial"
  arches=$(for t in $gnu_built; do deb_arch_of "$t"; done | paste -sd, -)
  echo "deb [arch=$arches signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror bullseye main" >"$apt_dir/sources.list"
  apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o Dir::Etc::SourceParts=/dev/null
    -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir/archives"
    -o Dir::State::status=/dev/null -o APT::Architecture=amd64 -o "APT::Architectures=$arches")
  updated=""
  for t in $gnu_built; do
    da=$(deb_arch_of "$t")
    root=$cache/glibc-2.31-$da
    if [ ! -f "$root/.llmgw-complete" ]; then
      if [ -z "$updated" ]; then
        if [ -n "$mirror" ] && apt-get "${apt_opts[@]}" update -qq >/dev/null 2>&1; then updated=yes; else updated=no; fi
      fi
      rm -rf "$root" "$apt_dir"/*.deb
      if [ "$updated" = yes ] && (cd "$apt_dir" && apt-get "${apt_opts[@]}" download "libc6:$da" >/dev/null 2>&1); then
        mkdir -p "$root"
        for deb in "$apt_dir"/*.deb; do dpkg-deb -x "$deb" "$root"; done
        # qemu -L finds files under the root, but an absolute link in it
        # (/lib64/ld64.so.2 -> /lib/…) would lead out of it: made to point in.
        if [ -n "$(qemu_of "$t")" ]; then
          find "$root" -type l -lname '/*' | while read -r link; do ln -sfn "$root$(readlink "$link")" "$link"; done
        fi
        touch "$root/.llmgw-complete"
      fi
    fi
    libc=$( (find "$root" -name 'libc-*.so' -printf '%f\n' 2>/dev/null || true) | sed -n 's/^libc-\(.*\)\.so$/\1/p' | head -n 1)
    if [ -z "$libc" ]; then
      old[$t]="not run: the Debian mirror apt uses has no Debian 11 libc6:$da (apt-get download found none)"
      continue
    fi
    bin=$repo/target/$t/release/llmgw
    q=$(qemu_of "$t")
    set +e
    if [ -z "$q" ]; then
      how="in a chroot of Debian 11's libc6:$da (glibc $libc)"
      # llmgw builds its HTTP client (rustls) even to simulate, and that
      # fails without a CA certificate ("builder error"): this machine's
      # bundle, as any node has one.
      mkdir -p "$root/tmp" "$root/etc/ssl/certs"
      cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
      cp "$bin" "$root/llmgw"
      cp "$host" "$root/v100.json"
      chroot "$root" /llmgw simulate --host /v100.json --format json >"$work/old-$t.json" 2>"$work/old-$t.err"
      code=$?
      rm -f "$root/llmgw"
    elif command -v "$q" >/dev/null; then
      how="$q -L Debian 11's libc6:$da (glibc $libc)"
      "$q" -L "$root" "$bin" simulate --host "$host" --format json >"$work/old-$t.json" 2>"$work/old-$t.err"
      code=$?
    else
      set -e
      old[$t]="not run: no $q"
      continue
    fi
    set -e
    if [ "$code" = "$native_code" ] && cmp -s "$work/native.json" "$work/old-$t.json"; then
      old[$t]="$how: simulate identical to native (exit $code)"
    else
      old[$t]="$how: simulate exited $code, DIFFERS"
      fail "$t $how: simulate exited $code: $(head -n 2 "$work/old-$t.err")"
    fi
  done
else
  for t in $gnu_built; do old[$t]="not run: needs apt-get, dpkg-deb and root"; done
fi

# ---------------------------------------------------------------- archives
epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
# The man page and the shell completions, generated once by the native
# build from the command line's own definitions (the same for every target).
docs_dir="$work/docs"
mkdir -p "$docs_dir/completions"
"$native" man >"$docs_dir/llmgw.1" || fail "llmgw man failed"
"$native" completions bash >"$docs_dir/completions/llmgw.bash" || fail "llmgw completions bash failed"
"$native" completions zsh >"$docs_dir/completions/_llmgw" || fail "llmgw completions zsh failed"
"$native" completions fish >"$docs_dir/completions/llmgw.fish" || fail "llmgw completions fish failed"
# pack TARGET DEST: the deterministic archive (fixed mtimes and owners,
# entries sorted by name, gzip without a name or timestamp). What a node's
# operator needs: the binary, README, LICENSE, CHANGELOG, the agent's unit,
# the man page and the completions; not the development figures
# (BENCHMARKS.md).
pack() {
  local t=$1 dest=$2 dir=llmgw-$version-$1 stage
  stage=$(mktemp -d "$work/pack.XXXXXX")
  mkdir -p "$stage/$dir/completions"
  install -m 0755 "$repo/target/$t/release/llmgw" "$stage/$dir/llmgw"
  install -m 0644 README.md LICENSE CHANGELOG.md deploy/llmgw-agent.service "$docs_dir/llmgw.1" "$stage/$dir/"
  install -m 0644 "$docs_dir"/completions/* "$stage/$dir/completions/"
  tar --sort=name --mtime="@$epoch" --owner=0 --group=0 --numeric-owner --format=gnu \
    -C "$stage" -cf - "$dir" | gzip -9 -n >"$dest"
  rm -rf "$stage"
}
rm -f "$out"/llmgw-*.tar.gz "$out"/llmgw-*.tar.gz.sha256 "$out/SHA256SUMS"
declare -A archive_size
for t in $built; do
  name=llmgw-$version-$t.tar.gz
  pack "$t" "$out/$name"
  pack "$t" "$work/again.tar.gz"
  cmp -s "$out/$name" "$work/again.tar.gz" || fail "$name is not the same bytes when made again"
  (cd "$out" && sha256sum "$name" >"$name.sha256")
  archive_size[$t]=$(stat -c %s "$out/$name")
done
(cd "$out" && if ls llmgw-*.tar.gz >/dev/null 2>&1; then sha256sum llmgw-*.tar.gz >SHA256SUMS; fi)

# ---------------------------------------------------------------- summary
{
  echo "llmgw $version release ($(git rev-parse --short HEAD 2>/dev/null || echo unknown)), $(rustc --version)," \
    "cargo-zigbuild $("$tools/bin/cargo-zigbuild" --version 2>/dev/null | awk '{print $2}'), zig $("$tools/bin/python" -m ziglang version 2>/dev/null)"
  printf '%-31s %10s %10s  %-14s %s\n' target binary archive GLIBC "linked against"
  for t in $built; do
    printf '%-31s %10s %10s  %-14s %s\n' "$t" "${size[$t]}" "${archive_size[$t]:--}" "${floor[$t]}" "${links[$t]}"
  done
  echo "runs (simulate --host $host --format json, $(wc -c <"$work/native.json") bytes, exit $native_code natively):"
  for t in $built; do echo "  $t: ${runs[$t]:-not run}"; done
  for t in $gnu_built; do echo "  $t on glibc 2.31: ${old[$t]:-not run}"; done
  echo "discover (GPU discovery):"
  for t in $built; do echo "  $t: ${gpu[$t]:-not run}"; done
  for t in $targets; do
    if [[ " $built " != *" $t "* ]]; then echo "not built: $t: ${why_not[$t]:-}"; fi
  done
  echo "archives in $out:"
  (cd "$out" && cat SHA256SUMS 2>/dev/null)
} | tee "$out/release-summary.txt"

if [ "$clean" = 1 ]; then
  for t in $targets; do
    rm -rf "$repo/target/$t/release/"{deps,build,.fingerprint,incremental}
  done
  say "removed the cross targets' intermediate files"
fi

if [ "$failures" -gt 0 ]; then
  say "$failures check(s) failed"
  exit 1
fi
say "all built and checked"
