#!/usr/bin/env bash
# Side by side, on the same generated .tar.gz served on loopback by the same
# static server: `llmgw provision` installing it from an offline mirror
# against the two shell pipelines an operator would write,
#   A: curl -sL URL -o f && sha256sum f && tar xzf f
#   B: curl -sL URL | tee >(sha256sum >&2) | tar xz
# (B's `>&2`: without it the digest line is written into tar's input, and
# gzip refuses it as trailing garbage)
# each run RUNS times (median wall time), with the peak memory (maximum
# resident set size) of each from `/usr/bin/time -v`; then sha256 alone
# (`llmgw`'s hasher, through its hidden `bench-sha256` command, against
# `sha256sum` and `openssl dgst -sha256`) and gunzip+untar alone (`llmgw`'s unpacker, `bench-unpack`,
# against `tar xzf`), on the same file read from the page cache.
#
# The archive looks like a CUDA build: a real `llama-b10850/llama-server`
# built here with `cc` (answers `--version` and `--list-devices`, and as
# `llama-bench` beside it the compute check's run), large
# incompressible libraries (random bytes), base64 text (compresses to about
# 3/4) and repetitive text, gzip -6 as the publisher's CI writes it; named as
# llama.cpp's CPU asset for x64 and placed in an offline mirror
# (`<mirror>/llama.cpp/b10850/<asset>`).
#
# Server: nginx from apt when it can be installed (sendfile, the fastest on
# loopback), else `llmgw mock-server --mirror` (wiremock, the body held in
# memory); the same server for every contender, printed in the output.
#
# Usage: ci/bench-vs-shell.sh [--size-mb N] [--runs N] [--server nginx|mock]
#   (from anywhere; installs curl, time, gcc, bc, openssl and nginx with
#   apt-get when missing, and Rust with rustup when cargo is missing; builds
#   llmgw in release, or takes LLMGW_BIN; everything it makes is under one
#   temporary directory removed on exit, nginx stopped)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

size_mb=512
runs=5
server=auto
while [ $# -gt 0 ]; do
  case "$1" in
    --size-mb) size_mb=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --server) server=$2; shift 2 ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done

# --- what it needs -----------------------------------------------------------
need=()
command -v curl >/dev/null || need+=(curl)
[ -x /usr/bin/time ] || need+=(time)
command -v cc >/dev/null || need+=(gcc libc6-dev)
command -v bc >/dev/null || need+=(bc)
command -v openssl >/dev/null || need+=(openssl)
if [ "$server" != mock ] && ! command -v nginx >/dev/null && ! [ -x /usr/sbin/nginx ]; then need+=(nginx-light); fi
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
  echo "installing ${need[*]} with apt-get" >&2
  $sudo apt-get update -qq >/dev/null 2>&1 || true
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null 2>&1 ||
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
      "${need[@]/nginx-light/nginx}" >/dev/null 2>&1 || echo "apt-get could not install all of: ${need[*]}" >&2
fi
nginx_bin=$(command -v nginx || { [ -x /usr/sbin/nginx ] && echo /usr/sbin/nginx; } || true)
if [ "$server" = auto ]; then if [ -n "$nginx_bin" ]; then server=nginx; else server=mock; fi; fi

if [ -n "${LLMGW_BIN:-}" ]; then
  llmgw=$LLMGW_BIN
