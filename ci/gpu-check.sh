#!/usr/bin/env bash
# The check on a real NVIDIA GPU (issues 5.5 and 31), from the bundle
# ci/gpu-bundle.sh made on another machine: it uses only that folder and
# what a machine with an NVIDIA GPU has (the driver, nvidia-smi,
# libcuda.so.1; bash and coreutils): no network, no cargo, no nvcc, no pip.
#
# Usage: ci/gpu-check.sh --from DIR [--rehearse] [--llmgw PATH] [--out DIR]
#   --from DIR     the bundle (target/gpu-bundle after ci/gpu-bundle.sh)
#   --rehearse     only the steps that need no GPU, where none is (and in
#                  cargo test, against tests/fixtures/gpu-bundle)
#   --llmgw PATH   this llmgw instead of the bundle's bin/llmgw (a fixture has none)
#   --out DIR      where it writes (default $OUT, else a new /tmp/gpu-check.*):
#                  gpu-check.log (all it printed), gpu-check.tar.gz (every
#                  step's log and output: the discover capture, host.json,
#                  nvidia-smi's answers, provision's reports)
#
# One line per step, `gpu-check: STEP: passed: …`, `failed: <the line that
# decided>` or `skipped: <why>`, each step under a time limit:
#   bundle     every file MANIFEST.txt lists, with its size and sha256, and no other
#   llmgw      the static llmgw runs: --version, simulate (byte for byte as the
#              native build printed it when the bundle was made)
#   driver     nvidia-smi answers: the driver, every GPU (name, compute
#              capability, memory); libcuda.so.1 is there
#   discover   llmgw discover describes what nvidia-smi says (tests/gpu.rs)
#   mig        MIG mode of every GPU (llmgw's host description has no MIG yet)
#   programs   the stand-ins: llmgw inspect lists their machine code as the
#              bundle says; they answer --version and --list-devices; on a
#              GPU the new one computes on every device and the old one is
#              refused in CUDA's words
#   server     llmgw mock-server answers on loopback
#   provision  a real provision against the fake release server (tests/gpu.rs):
#              the old build first, refused by the compute check in CUDA's
#              words, the next build installed; rehearsing, every build
#              refused at the listing with the stand-in's line
#   llama      the real llama.cpp CUDA build (sm_90): llmgw's GPU check with
#              the tiny model on every GPU; rehearsing, it computes on the CPU
#   torch      llmgw's Python GPU check (torch and Triton) with this machine's python3
#   capture    llmgw discover --capture of this machine, replayed: a future
#              fixture for tests/discover/
# Exit: 0 nothing failed; 1 a step failed; 2 bad arguments.
set -uo pipefail

say() { printf 'gpu-check: %s\n' "$*"; }
bad() { say "$*" >&2; exit 2; }

from=""
rehearse=0
llmgw=""
out=${OUT:-}
while [ $# -gt 0 ]; do
  case "$1" in
    --from) [ $# -ge 2 ] || bad "--from needs the bundle's folder"; from=$2; shift ;;
    --rehearse) rehearse=1 ;;
    --llmgw) [ $# -ge 2 ] || bad "--llmgw needs a path"; llmgw=$2; shift ;;
    --out) [ $# -ge 2 ] || bad "--out needs a folder"; out=$2; shift ;;
    -h|--help) sed -n '2,42p' "$0"; exit 0 ;;
    *) bad "unknown argument $1 (see --help)" ;;
  esac
  shift
done
[ -n "$from" ] || bad "usage: ci/gpu-check.sh --from DIR [--rehearse] [--llmgw PATH] [--out DIR]"
[ -d "$from" ] || bad "--from $from is not a folder (make it with ci/gpu-bundle.sh)"
for tool in timeout sha256sum awk sort stat tar gzip; do
  command -v "$tool" >/dev/null || bad "needs $tool (coreutils, awk, tar, gzip)"
