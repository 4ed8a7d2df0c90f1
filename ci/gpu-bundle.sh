#!/usr/bin/env bash
# Makes, here (no GPU needed), everything the check on a real NVIDIA GPU
# needs, in one folder of at most 60 MiB, so that a lent GPU machine runs
# `ci/gpu-check.sh --from DIR` with nothing but its driver: no network, no
# cargo, no nvcc, no pip (issue 31). ci/README.md says what it holds and
# how the check uses it.
#
# Usage: ci/gpu-bundle.sh [--out DIR] [--no-llama | --llama-only] [--fixture DIR]
#   --out DIR      the bundle (default target/gpu-bundle); emptied first
#   --no-llama     leave out the real llama.cpp CUDA build (the check then
#                  says its step is skipped)
#   --llama-only   only build (or find cached) the llama.cpp CUDA build, the
#                  long part (hours the first time on 2 cores), and stop
#   --fixture DIR  also write the small committed copy the rehearsal in
#                  `cargo test` checks (tests/fixtures/gpu-bundle): the
#                  bundle without its large files
#   LLMGW_CACHE    cache root (default $HOME/.cache/llmgw): the tools'
#                  virtual environments, llama.cpp's source and build
#
# What it builds, each with tools pinned here or in ci/release.sh:
#   bin/llmgw          llmgw, static (x86_64-unknown-linux-musl), by cargo
#                      zigbuild with release.sh's cargo-zigbuild and ziglang
#   bin/gpu-tests      tests/gpu.rs (feature gpu-check), static the same way:
#                      the fake release server and the checks of provision
#   programs/standin-{new,old}
#                      a `llama-server`/`llama-bench` stand-in that lists the
#                      GPUs and launches a kernel on the device asked for,
#                      through the driver's libcuda.so.1 alone; machine code
#                      for sm_80 sm_86 sm_89 sm_90 sm_100 sm_120 and PTX for
#                      12.0 (new), or for sm_70 only, no PTX (old); device
#                      code by NVRTC 12.9 and nvFatbin 12.9
#                      (ci/gpu-bundle/standins.txt), host code by zig cc for
#                      glibc 2.17
#   programs/libbackend.so
#                      an empty shared library standing for each ggml backend
#   model/tiny-llama.gguf, hosts/ (what simulate and the provision rehearsal
#                      run on), certs/ (for a machine without CA certificates)
#   llama/             llama.cpp b11312 (llama-cpp-python 0.3.36's sources)
#                      built with GGML_CUDA for sm_90 by nvcc 13.5 from
#                      NVIDIA's wheels (ci/gpu-bundle/llama-cuda.txt): llama-bench,
#                      its libraries, libcudart.so.13 from the wheel; and
#                      cublas-stub/ (see ci/gpu-bundle/cublas-stub.c)
#   expected/          what the check compares with
#   MANIFEST.txt       every file: sha256, size, path, what made it
# Exit: 0 made and within the size; 1 a build or a check failed; 2 bad arguments.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
cd "$repo"

say() { printf 'gpu-bundle: %s\n' "$*" >&2; }
die() { say "FAILED: $*"; exit 1; }
bad() { say "$*"; exit 2; }

MAX_BYTES=$((60 * 1024 * 1024))
TARGET=x86_64-unknown-linux-musl
LLAMA_CPP_PYTHON_VERSION=0.3.36
SDIST_SHA256=832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e
LLAMA_BUILD_NUMBER=11312
LLAMA_BUILD_COMMIT=0c1e570
SCIKIT_BUILD_CORE_VERSION=1.1.2
# The stand-ins' architectures: machine code for the generations a lent
# machine may have, and PTX for 12.0 (which no GPU below 12.0 can run: on
# them the machine code is what runs), from which llmgw reads the toolkit:
# without any PTX or CUDA runtime it cannot tell one, and refuses the file
# ("no driver known to run CUDA"); and machine code for an older generation
# only, which runs on none of them.
NEW_ARCHS="sm_80 sm_86 sm_89 sm_90 sm_100 sm_120"
NEW_PTX="compute_120"
OLD_ARCHS="sm_70"
# The real build's one architecture (machine code only: no PTX to JIT).
LLAMA_CUDA_ARCH=90-real