else
  if ! command -v cargo >/dev/null; then
    [ -x "$HOME/.cargo/bin/cargo" ] ||
      curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal >/dev/null
    export PATH=$HOME/.cargo/bin:$PATH
  fi
  cargo build --release --quiet
  llmgw=${CARGO_TARGET_DIR:-$repo/target}/release/llmgw
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/llmgw-bench.XXXXXX")
chmod 755 "$work" # nginx's worker runs as another user and must read the mirror
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  if [ -f "$work/nginx.pid" ]; then kill "$(cat "$work/nginx.pid")" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# --- the archive ---------------------------------------------------------------
asset=llama-b10850-bin-ubuntu-x64.tar.gz
mirror=$work/mirror
mkdir -p "$mirror/llama.cpp/b10850" "$work/src/llama-b10850"
cat > "$work/server.c" <<'EOF'
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--version") == 0) { fprintf(stderr, "version: 10850 (fe14399)\nbuilt with cc\n"); return 0; }
    if (argc > 1 && strcmp(argv[1], "--list-devices") == 0) { printf("Available devices:\n"); return 0; }
    /* As llama-bench: llmgw's compute check runs it with -m MODEL -dev none ... -o jsonl. */
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-m") == 0) { printf("{\"backends\": \"CPU\", \"n_prompt\": 0, \"n_gen\": 8, \"avg_ts\": 9720.9}\n"); return 0; }
    return 1;
}
EOF
cc "$work/server.c" -o "$work/src/llama-b10850/llama-server"
cp "$work/src/llama-b10850/llama-server" "$work/src/llama-b10850/llama-bench"
echo 'int llmgw_probe(void) { return 0; }' > "$work/lib.c"
cc -shared -fPIC "$work/lib.c" -o "$work/src/llama-b10850/libggml-cpu-x64.so"
# Shares of the compressed size: 3/4 random (as CUDA kernels' fat binaries
# are, to gzip), 1/4 base64 text (about 3/4 of it after gzip), plus
# repetitive text that compresses to almost nothing.
rand_mb=$((size_mb * 3 / 4))
text_mb=$((size_mb - rand_mb))
text_mb=$((text_mb * 4 / 3))
set +o pipefail # head closes the pipes of openssl, base64 and yes early, on purpose
openssl enc -aes-128-ctr -pass pass:llmgw -pbkdf2 -nosalt < /dev/zero 2>/dev/null | head -c "$(((rand_mb + 1) << 20))" > "$work/random.bin"
head -c "$(((rand_mb / 2) << 20))" "$work/random.bin" > "$work/src/llama-b10850/libggml-cuda.so"
tail -c "$(((rand_mb - rand_mb / 2) << 20))" "$work/random.bin" > "$work/src/llama-b10850/libcublasLt.so.13"
head -c "$(((text_mb * 3 / 4) << 20))" "$work/random.bin" | base64 -w 76 | head -c "$((text_mb << 20))" \
  > "$work/src/llama-b10850/libcudart.so.13.txt"
rm "$work/random.bin"
yes 'llama.cpp b10850: repetitive symbol tables and licence text, as shipped' | head -c $(((size_mb / 8) << 20)) \
  > "$work/src/llama-b10850/LICENSES.txt"
set -o pipefail
for i in $(seq 1 40); do echo "small file $i" > "$work/src/llama-b10850/small-$i.txt"; done
tar -C "$work/src" -cf - llama-b10850 | gzip -6 > "$mirror/llama.cpp/b10850/$asset"
rm -rf "$work/src"
file=$mirror/llama.cpp/b10850/$asset
bytes=$(stat -c %s "$file")
sha=$(sha256sum "$file" | cut -d' ' -f1)
printf '{"%s": "%s"}\n' "$asset" "$sha" > "$work/sums.json"
unpacked=$(gzip -dc "$file" | wc -c)

# --- the server ----------------------------------------------------------------
port=$((20000 + RANDOM % 20000))
if [ "$server" = nginx ]; then
  mkdir -p "$work/nginx/tmp"
  cat > "$work/nginx.conf" <<EOF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx/error.log;
daemon on;
events { worker_connections 64; }
http {
  access_log off;
  sendfile on;
  tcp_nopush on;
  client_body_temp_path $work/nginx/tmp;
  proxy_temp_path $work/nginx/tmp;
  fastcgi_temp_path $work/nginx/tmp;
  uwsgi_temp_path $work/nginx/tmp;
  scgi_temp_path $work/nginx/tmp;
  server {
    listen 127.0.0.1:$port;
    location /mirror/ { alias $mirror/; }
  }
}
EOF
  "$nginx_bin" -c "$work/nginx.conf" -p "$work/nginx" -e "$work/nginx/error.log"
  base=http://127.0.0.1:$port/mirror
  server_desc="nginx $("$nginx_bin" -v 2>&1 | sed 's/.*nginx\///') (sendfile)"
else
  "$llmgw" mock-server --port "$port" --mirror "$mirror" > "$work/mock.log" 2>&1 &
  pids+=($!)
  base=http://127.0.0.1:$port/mirror
  server_desc="llmgw mock-server --mirror (wiremock, body in memory)"
fi
url=$base/llama.cpp/b10850/$asset
for _ in $(seq 100); do curl -sf -o /dev/null -r 0-0 "$url" 2>/dev/null && break; sleep 0.1; done
# Warm the page cache and the server.
curl -sf -o /dev/null "$url" || { echo "the server does not answer $url" >&2; cat "$work"/nginx/error.log "$work"/mock.log 2>/dev/null >&2; exit 1; }