done
FROM=$(cd "$from" && pwd)
if [ -z "$out" ]; then out=$(mktemp -d /tmp/gpu-check.XXXXXX); fi
mkdir -p "$out" || bad "--out $out cannot be made"
out=$(cd "$out" && pwd)
WORK=$(mktemp -d /tmp/gpu-check-work.XXXXXX)
WORK_NAME=gpu-check-$(date -u +%Y%m%dT%H%M%SZ)
W=$WORK/$WORK_NAME
mkdir -p "$W/steps"
# The bundle as the steps use it: the bundle step's copy, unpacked.
BUNDLE=$WORK/bundle
if [ -n "$llmgw" ]; then
  [ -x "$llmgw" ] || bad "--llmgw $llmgw is not a program"
  LLMGW=$(cd "$(dirname "$llmgw")" && pwd)/$(basename "$llmgw")
else
  LLMGW=$BUNDLE/bin/llmgw
fi
TESTS=$BUNDLE/bin/gpu-tests
REHEARSE=$rehearse
export FROM BUNDLE LLMGW TESTS W REHEARSE
# Loopback never through a proxy; and where the machine has no CA
# certificates, the bundle's (llmgw's HTTPS client is built with them even to
# reach the fake server over plain HTTP).
export no_proxy="127.0.0.1,localhost${no_proxy:+,$no_proxy}" NO_PROXY="127.0.0.1,localhost${NO_PROXY:+,$NO_PROXY}"
if [ -z "${SSL_CERT_FILE:-}" ] && [ -f "$FROM/certs/ca-certificates.crt" ] &&
  ! ls /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/cert.pem >/dev/null 2>&1; then
  export SSL_CERT_FILE=$FROM/certs/ca-certificates.crt
fi
exec > >(tee "$out/gpu-check.log") 2>&1
tee_pid=$!
trap 'rm -rf "$WORK"' EXIT