out=$repo/target/gpu-bundle
llama=1
fixture=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) [ $# -ge 2 ] || bad "--out needs a directory"; out=$2; shift ;;
    --no-llama) llama=0 ;;
    --llama-only) llama=only ;;
    --fixture) [ $# -ge 2 ] || bad "--fixture needs a directory"; fixture=$2; shift ;;
    -h|--help) sed -n '2,44p' "$0"; exit 0 ;;
    *) bad "unknown argument $1 (see --help)" ;;
  esac
  shift
done
[ "$(uname -m)" = x86_64 ] || bad "builds the x86_64 bundle on an x86_64 machine; this is $(uname -m)"
for tool in python3 cc readelf strip sha256sum; do
  command -v "$tool" >/dev/null || die "needs $tool"
done

cache=${LLMGW_CACHE:-$HOME/.cache/llmgw}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$(date +%s)

# venv DIR PINS-FILE: a virtual environment at DIR holding exactly the
# hashed pins of PINS-FILE (reinstalled when the file changed).
venv() {
  local dir=$1 pins=$2 stamp
  stamp=$(sha256sum "$pins" | cut -d' ' -f1)
  if [ -f "$dir/.llmgw-pins" ] && [ "$(cat "$dir/.llmgw-pins")" = "$stamp" ]; then return; fi
  say "installing into $dir: $(grep -v '^#' "$pins" | cut -d' ' -f1 | tr '\n' ' ')"
  rm -rf "$dir"
  python3 -m venv "$dir"
  "$dir/bin/pip" install --quiet --disable-pip-version-check --no-deps --require-hashes -r "$pins"
  printf '%s' "$stamp" >"$dir/.llmgw-pins"
}