# --- timing ------------------------------------------------------------------------
# time_v LABEL COMMAND...: runs it under /usr/bin/time -v in a fresh directory,
# appends "wall_s maxrss_kb" to $work/LABEL.times.
time_v() {
  local label=$1; shift
  local dir=$work/run
  rm -rf "$dir"; mkdir -p "$dir"
  sync
  (cd "$dir" && /usr/bin/time -v -o "$work/time.out" "$@" > "$work/cmd.out" 2>&1) ||
    { echo "$label failed:" >&2; cat "$work/cmd.out" "$work/time.out" >&2; exit 1; }
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n=split($2, t, ":"); s=0; for (i=1;i<=n;i++) s=s*60+t[i]; print s}' "$work/time.out")
  rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$work/time.out")
  echo "$wall $rss" >> "$work/$label.times"
  rm -rf "$dir"
}
median() { sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
med_wall() { cut -d' ' -f1 "$work/$1.times" | median; }
max_rss_mb() { cut -d' ' -f2 "$work/$1.times" | sort -n | tail -1 | awk '{printf "%.1f", $1 / 1024}'; }

# Once, untimed: the install must really happen (exit 0 is also "not here").
"$llmgw" provision --want llama.cpp@b10850:cpu --offline-base "$base" --offline-sha256 "$work/sums.json" \
  --engines-dir "$work/check" --check-timeout 30 --format json > "$work/check.json" 2>&1 || true
binary=$(sed -n 's/.*"binary": "\(.*\)".*/\1/p' "$work/check.json" | head -1)
grep -q '"state": "ready"' "$work/check.json" && [ -x "$binary" ] ||
  { echo "llmgw provision did not install the build:" >&2; cat "$work/check.json" >&2; exit 1; }
rm -rf "$work/check"

echo "archive: $asset, $bytes bytes gzip'd ($((bytes >> 20)) MiB), $unpacked bytes unpacked; served by $server_desc at $url"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); $runs runs each, interleaved; median wall"

for r in $(seq "$runs"); do
  time_v curl_only curl -sfL "$url" -o /dev/null
  time_v llmgw "$llmgw" provision --want llama.cpp@b10850:cpu --offline-base "$base" \
    --offline-sha256 "$work/sums.json" --engines-dir "$work/run/engines" --check-timeout 30
  time_v shell_a bash -c "curl -sfL '$url' -o f && sha256sum f && tar xzf f"
  time_v shell_b bash -c "curl -sfL '$url' | tee >(sha256sum >&2) | tar xz"
  time_v sha256sum sha256sum "$file"
  time_v llmgw_sha256 "$llmgw" bench-sha256 "$file"
  time_v openssl_sha256 openssl dgst -sha256 "$file"
  time_v tar_xzf tar xzf "$file"
  time_v llmgw_unpack "$llmgw" bench-unpack "$file" unpacked
  echo "  run $r of $runs done" >&2
done

ratio() { echo "scale=2; $1 / $2" | bc -l | sed 's/^\./0./'; }
row() { printf '%-62s %8.2f s %9s MB  %s\n' "$1" "$(med_wall "$2")" "$(max_rss_mb "$2")" "${3:-}"; }
best_shell=$(printf '%s\n%s\n' "$(med_wall shell_a)" "$(med_wall shell_b)" | sort -n | head -1)
echo
printf '%-62s %10s %12s  %s\n' "what" "wall" "peak RSS" "ratio"
row "curl -sL URL -o /dev/null (the server alone)" curl_only
row "llmgw provision --want llama.cpp@b10850:cpu (offline)" llmgw \
  "$(ratio "$(med_wall llmgw)" "$best_shell")x the best shell pipeline (target <= 0.8)"
row "A: curl -sL URL -o f && sha256sum f && tar xzf f" shell_a
row "B: curl -sL URL | tee >(sha256sum >&2) | tar xz" shell_b
row "sha256sum FILE" sha256sum
row "llmgw bench-sha256 FILE (its hasher, 256 KiB reads)" llmgw_sha256 \
  "$(ratio "$(med_wall llmgw_sha256)" "$(med_wall sha256sum)")x sha256sum (target <= 1.10)"
row "openssl dgst -sha256 FILE (OpenSSL's SHA-NI/ARMv8 code)" openssl_sha256 \
  "llmgw $(ratio "$(med_wall llmgw_sha256)" "$(med_wall openssl_sha256)")x openssl"
row "tar xzf FILE" tar_xzf
row "llmgw bench-unpack FILE DIR (its unpacker, hashing each file)" llmgw_unpack \
  "$(ratio "$(med_wall llmgw_unpack)" "$(med_wall tar_xzf)")x tar xzf (target <= 1.00)"
echo
echo "peak RSS of a shell pipeline is its largest single process (GNU time reports the children's maximum, not their sum)"