# ------------------------------------------------------------ helpers (exported to each step)
decided() { echo "decided: $*"; }
fail() { echo "decided: $*"; exit 1; }
skip() { echo "skip: $*"; exit 3; }
# sets FILE: "sass=a,b ptx=c" from the summary of llmgw inspect --format json.
sets() {
  "$LLMGW" inspect --format json "$1" | awk '
    /^  "summary": \{/ { s = 1 }
    s && /^    "(sass|ptx)": \[/ {
      k = $1; gsub(/[":]/, "", k)
      if ($0 ~ /\[\]/) { v[k] = "-"; next }
      c = k; v[k] = ""; next
    }
    c != "" && /^    \]/ { c = ""; next }
    c != "" { x = $0; gsub(/[ ",]/, "", x); v[c] = (v[c] == "" ? x : v[c] "," x) }
    END { printf "sass=%s ptx=%s\n", (v["sass"] == "" ? "-" : v["sass"]), (v["ptx"] == "" ? "-" : v["ptx"]) }'
}
# gpu_tests NAME: one test of the bundle's bin/gpu-tests; its `decided:`
# line, or its panic's message as the line that decided.
gpu_tests() {
  local name=$1 log=$W/steps/$1.gpu-tests.log rc=0
  [ -x "$TESTS" ] || fail "the bundle has no bin/gpu-tests"
  "$TESTS" --exact "$name" --nocapture --test-threads 1 >"$log" 2>&1 || rc=$?
  cat "$log"
  if [ "$rc" = 0 ] && grep -q '^test result: ok. 1 passed' "$log"; then
    # libtest prints `test NAME ... ` before the test's first line: the
    # decided line may follow it on the same line.
    decided "$(sed -n 's/.*decided: //p' "$log" | tail -n 1)"
    return 0
  fi
  local why
  why=$(awk '/panicked at/ { p = 1; next } p && /^(note: |stack backtrace:)/ { exit } p && NF { printf "%s%s", (n++ ? " | " : ""), $0 } n >= 3 { exit }' "$log")
  fail "${why:-bin/gpu-tests $name exited $rc without a panic message (steps/$name.gpu-tests.log)}"
}
# find_lib NAME: where the loader would find NAME (LD_LIBRARY_PATH, ldconfig's
# cache, the usual folders), or words saying it was not found.
find_lib() {
  local d f
  for d in ${LD_LIBRARY_PATH//:/ }; do [ -f "$d/$1" ] && { echo "$d/$1"; return; }; done
  f=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null) | awk -v n="$1" '$1 == n {print $NF; exit}')
  [ -n "$f" ] && { echo "$f"; return; }
  for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64 /usr/lib/wsl/lib; do
    [ -f "$d/$1" ] && { echo "$d/$1"; return; }
  done
  echo "not in LD_LIBRARY_PATH, ldconfig -p or the usual folders"
}
version_le() { [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | head -n 1)" = "$1" ]; }
export -f decided fail skip sets gpu_tests find_lib version_le

# ------------------------------------------------------------ the steps
step_bundle() {
  set -e
  # The folder as carried is checked against its manifest, and copied to
  # $BUNDLE with its gzipped files unpacked (and every program executable,
  # whatever the copy that brought it here kept of the modes).
  local m=$FROM/MANIFEST.txt n=0 bytes=0 packed=0
  [ -f "$m" ] || fail "$FROM has no MANIFEST.txt: not a bundle of ci/gpu-bundle.sh"
  rm -rf "$BUNDLE"
  mkdir -p "$BUNDLE"
  local f
  (cd "$FROM" && find . -type f -printf '%P\n') | while read -r f; do
    mkdir -p "$BUNDLE/$(dirname "$f")"
    case "$f" in
      *.gz) gzip -dc "$FROM/$f" >"$BUNDLE/${f%.gz}" || fail "$f: gzip cannot unpack it" ;;
      *) cp "$FROM/$f" "$BUNDLE/$f" ;;
    esac
  done
  for f in "$BUNDLE"/bin/* "$BUNDLE"/programs/* "$BUNDLE"/llama/* "$BUNDLE"/llama/*/*; do
    [ -f "$f" ] && chmod +x "$f"
  done
  local listed=$W/listed
  : >"$listed"
  local sha size path what where have
  while read -r sha size path what; do
    case "$sha" in '#'*|'') continue ;; esac
    # Listed as unpacked: checked in the copy, once unpacked; else as carried.
    case "$what" in
      "(unpacked from $path.gz)"*) where=$BUNDLE/$path packed=$((packed + 1)) ;;
      *) where=$FROM/$path; echo "$path" >>"$listed"; n=$((n + 1)); bytes=$((bytes + size)) ;;
    esac
    [ -f "$where" ] || fail "$path: listed in MANIFEST.txt, not in the bundle"
    have=$(stat -c %s "$where")
    [ "$have" = "$size" ] || fail "$path: $have bytes, MANIFEST.txt says $size"
    have=$(sha256sum "$where" | cut -d' ' -f1)
    [ "$have" = "$sha" ] || fail "$path: sha256 $have, MANIFEST.txt says $sha"
  done <"$m"
  local extra
  extra=$(cd "$FROM" && find . -type f ! -name MANIFEST.txt -printf '%P\n' | LC_ALL=C sort | LC_ALL=C comm -23 - <(LC_ALL=C sort "$listed") | head -n 3 | tr '\n' ' ')
  [ -z "$extra" ] || fail "not in MANIFEST.txt: $extra"
  for f in programs/standin-new programs/standin-old programs/libbackend.so hosts/rehearsal.json hosts/simulate.json \
    expected/programs.txt expected/standin-version.txt; do
    [ -f "$BUNDLE/$f" ] || fail "the bundle has no $f"
  done
  [ -x "$LLMGW" ] || fail "no llmgw at $LLMGW (a fixture has none: give --llmgw)"
  if [ "$REHEARSE" = 0 ]; then
    for f in bin/gpu-tests model/tiny-llama.gguf; do
      [ -f "$BUNDLE/$f" ] || fail "the bundle has no $f, which the check on a GPU needs (a fixture? only --rehearse runs on one)"
    done
  fi
  decided "$n files, $bytes bytes, each with the size and sha256 MANIFEST.txt gives ($packed of them unpacked and checked again); $(sed -n 's/^# made by //p' "$m" | head -n 1)"
}

step_llmgw() {
  set -e
  local v
  v=$("$LLMGW" --version) || fail "$LLMGW --version exited $?"
  if [ -f "$BUNDLE/expected/llmgw-version.txt" ] && [ "$v" != "$(cat "$BUNDLE/expected/llmgw-version.txt")" ]; then
    fail "llmgw --version says '$v', the bundle's build said '$(cat "$BUNDLE/expected/llmgw-version.txt")'"
  fi
  local rc=0
  (cd "$BUNDLE" && "$LLMGW" simulate --host hosts/simulate.json --format json) >"$W/simulate.json" 2>"$W/simulate.stderr" || rc=$?
  if [ -f "$BUNDLE/expected/simulate.json" ]; then
    [ "$rc" = "$(cat "$BUNDLE/expected/simulate.exit")" ] || fail "simulate exited $rc, the native build $(cat "$BUNDLE/expected/simulate.exit")"
    cmp -s "$W/simulate.json" "$BUNDLE/expected/simulate.json" ||
      fail "simulate --host hosts/simulate.json printed other bytes than the native build ($(wc -c <"$W/simulate.json") against $(wc -c <"$BUNDLE/expected/simulate.json"))"
    decided "$v; simulate --host hosts/simulate.json byte for byte the native build's (exit $rc)"
  else
    [ "$rc" -le 1 ] && [ "$(head -c 1 "$W/simulate.json")" = "{" ] || fail "simulate exited $rc: $(head -n 1 "$W/simulate.stderr")"
    decided "$v; simulate --host hosts/simulate.json printed a report (exit $rc)"
  fi
}

step_driver() {
  command -v nvidia-smi >/dev/null || fail "no nvidia-smi on this machine"
  nvidia-smi >"$W/nvidia-smi.txt" 2>&1 || fail "nvidia-smi exited $?: $(head -n 1 "$W/nvidia-smi.txt")"
  nvidia-smi -L >"$W/nvidia-smi-L.txt" 2>&1 || true
  nvidia-smi --query-gpu=driver_version,compute_cap,name,memory.total --format=csv,noheader,nounits \
    >"$W/nvidia-smi.csv" 2>"$W/nvidia-smi.csv.stderr" || fail "nvidia-smi --query-gpu exited $?: $(head -n 1 "$W/nvidia-smi.csv.stderr")"
  local n lib
  n=$(grep -c . "$W/nvidia-smi.csv")
  [ "$n" -ge 1 ] || fail "nvidia-smi lists no GPU"
  lib=$(find_lib libcuda.so.1)
  decided "driver $(head -n 1 "$W/nvidia-smi.csv" | cut -d, -f1 | tr -d ' '); $n GPU(s): $(cut -d, -f2- "$W/nvidia-smi.csv" | sed 's/^ *//; s/, */ /g' | paste -sd ';' -) MiB; libcuda.so.1: $lib"
}

step_discover() {
  [ -f "$W/nvidia-smi.csv" ] || skip "the driver step did not answer"
  "$LLMGW" discover --output "$W/host.json" 2>"$W/discover.stderr" || fail "llmgw discover exited $?: $(grep -m 1 . "$W/discover.stderr")"
  cat "$W/discover.stderr"
  local line
  line=$(grep -m 1 '^llmgw: GPU discovery: ' "$W/discover.stderr" || true)
  [ -n "$line" ] || fail "llmgw discover said no 'GPU discovery:' line"
  LLMGW_GPU_HOST=$W/host.json LLMGW_GPU_SMI=$W/nvidia-smi.csv gpu_tests discover_agrees_with_nvidia_smi
  decided "${line#llmgw: }; $(sed -n 's/.*decided: //p' "$W/steps/discover_agrees_with_nvidia_smi.gpu-tests.log" | tail -n 1)"
}

step_mig() {
  nvidia-smi --query-gpu=index,mig.mode.current --format=csv,noheader >"$W/nvidia-smi-mig.csv" 2>&1 ||
    fail "nvidia-smi --query-gpu=mig.mode.current exited $?: $(head -n 1 "$W/nvidia-smi-mig.csv")"
  local on
  on=$(awk -F', *' '$2 == "Enabled" {printf "%sGPU %s", (n++ ? ", " : ""), $1}' "$W/nvidia-smi-mig.csv")
  if [ -n "$on" ]; then
    fail "MIG is on ($on; $(grep -c 'MIG ' "$W/nvidia-smi-L.txt" 2>/dev/null || echo 0) instances in nvidia-smi -L): llmgw's host description has no MIG instances (nvidia.gpus[].mig, issue 28.4), so discover says nothing of them"
  fi
  decided "MIG off on every GPU (mig.mode.current: $(cut -d, -f2 "$W/nvidia-smi-mig.csv" | sed 's/^ *//' | sort -u | paste -sd, -))"
}

step_programs() {
  set -e
  local p line want
  while read -r p want; do
    line="$p $(sets "$BUNDLE/$p")"
    [ "$line" = "$p $want" ] || fail "llmgw inspect: $line; the bundle says $p $want"
  done <"$BUNDLE/expected/programs.txt"
  local new=$BUNDLE/programs/standin-new old=$BUNDLE/programs/standin-old
  [ "$("$new" --version 2>&1 | head -n 1)" = "$(cat "$BUNDLE/expected/standin-version.txt")" ] ||
    fail "standin-new --version says '$("$new" --version 2>&1 | head -n 1)'"
  "$new" --list-devices >"$W/standin-list.stdout" 2>"$W/standin-list.stderr" || fail "standin-new --list-devices exited $?"
  cat "$W/standin-list.stdout" "$W/standin-list.stderr"
  grep -q '^Available devices:$' "$W/standin-list.stdout" || fail "standin-new --list-devices printed no 'Available devices:'"
  local listed
  listed=$(grep -c '^  CUDA[0-9]*: ' "$W/standin-list.stdout" || true)
  local model=$BUNDLE/model/tiny-llama.gguf
  [ -f "$model" ] || model=$BUNDLE/hosts/simulate.json   # a fixture has no model: not a GGUF, refused
  if [ "$REHEARSE" = 1 ]; then
    local rc=0
    "$new" -m "$BUNDLE/hosts/simulate.json" -dev CUDA0 >"$W/standin-bad-model.out" 2>&1 || rc=$?
    if [ "$rc" != 1 ] || ! grep -q 'failed to load model' "$W/standin-bad-model.out"; then
      fail "standin-new took a file that is not a GGUF (exit $rc)"
    fi
    decided "inspect: $(paste -sd ';' "$BUNDLE/expected/programs.txt"); --version and --list-devices answer ($listed device(s) here: $(grep -m 1 '^ggml_cuda_init' "$W/standin-list.stderr" || echo none))"
    return 0
  fi
  local gpus
  gpus=$(grep -c . "$W/nvidia-smi.csv")
  [ "$listed" = "$gpus" ] || fail "standin-new lists $listed CUDA device(s), nvidia-smi $gpus: $(grep -m 1 '^ggml_cuda_init' "$W/standin-list.stderr" || true)"
  local i=0 rc
  while [ "$i" -lt "$listed" ]; do
    rc=0
    "$new" -m "$model" -dev "CUDA$i" >"$W/standin-new.CUDA$i.out" 2>"$W/standin-new.CUDA$i.err" || rc=$?
    grep -q '"n_gen": 8' "$W/standin-new.CUDA$i.out" && [ "$rc" = 0 ] ||
      fail "standin-new on CUDA$i exited $rc: $(grep -m 1 'CUDA error' "$W/standin-new.CUDA$i.err" || tail -n 1 "$W/standin-new.CUDA$i.err")"
    i=$((i + 1))
  done
  rc=0
  "$old" -m "$model" -dev CUDA0 >"$W/standin-old.CUDA0.out" 2>"$W/standin-old.CUDA0.err" || rc=$?
  cat "$W/standin-old.CUDA0.err"
  local cc_major
  cc_major=$(head -n 1 "$W/nvidia-smi.csv" | cut -d, -f2 | tr -d ' ' | cut -d. -f1)
  if [ "$cc_major" = 7 ]; then
    decided "new computes on $listed device(s); the old one's sm_70 code runs on this $cc_major.x GPU: no refusal to see here"
    return 0
  fi
  [ "$rc" != 0 ] || fail "standin-old computed on CUDA0 (exit 0): its sm_70 machine code ran on a $(head -n 1 "$W/nvidia-smi.csv" | cut -d, -f2 | tr -d ' ') GPU"
  grep -q '^CUDA error: no kernel image is available for execution on the device$' "$W/standin-old.CUDA0.err" ||
    fail "standin-old on CUDA0 exited $rc: $(grep -m 1 'CUDA error' "$W/standin-old.CUDA0.err" || tail -n 1 "$W/standin-old.CUDA0.err")"
  decided "inspect as the bundle says; standin-new computes on CUDA0..$((listed - 1)); standin-old refused on CUDA0, exit $rc: CUDA error: no kernel image is available for execution on the device"
}

step_server() {
  set -e
  local log=$W/mock-server.out pid port i
  "$LLMGW" mock-server --port 0 >"$log" 2>&1 &
  pid=$!
  trap 'kill "$pid" 2>/dev/null || true' EXIT
  for i in $(seq 1 50); do
    port=$(sed -n 's|^serving the fake GitHub release API at http://127.0.0.1:\([0-9]*\)$|\1|p' "$log")
    [ -z "$port" ] || break
    kill -0 "$pid" 2>/dev/null || fail "llmgw mock-server exited: $(head -n 1 "$log")"
    sleep 0.2
  done
  [ -n "$port" ] || fail "llmgw mock-server said no address in 10 s: $(head -n 1 "$log")"
  exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "cannot connect to 127.0.0.1:$port"
  printf 'GET /repos/ggml-org/llama.cpp/releases/tags/b10850 HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
  timeout 10 cat <&3 >"$W/mock-server.response" || true
  exec 3<&-
  local status
  status=$(head -n 1 "$W/mock-server.response" | tr -d '\r')
  [ "$status" = "HTTP/1.1 200 OK" ] || fail "GET /repos/ggml-org/llama.cpp/releases/tags/b10850: '$status'"
  grep -q '"tag_name": *"b10850"' "$W/mock-server.response" || fail "the release's JSON has no tag_name b10850"
  decided "llmgw mock-server on 127.0.0.1:$port: GET /repos/ggml-org/llama.cpp/releases/tags/b10850: $status, $(grep -o '"browser_download_url"' "$W/mock-server.response" | wc -l) assets"
}

step_provision() {
  [ -x "$TESTS" ] || skip "this bundle has no bin/gpu-tests (a fixture): cargo test's tests/it/gpu_bundle.rs runs this step against it"
  local host=$W/host.json
  [ "$REHEARSE" = 1 ] && host=$BUNDLE/hosts/rehearsal.json
  [ -f "$host" ] || skip "no host description: the discover step did not write one"
  mkdir -p "$W/provision"
  LLMGW_BIN=$LLMGW LLMGW_GPU_BUNDLE=$BUNDLE LLMGW_GPU_HOST=$host LLMGW_GPU_OUT=$W/provision \
    gpu_tests provision_refuses_the_old_build_in_cudas_words_and_installs_the_next
}

# The machine's own libcuBLAS 13 (a CUDA toolkit's, or the nvidia-cublas
# wheel of its Python's torch), else the bundle's stub: the folder that holds
# it and libcublasLt.so.13 beside it.
cublas_dir() {
  local d
  d=$(find_lib libcublas.so.13)
  [ -f "$d" ] && { dirname "$d"; return; }
  for d in /usr/local/cuda/lib64 /usr/local/cuda-13*/lib64 /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -f "$d/libcublas.so.13" ] && { echo "$d"; return; }
  done
  if command -v python3 >/dev/null; then
    for d in $(timeout 20 python3 -c 'import site; print(" ".join(site.getsitepackages() + [site.getusersitepackages()]))' 2>/dev/null); do
      [ -f "$d/nvidia/cu13/lib/libcublas.so.13" ] && { echo "$d/nvidia/cu13/lib"; return; }
    done
  fi
  echo "$BUNDLE/llama/cublas-stub"
}
# cublas_only DIR: a folder of links to DIR's libcublas.so.13 and
# libcublasLt.so.13 alone, for LD_LIBRARY_PATH: the other libraries of a
# CUDA folder (its libcudart.so.13, of another minor version) must not come
# before the build's own.
cublas_only() {
  local to=$W/cublas
  mkdir -p "$to"
  for l in libcublas.so.13 libcublasLt.so.13; do ln -sf "$1/$l" "$to/$l"; done
  echo "$to"
}
export -f cublas_dir cublas_only