# ------------------------------------------------------------ llama.cpp CUDA
# llama.cpp's own release flags for its Linux CUDA archives
# (.github/workflows/release.yml of b11312: $ORIGIN rpath, GGML_BACKEND_DL,
# GGML_CPU_ALL_VARIANTS, no NCCL), for one architecture, and:
#   GGML_CUDA_NO_VMM  no wheel carries the driver's link stub (lib/stubs/
#                     libcuda.so), which ggml-cuda links only for VMM; the
#                     pool then uses cudaMalloc
#   no curl/openssl, no tests, examples or web UI; only the targets the
#   compute check runs (llama-bench, the CUDA backend, the baseline CPU
#   backend libggml-cpu-x64.so).
# Leaves the files in $llama_bin.
build_llama() {
  local cu13=$cache/gpu-bundle/cuda-13.5 src=$cache/gpu-bundle/llama-src-$LLAMA_CPP_PYTHON_VERSION
  local build=$cache/gpu-bundle/llama-build-$LLAMA_CPP_PYTHON_VERSION-sm90 sdist
  venv "$cu13" "$here/gpu-bundle/llama-cuda.txt"
  local site
  site=$("$cu13/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  cuda=$site/nvidia/cu13
  # FindCUDAToolkit and the linker look for the unversioned names.
  for l in cudart cublas cublasLt; do [ -e "$cuda/lib/lib$l.so" ] || ln -s "lib$l.so.13" "$cuda/lib/lib$l.so"; done
  # The sdist, as ci/llama-cpu-check.sh fetches it (its cache shared).
  sdist=$cache/llama-cpu/dl/llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION.tar.gz
  if [ ! -f "$sdist" ] || ! echo "$SDIST_SHA256  $sdist" | sha256sum -c --status; then
    rm -f "$sdist"
    local sv=$cache/gpu-bundle/sdist-venv
    [ -x "$sv/bin/pip" ] || python3 -m venv "$sv"
    "$sv/bin/pip" install -q --disable-pip-version-check "scikit-build-core==$SCIKIT_BUILD_CORE_VERSION"
    PATH="$cu13/bin:$PATH" "$sv/bin/pip" download -q --disable-pip-version-check --no-deps --no-binary :all: \
      --no-build-isolation -d "$(dirname "$sdist")" "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
    echo "$SDIST_SHA256  $sdist" | sha256sum -c --status ||
      die "sha256 of $sdist is $(sha256sum "$sdist" | cut -d' ' -f1), want $SDIST_SHA256"
  fi
  if [ ! -f "$src/.unpacked" ]; then
    rm -rf "$src"
    mkdir -p "$src"
    tar -xzf "$sdist" -C "$src" --strip-components=3 "llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION/vendor/llama.cpp"
    touch "$src/.unpacked"
  fi
  local t0
  t0=$(date +%s)
  say "llama.cpp b$LLAMA_BUILD_NUMBER for CUDA $LLAMA_CUDA_ARCH: configuring in $build (nvcc $("$cuda/bin/nvcc" --version | sed -n 's/^Cuda compilation tools, //p'))"
  # shellcheck disable=SC2016 # $ORIGIN is the loader's, not the shell's
  PATH="$cu13/bin:$cuda/bin:$PATH" "$cu13/bin/cmake" -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_MAKE_PROGRAM="$cu13/bin/ninja" \
    -DCMAKE_INSTALL_RPATH='$ORIGIN' -DCMAKE_BUILD_WITH_INSTALL_RPATH=ON \
    -DGGML_BACKEND_DL=ON -DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=ON \
    -DGGML_CUDA=ON -DGGML_CUDA_NCCL=OFF -DGGML_CUDA_NO_VMM=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$LLAMA_CUDA_ARCH" \
    -DCMAKE_CUDA_COMPILER="$cuda/bin/nvcc" -DCUDAToolkit_ROOT="$cuda" \
    -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_NUMBER=$LLAMA_BUILD_NUMBER -DLLAMA_BUILD_COMMIT=$LLAMA_BUILD_COMMIT \
    >"$cache/gpu-bundle/llama-configure.log" 2>&1 || { tail -30 "$cache/gpu-bundle/llama-configure.log" >&2; die "cmake could not configure llama.cpp"; }
  say "building llama-bench ggml-cuda ggml-cpu-x64 (nice -n 19, 2 jobs; hours the first time on 2 cores)"
  PATH="$cu13/bin:$cuda/bin:$PATH" nice -n 19 "$cu13/bin/cmake" --build "$build" -j 2 \
    --target llama-bench ggml-cuda ggml-cpu-x64 >"$cache/gpu-bundle/llama-build.log" 2>&1 ||
    { tail -30 "$cache/gpu-bundle/llama-build.log" >&2; die "llama.cpp did not build"; }
  say "llama.cpp built in $(($(date +%s) - t0)) s"
  llama_bin=$build/bin
}

if [ "$llama" = only ]; then
  build_llama
  ls -la "$llama_bin" >&2
  exit 0
fi

# ------------------------------------------------------------ the tools
# cargo-zigbuild and ziglang: ci/release.sh's pins, in its virtual
# environment (the same directory and stamp, so the two share it).
TOOLS_PINS=$(sed -n 's/^TOOLS_PINS="\(.*\)"$/\1/p' "$here/release.sh")
[ -n "$TOOLS_PINS" ] || die "ci/release.sh names no TOOLS_PINS"
tools=$cache/release-tools
if [ ! -f "$tools/.llmgw-pins" ] || [ "$(cat "$tools/.llmgw-pins")" != "$TOOLS_PINS" ]; then
  say "installing into $tools: $TOOLS_PINS (ci/release.sh's pins)"
  rm -rf "$tools"
  python3 -m venv "$tools"
  # shellcheck disable=SC2086
  "$tools/bin/pip" install --quiet --disable-pip-version-check $TOOLS_PINS
  printf '%s' "$TOOLS_PINS" >"$tools/.llmgw-pins"
fi
zig() { "$tools/bin/python" -m ziglang "$@"; }
# A cache of zig's own for this run: zig's cache does not follow every file
# a compilation reads (.incbin, an #include named by a macro), and a stale
# object once stood in for a new one.
export ZIG_GLOBAL_CACHE_DIR=$work/zig-cache ZIG_LOCAL_CACHE_DIR=$work/zig-cache
rustup target add "$TARGET" >/dev/null
standin_tools=$cache/gpu-bundle/standin-tools
venv "$standin_tools" "$here/gpu-bundle/standins.txt"
site12=$("$standin_tools/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
cuobjdump=$site12/nvidia/cu13/bin/cuobjdump
zig_version=$(zig version)
nvrtc_version=$("$standin_tools/bin/pip" show nvidia-cuda-nvrtc-cu12 2>/dev/null | sed -n 's/^Version: //p')
nvfatbin_version=$("$standin_tools/bin/pip" show nvidia-nvfatbin-cu12 2>/dev/null | sed -n 's/^Version: //p')
rustc_version=$(rustc --version)
zigbuild_version=$("$tools/bin/cargo-zigbuild" --version | awk '{print $2}')

b=$work/bundle
mkdir -p "$b/bin" "$b/programs" "$b/model" "$b/hosts" "$b/expected"
# made_by[PATH]: what made each file, for the manifest.
declare -A made_by

# ------------------------------------------------------------ llmgw
say "the native build (cargo build --release --locked): the expected outputs and inspect"
nice -n 19 cargo build --release --locked --quiet
native=$repo/target/release/llmgw
say "llmgw for $TARGET (cargo zigbuild --release --locked, nice -n 19)"
t0=$(date +%s)
PATH="$tools/bin:$PATH" nice -n 19 cargo zigbuild --release --locked --quiet --target "$TARGET" --bin llmgw \
  >"$work/zigbuild.log" 2>&1 || { tail -30 "$work/zigbuild.log" >&2; die "llmgw did not build for $TARGET"; }
say "built in $(($(date +%s) - t0)) s"
strip -o "$b/bin/llmgw" "$repo/target/$TARGET/release/llmgw"
made_by[bin/llmgw]="cargo zigbuild --release --target $TARGET --bin llmgw ($rustc_version, cargo-zigbuild $zigbuild_version, zig $zig_version), stripped"

say "tests/gpu.rs for $TARGET (cargo zigbuild --release --locked --features gpu-check --test gpu)"
t0=$(date +%s)
PATH="$tools/bin:$PATH" nice -n 19 cargo zigbuild --release --locked --target "$TARGET" --features gpu-check \
  --test gpu --message-format json >"$work/tests.json" 2>"$work/tests.log" ||
  { tail -30 "$work/tests.log" >&2; die "tests/gpu.rs did not build for $TARGET"; }
tests_bin=$(python3 -c '
import json, sys
for line in open(sys.argv[1]):
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m["target"]["name"] == "gpu" and m.get("executable"):
        print(m["executable"])' "$work/tests.json")
[ -x "$tests_bin" ] || die "cargo named no test executable for tests/gpu.rs"
say "built in $(($(date +%s) - t0)) s: $tests_bin"
strip -o "$b/bin/gpu-tests" "$tests_bin"
made_by[bin/gpu-tests]="cargo zigbuild --release --target $TARGET --features gpu-check --test gpu ($rustc_version, cargo-zigbuild $zigbuild_version, zig $zig_version), stripped"
for f in bin/llmgw bin/gpu-tests; do
  if readelf -lW "$b/$f" | grep -q 'Requesting program interpreter' || readelf -dW "$b/$f" | grep -q '(NEEDED)'; then
    die "$f is not static (PT_INTERP or DT_NEEDED)"
  fi
done

# ------------------------------------------------------------ the stand-ins
say "the stand-ins: device code by NVRTC $nvrtc_version and nvFatbin $nvfatbin_version, host code by zig cc $zig_version"
cp "$here/gpu-bundle/standin.c" "$here/gpu-bundle/probe.cu" "$work/"
# shellcheck disable=SC2086
"$standin_tools/bin/python" "$here/gpu-bundle/mkfatbin.py" "$site12" "$work/probe.cu" "$work/new.fatbin" $NEW_ARCHS $NEW_PTX >&2
# shellcheck disable=SC2086
"$standin_tools/bin/python" "$here/gpu-bundle/mkfatbin.py" "$site12" "$work/probe.cu" "$work/old.fatbin" $OLD_ARCHS >&2
zcc=(zig cc -target x86_64-linux-gnu.2.17 -O2 -s -Wall -Werror)
(cd "$work" && "${zcc[@]}" -DSEEN -DFATBIN='"new.fatbin"' -o "$b/programs/standin-new" standin.c -ldl)
(cd "$work" && "${zcc[@]}" -DFATBIN='"old.fatbin"' -o "$b/programs/standin-old" standin.c -ldl)
for p in new old; do
  python3 -c 'import sys; sys.exit(open(sys.argv[1], "rb").read().find(open(sys.argv[2], "rb").read()) < 0)' \
    "$b/programs/standin-$p" "$work/$p.fatbin" || die "standin-$p does not hold $p.fatbin"
done
echo 'int llmgw_backend(void) { return 0; }' >"$work/backend.c"
(cd "$work" && "${zcc[@]}" -shared -fPIC -o "$b/programs/libbackend.so" backend.c)
standin_how="zig cc $zig_version -target x86_64-linux-gnu.2.17 from ci/gpu-bundle/standin.c (sha256 $(sha256sum "$here/gpu-bundle/standin.c" | cut -d' ' -f1))"
fatbin_how="NVRTC $nvrtc_version + nvFatbin $nvfatbin_version from ci/gpu-bundle/probe.cu (sha256 $(sha256sum "$here/gpu-bundle/probe.cu" | cut -d' ' -f1))"
made_by[programs/standin-new]="$standin_how, -DSEEN: $fatbin_how, ${NEW_ARCHS// /,} and $NEW_PTX PTX in .nv_fatbin"
made_by[programs/standin-old]="$standin_how: $fatbin_how, ${OLD_ARCHS// /,} in .rodata.llmgw_probe (unseen by inspect)"
made_by[programs/libbackend.so]="zig cc $zig_version -target x86_64-linux-gnu.2.17 -shared: int llmgw_backend(void)"

# inspect's sets, checked against what was asked and against cuobjdump.
sets() { # FILE: "sass=a,b ptx=c" from llmgw inspect --format json's summary
  "$native" inspect --format json "$1" | python3 -c '
import json, sys
s = json.load(sys.stdin)["summary"]
print("sass=%s ptx=%s" % (",".join(s["sass"]) or "-", ",".join(s["ptx"]) or "-"))'
}
: >"$b/expected/programs.txt"
for p in standin-new standin-old; do
  echo "programs/$p $(sets "$b/programs/$p")" >>"$b/expected/programs.txt"
done
want_new="programs/standin-new sass=${NEW_ARCHS// /,} ptx=${NEW_PTX//compute_/sm_}"
want_old="programs/standin-old sass=- ptx=-"
[ "$(sed -n 1p "$b/expected/programs.txt")" = "$want_new" ] || die "inspect says $(sed -n 1p "$b/expected/programs.txt"), want $want_new"
[ "$(sed -n 2p "$b/expected/programs.txt")" = "$want_old" ] || die "inspect says $(sed -n 2p "$b/expected/programs.txt"), want $want_old"
made_by[expected/programs.txt]="llmgw inspect --format json (the native build): each program's SASS and PTX"
(cd "$b/programs" && "$cuobjdump" --list-elf --list-ptx standin-new 2>/dev/null) >"$b/expected/standin-new.cuobjdump.txt"
(cd "$work" && "$cuobjdump" --list-elf --list-ptx old.fatbin 2>/dev/null) >"$b/expected/standin-old.fatbin.cuobjdump.txt"
for a in $NEW_ARCHS; do grep -q "\.$a\.cubin" "$b/expected/standin-new.cuobjdump.txt" || die "cuobjdump lists no $a in standin-new"; done
[ "$(grep -c 'ELF file' "$b/expected/standin-new.cuobjdump.txt")" = "$(echo "$NEW_ARCHS" | wc -w)" ] || die "cuobjdump lists other machine code in standin-new"
grep -q "\.$OLD_ARCHS\.cubin" "$b/expected/standin-old.fatbin.cuobjdump.txt" && [ "$(grep -c 'ELF file' "$b/expected/standin-old.fatbin.cuobjdump.txt")" = 1 ] ||
  die "cuobjdump does not list $OLD_ARCHS alone in the old stand-in's fatbin"
[ "$(grep -c '^PTX file' "$b/expected/standin-new.cuobjdump.txt")" = 1 ] || die "cuobjdump lists other PTX than $NEW_PTX in standin-new"
! grep -q '^PTX file' "$b/expected/standin-old.fatbin.cuobjdump.txt" || die "the old stand-in carries PTX"
made_by[expected/standin-new.cuobjdump.txt]="cuobjdump $("$standin_tools/bin/pip" show nvidia-cuda-cuobjdump 2>/dev/null | sed -n 's/^Version: //p') --list-elf --list-ptx standin-new"
made_by[expected/standin-old.fatbin.cuobjdump.txt]="cuobjdump --list-elf --list-ptx of the fatbin embedded in standin-old"
"$b/programs/standin-new" --version 2>&1 | head -n 1 >"$b/expected/standin-version.txt"
grep -q '^version: 0.4.0-dev (build 10850, commit fe14399)$' "$b/expected/standin-version.txt" || die "the stand-in says $(cat "$b/expected/standin-version.txt")"
made_by[expected/standin-version.txt]="programs/standin-new --version, first line"

# ------------------------------------------------------------ the model, the hosts, CA certificates
mkdir -p "$b/certs"
cp /etc/ssl/certs/ca-certificates.crt "$b/certs/ca-certificates.crt"
made_by[certs/ca-certificates.crt]="this machine's /etc/ssl/certs/ca-certificates.crt ($(dpkg-query -W -f '${Package} ${Version}' ca-certificates 2>/dev/null || echo 'its package unknown')): for a machine without CA certificates"
cp assets/tiny-llama.gguf "$b/model/tiny-llama.gguf"
made_by[model/tiny-llama.gguf]="assets/tiny-llama.gguf (ci/tiny-model/README.md)"
cp matrix/hosts/v100.json "$b/hosts/simulate.json"
made_by[hosts/simulate.json]="matrix/hosts/v100.json (what ci/release.sh simulates)"
# The provision rehearsal's host, where no GPU is: an H200 on driver 590,
# without a package manager (nothing can be installed from there).
python3 - matrix/hosts/h200-ubuntu24.04-driver590.json "$b/hosts/rehearsal.json" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))
h["os"]["package_family"] = "none"
json.dump(h, open(sys.argv[2], "w"), indent=2)
open(sys.argv[2], "a").write("\n")
PY
made_by[hosts/rehearsal.json]="matrix/hosts/h200-ubuntu24.04-driver590.json, os.package_family none"
set +e
(cd "$b" && "$native" simulate --host hosts/simulate.json --format json) >"$b/expected/simulate.json" 2>/dev/null
echo $? >"$b/expected/simulate.exit"
set -e
"$native" --version >"$b/expected/llmgw-version.txt"
cmp -s "$b/expected/llmgw-version.txt" <("$b/bin/llmgw" --version) || die "the static llmgw says $("$b/bin/llmgw" --version)"
made_by[expected/simulate.json]="llmgw simulate --host hosts/simulate.json --format json (the native build, cargo build --release)"
made_by[expected/simulate.exit]="its exit code"
made_by[expected/llmgw-version.txt]="llmgw --version (the native build)"

# ------------------------------------------------------------ the real llama.cpp build
if [ "$llama" = 1 ]; then
  build_llama
  mkdir -p "$b/llama"
  # llama-bench and what it loads: its libraries (NEEDED, by their SONAME),
  # and the backends ggml loads from its directory (GGML_BACKEND_DL): the
  # CUDA one and the baseline CPU one (the only CPU variant there, it is
  # the one loaded).
  llama_files="llama-bench libllama-bench-impl.so libllama-common.so.0 libllama.so.0 libggml.so.0 libggml-base.so.0 libggml-cuda.so libggml-cpu-x64.so"
  for f in $llama_files; do
    [ -e "$llama_bin/$f" ] || die "the llama.cpp build has no $f"
    strip -o "$b/llama/$f" "$(readlink -f "$llama_bin/$f")"
  done
  # What they need that the bundle does not carry must be the C library's.
  extra=$(for f in "$b"/llama/*; do readelf -dW "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; done | sort -u |
    while read -r n; do [ -e "$b/llama/$n" ] || echo "$n"; done |
    grep -vE '^(libcudart\.so\.13|libcublas\.so\.13|libcublasLt\.so\.13|libgomp\.so\.1|libstdc\+\+\.so\.6|libgcc_s\.so\.1|libc\.so\.6|libm\.so\.6|libdl\.so\.2|librt\.so\.1|libpthread\.so\.0|ld-linux-x86-64\.so\.2)$' || true)
  [ -z "$extra" ] || die "the llama.cpp build needs libraries the bundle does not account for: $extra"
  cp -L "$cuda/lib/libcudart.so.13" "$b/llama/libcudart.so.13"
  # OpenMP's runtime, which ggml's CPU code links and minimal images lack
  # (it needs glibc 2.34, as the build itself does). Not this compiler's
  # libstdc++ and libgcc_s: built against this machine's glibc 2.36, they
  # would raise the build's floor above Ubuntu 22.04's 2.35, whose own
  # libstdc++ (GLIBCXX_3.4.30) the build runs with.
  cp -L "$(g++ -print-file-name=libgomp.so.1)" "$b/llama/libgomp.so.1"
  # The cuBLAS stand-ins: the functions libggml-cuda.so imports, each saying it was called.
  readelf --dyn-syms -W "$b/llama/libggml-cuda.so" | awk '$7 == "UND" {print $8}' | sed 's/@.*//' |
    grep '^cublas' | sort -u | sed 's/.*/STUB(&)/' >"$work/cublas.stubs"
  [ -s "$work/cublas.stubs" ] || die "libggml-cuda.so imports no cuBLAS function"
  ! grep -q '^STUB(cublasLt' "$work/cublas.stubs" || die "libggml-cuda.so imports cublasLt functions: the stub makes libcublas.so.13's only"
  mkdir -p "$b/llama/cublas-stub"
  printf 'libcublas.so.13 {\n  global: %s\n  local: *;\n};\n' "$(sed 's/STUB(\(.*\))/\1;/' "$work/cublas.stubs" | tr '\n' ' ')" >"$work/cublas.map"
  (cd "$work" && "${zcc[@]}" -shared -fPIC -I. -DSTUBS='"cublas.stubs"' -Wl,-soname,libcublas.so.13 -Wl,--version-script=cublas.map \
    -o "$b/llama/cublas-stub/libcublas.so.13" "$here/gpu-bundle/cublas-stub.c")
  printf 'libcublasLt.so.13 {\n  local: *;\n};\n' >"$work/cublasLt.map"
  echo 'int llmgw_cublaslt_stub;' >"$work/cublaslt.c"
  (cd "$work" && "${zcc[@]}" -shared -fPIC -Wl,-soname,libcublasLt.so.13 -Wl,--version-script=cublasLt.map \
    -o "$b/llama/cublas-stub/libcublasLt.so.13" cublaslt.c)
  llama_how="llama.cpp b$LLAMA_BUILD_NUMBER ($LLAMA_BUILD_COMMIT; llama-cpp-python $LLAMA_CPP_PYTHON_VERSION sdist, sha256 $SDIST_SHA256), cmake GGML_CUDA CMAKE_CUDA_ARCHITECTURES=$LLAMA_CUDA_ARCH, nvcc $("$cuda/bin/nvcc" --version | sed -n 's/^Cuda compilation tools, release \([^,]*\),.*/\1/p'), $(g++ --version | head -n 1), stripped"
  for f in $llama_files; do made_by[llama/$f]=$llama_how; done
  made_by[llama/libcudart.so.13]="nvidia-cuda-runtime $("$cache/gpu-bundle/cuda-13.5/bin/pip" show nvidia-cuda-runtime 2>/dev/null | sed -n 's/^Version: //p') (PyPI wheel)"
  made_by[llama/libgomp.so.1]="this machine's $(g++ --version | head -n 1) OpenMP runtime ($(dpkg-query -W -f '${Package} ${Version}' libgomp1 2>/dev/null || echo 'its package unknown'))"
  made_by[llama/cublas-stub/libcublas.so.13]="zig cc $zig_version from ci/gpu-bundle/cublas-stub.c: $(wc -l <"$work/cublas.stubs") functions libggml-cuda.so imports, each aborting"
  made_by[llama/cublas-stub/libcublasLt.so.13]="zig cc $zig_version: an empty library named libcublasLt.so.13"
  # What the check compares with: the build's kernels, and what its own llama-bench says of itself.
  echo "llama/libggml-cuda.so $(sets "$b/llama/libggml-cuda.so")" >"$b/expected/llama.txt"
  grep -q "^llama/libggml-cuda.so sass=sm_90 ptx=-$" "$b/expected/llama.txt" || die "inspect says $(cat "$b/expected/llama.txt")"
  "$native" inspect --format json "$b/llama" >"$work/llama-inspect.json"
  python3 - "$work/llama-inspect.json" >>"$b/expected/llama.txt" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
f = s["floors"]
print("floors GLIBC=%s GLIBCXX=%s" % ((f.get("GLIBC") or {}).get("version") or "-", (f.get("GLIBCXX") or {}).get("version") or "-"))
PY
  made_by[expected/llama.txt]="llmgw inspect --format json (the native build): libggml-cuda.so's SASS and PTX, the build's GLIBC and GLIBCXX floors"
  # It runs here, on the CPU: the compute check's command with -dev none.
  (cd "$b/llama" && LD_LIBRARY_PATH=$PWD/cublas-stub timeout 120 ./llama-bench -m ../model/tiny-llama.gguf -dev none \
    -ngl 99 -p 8 -n 8 -r 1 --no-warmup -o jsonl -v) >"$work/cpu.jsonl" 2>"$work/cpu.err" ||
    { tail -20 "$work/cpu.err" >&2; die "the real llama-bench does not run here on the CPU"; }
  grep -q '"n_gen": 8' "$work/cpu.jsonl" || die "the real llama-bench generated nothing on the CPU: $(tail -3 "$work/cpu.err")"
fi

# ------------------------------------------------------------ the manifest
rev=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
dirty=$(git status --porcelain -- . ':!tests/fixtures/gpu-bundle' 2>/dev/null | grep -q . && echo ", with uncommitted changes" || true)
manifest() { # DIR TITLE: DIR/MANIFEST.txt of every file under DIR
  local dir=$1 title=$2
  {
    echo "# $title"
    echo "# made by ci/gpu-bundle.sh at $rev$dirty; checked by ci/gpu-check.sh --from DIR"
    echo "# sha256  bytes  path  what made it"
    echo "# A file stored gzipped (PATH.gz) is listed twice: as it is stored, and as"
    echo "# it is once unpacked (what made it then says \"(unpacked from PATH.gz)\")."
    {
      (cd "$dir" && find . -type f ! -name MANIFEST.txt -printf '%P\n') | while read -r f; do
        printf '%s  %s  %s  %s\n' "$(sha256sum "$dir/$f" | cut -d' ' -f1)" "$(stat -c %s "$dir/$f")" "$f" "${made_by[$f]:-?}"
      done
      [ "$dir" != "$b" ] || cat "$work/unpacked.lines"
    } | LC_ALL=C sort -k3,3
  } >"$dir/MANIFEST.txt"
  ! grep -q '  ?$' "$dir/MANIFEST.txt" || die "the manifest does not say what made: $(grep '  ?$' "$dir/MANIFEST.txt" | awk '{print $3}' | tr '\n' ' ')"
}
# Every file over 1 MiB stored gzipped (gzip -9n, its mode kept): the
# check unpacks them (gzip is on every machine), and the bundle fits with
# the real llama.cpp build (libggml-cuda.so: 40.7 MB, 20.9 MB gzipped).
: >"$work/unpacked.lines"
(cd "$b" && find . -type f -size +1M -printf '%P\n' | LC_ALL=C sort) | while read -r f; do
  printf '%s  %s  %s  (unpacked from %s.gz) %s\n' "$(sha256sum "$b/$f" | cut -d' ' -f1)" "$(stat -c %s "$b/$f")" "$f" "$f" \
    "${made_by[$f]:-?}" >>"$work/unpacked.lines"
  gzip -9n "$b/$f"
done
while read -r _ _ f _; do made_by[$f.gz]="gzip -9n of $f"; done <"$work/unpacked.lines"
manifest "$b" "the GPU check's bundle (issue 31): llmgw $(cat "$b/expected/llmgw-version.txt" | awk '{print $2}') for $TARGET"
bytes=$(du -sb "$b" | cut -f1)
if [ "$bytes" -gt "$MAX_BYTES" ]; then
  du -ab "$b" | sort -n | tail -n 12 >&2
  die "the bundle is $bytes bytes, over $MAX_BYTES (60 MiB)"
fi
# The device tool carries the bundle with the working tree, 64 MiB in all
# (/work/.library/device/README.md, Limits).
tree=$(git ls-files -z | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
[ $((bytes + tree)) -le $((64 * 1024 * 1024)) ] ||
  die "the bundle ($bytes bytes) and the tracked files ($tree bytes) are over the 64 MiB a lent machine is sent"
rm -rf "$out"
mkdir -p "$(dirname "$out")"
mv "$b" "$out"
out=$(cd "$out" && pwd)

# ------------------------------------------------------------ the fixture
if [ -n "$fixture" ]; then
  rm -rf "$fixture"
  mkdir -p "$fixture"
  # The bundle without its large files and the outputs of its own llmgw
  # build: the rehearsal in `cargo test` brings its llmgw (--llmgw).
  (cd "$out" && find programs hosts expected -type f | grep -vE '^expected/(simulate\.json|simulate\.exit|llmgw-version\.txt|llama\.txt)$' |
    LC_ALL=C sort) | while read -r f; do mkdir -p "$fixture/$(dirname "$f")"; cp "$out/$f" "$fixture/$f"; done
  manifest "$fixture" "a fixture of the GPU check's bundle (tests/it/gpu_bundle.rs): its programs, hosts and expected outputs, without bin/, llama/, model/ and its llmgw's own outputs"
  say "wrote the fixture $fixture ($(du -sb "$fixture" | cut -f1) bytes)"
fi

say "wrote $out: $(find "$out" -type f | wc -l) files, $bytes bytes ($(awk -v b="$bytes" 'BEGIN {printf "%.1f", b / 1048576}') MiB of 60; $(awk -v b="$((bytes + tree))" 'BEGIN {printf "%.1f", b / 1048576}') MiB of 64 with the tracked files), in $(($(date +%s) - started)) s"
(cd "$out" && du -ab . | sort -k2 | awk '{printf "  %10d  %s\n", $1, $2}' | grep -v ' \.$') >&2