step_llama() {
  [ -d "$BUNDLE/llama" ] || skip "this bundle has no llama/ (made with --no-llama, or a fixture)"
  set -e
  local line
  line="llama/libggml-cuda.so $(sets "$BUNDLE/llama/libggml-cuda.so")"
  [ "$line" = "$(sed -n 1p "$BUNDLE/expected/llama.txt")" ] || fail "llmgw inspect: $line; the bundle says $(sed -n 1p "$BUNDLE/expected/llama.txt")"
  local floor have
  floor=$(sed -n 's/^floors GLIBC=\([^ ]*\) .*/\1/p' "$BUNDLE/expected/llama.txt")
  have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
  if [ -n "$floor" ] && [ "$floor" != - ] && [ -n "$have" ] && ! version_le "$floor" "$have"; then
    skip "the build needs glibc $floor (it was built on the bundle's machine), this machine has $have"
  fi
  floor=$(sed -n 's/^floors .*GLIBCXX=\([^ ]*\).*/\1/p' "$BUNDLE/expected/llama.txt")
  if [ -n "$floor" ] && [ "$floor" != - ]; then
    local cxx
    cxx=$(find_lib libstdc++.so.6)
    [ -f "$cxx" ] || skip "the build needs libstdc++.so.6 (GLIBCXX_$floor), which this machine lacks"
    have=$(grep -ao 'GLIBCXX_3\.4\.[0-9]*' "$cxx" | sed 's/GLIBCXX_//' | sort -V | tail -n 1)
    version_le "$floor" "$have" || skip "the build needs GLIBCXX_$floor, this machine's $cxx has GLIBCXX_$have"
  fi
  local cublas
  cublas=$(cublas_dir)
  echo "libcublas.so.13 from $cublas"
  [ -f "$cublas/libcublasLt.so.13" ] || fail "$cublas has libcublas.so.13 but no libcublasLt.so.13 beside it"
  LD_LIBRARY_PATH=$(cublas_only "$cublas")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export LD_LIBRARY_PATH
  mkdir -p "$W/llama"
  # The compute check's arguments (crates/llmgw-core/src/recipe/llama_cpp.rs, bench()).
  local args=(-ngl 99 -p 8 -n 8 -r 1 --no-warmup -o jsonl -v)
  if [ "$REHEARSE" = 1 ]; then
    local rc=0
    (cd "$BUNDLE/llama" && ./llama-bench -m ../model/tiny-llama.gguf -dev none "${args[@]}") >"$W/llama/cpu.jsonl" 2>"$W/llama/cpu.stderr" || rc=$?
    grep -q '"n_gen": 8' "$W/llama/cpu.jsonl" && [ "$rc" = 0 ] || fail "llama-bench -dev none exited $rc: $(grep -m 1 -iE 'error|failed' "$W/llama/cpu.stderr" || tail -n 1 "$W/llama/cpu.stderr")"
    decided "inspect: $line; llama-bench b11312 computes on the CPU here (-dev none: $(grep -o '"avg_ts": [0-9.]*' "$W/llama/cpu.jsonl" | tail -n 1)); libcublas.so.13 from $cublas"
    return 0
  fi
  local driver
  driver=$(head -n 1 "$W/nvidia-smi.csv" | cut -d, -f1 | tr -d ' ')
  version_le 580 "${driver%%.*}" || skip "driver $driver: the build's CUDA 13.5 runtime needs 580 (minor version compatibility)"
  # For the record: llama-bench itself, on CUDA0, with the check's arguments.
  (cd "$BUNDLE/llama" && timeout 120 ./llama-bench -m ../model/tiny-llama.gguf -dev CUDA0 "${args[@]}") \
    >"$W/llama/CUDA0.jsonl" 2>"$W/llama/CUDA0.stderr" || true
  LLMGW_GPU_LLAMA=$BUNDLE/llama LLMGW_GPU_HOST=$W/host.json gpu_tests the_real_llama_bench_computes_with_llmgws_gpu_check
  decided "$(sed -n 's/.*decided: //p' "$W/steps/the_real_llama_bench_computes_with_llmgws_gpu_check.gpu-tests.log" | tail -n 1); libcublas.so.13 from $cublas"
}

step_torch() {
  command -v python3 >/dev/null || skip "no python3 here: the Python GPU check is skipped"
  local why
  why=$(timeout 60 python3 -c 'import torch' 2>&1) ||
    skip "no torch here ($(python3 --version 2>&1): $(echo "${why:-import torch failed}" | tail -n 1)): the Python GPU check is skipped"
  mkdir -p "$W/torch"
  LLMGW_GPU_HOST=$W/host.json LLMGW_GPU_OUT=$W/torch gpu_tests the_python_gpu_check_computes_with_the_torch_installed_here
  decided "$(sed -n 's/.*decided: //p' "$W/steps/the_python_gpu_check_computes_with_the_torch_installed_here.gpu-tests.log" | tail -n 1) ($(python3 --version 2>&1), torch $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null))"
}

step_capture() {
  set -e
  "$LLMGW" discover --capture "$W/capture" --output "$W/capture-host.json" 2>"$W/capture.stderr" ||
    fail "llmgw discover --capture exited $?: $(grep -m 1 . "$W/capture.stderr")"
  "$LLMGW" discover --replay "$W/capture" --output "$W/replay-host.json" 2>"$W/replay.stderr" ||
    fail "llmgw discover --replay of the capture exited $?: $(grep -m 1 . "$W/replay.stderr")"
  cmp -s "$W/capture-host.json" "$W/replay-host.json" || fail "the capture replayed describes another machine than discover did"
  decided "$(find "$W/capture" -type f | wc -l) files in capture/ (gpu-check.tar.gz), replayed to the same host description: for tests/discover/, with a README row"
}

for f in bundle llmgw driver discover mig programs server provision llama torch capture; do export -f "step_$f"; done

# ------------------------------------------------------------ run them
passed=0 failed=0 skipped=0
STEPS_GPU="bundle:30 llmgw:60 driver:30 discover:60 mig:30 programs:90 server:30 provision:180 llama:180 torch:180 capture:60"
STEPS_REHEARSE="bundle:30 llmgw:60 programs:90 server:30 provision:180 llama:180 capture:60"
start=$(date +%s)
say "bundle $FROM; llmgw $LLMGW; writing to $out ($( [ "$REHEARSE" = 1 ] && echo "rehearsal: the steps that need no GPU" || echo "on this machine's GPUs"))"
for s in $STEPS_GPU; do
  name=${s%%:*} limit=${s##*:}
  if [ "$REHEARSE" = 1 ] && [[ " $STEPS_REHEARSE " != *" $s "* ]]; then
    say "$name: skipped: a rehearsal (it needs a GPU)"; skipped=$((skipped + 1)); continue
  fi
  t0=$(date +%s)
  log=$W/steps/$name.log
  rc=0
  timeout -k 5 "$limit" bash -o pipefail -c "step_$name" >"$log" 2>&1 || rc=$?
  t=$(($(date +%s) - t0))
  line=$(grep '^decided: ' "$log" | tail -n 1 | sed 's/^decided: //')
  case "$rc" in
    0) say "$name: passed: ${line:-done} ($t s)"; passed=$((passed + 1)) ;;
    3) say "$name: skipped: $(grep '^skip: ' "$log" | tail -n 1 | sed 's/^skip: //')"; skipped=$((skipped + 1)) ;;
    124|137) say "$name: failed: no answer within its limit of $limit s (steps/$name.log: $(grep -v '^$' "$log" | tail -n 1))"; failed=$((failed + 1)) ;;
    *) say "$name: failed: ${line:-exit $rc: $(grep -v '^$' "$log" | tail -n 1)} ($t s)"; failed=$((failed + 1)) ;;
  esac
done
tar -C "$WORK" -czf "$out/gpu-check.tar.gz" "$WORK_NAME"
say "$passed passed, $failed failed, $skipped skipped in $(($(date +%s) - start)) s; $out/gpu-check.log, $out/gpu-check.tar.gz (every step's log and output)"
# The log whole before this ends: tee's last lines written.
exec 1>&- 2>&-
wait "$tee_pid" 2>/dev/null || true
[ "$failed" = 0 ]
