#!/usr/bin/env bash
# Follows README.md's "Install on a node" literally, as root, in a fresh
# directory, against a mirror made the way an offline site makes it:
# `bundle create --llmgw-dir` of what ci/release.sh wrote (the engines from
# `llmgw mock-server`, the fake publisher), `bundle import` into a mirror,
# the mirror served by `python3 -m http.server` on loopback. README's block
# runs unchanged but for its BASE= line (the mirror's URL) and, per run, its
# ARCHIVE= line (each x86_64 archive of the release: the gnu one, then the
# static one). It runs in a mount namespace with /etc and /usr/local
# overlaid, so nothing is left on this machine. README.md's "Install on a
# node" shows what it printed.
#
# Usage: ci/install-check.sh [DIST]    (DIST: ci/release.sh's --out, default dist/)
# Exit: 0 every command of the block ran; 1 one failed (the first that did,
# said); 2 bad arguments or no release in DIST.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
dist=$(cd "${1:-dist}" 2>/dev/null && pwd) || { echo "install-check: no directory ${1:-dist}" >&2; exit 2; }
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
gnu=llmgw-$version-x86_64-unknown-linux-gnu.tar.gz
musl=llmgw-$version-x86_64-unknown-linux-musl.tar.gz
for a in "$gnu" "$musl"; do
  [ -f "$dist/$a" ] || { echo "install-check: no $a in $dist (run ci/release.sh $version)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "install-check: README's commands are run as root" >&2; exit 2; }

work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() {
  for _ in $(seq 100); do
    python3 -c "import socket,sys; socket.create_connection(('127.0.0.1', $1), 1)" 2>/dev/null && return 0
    sleep 0.1
  done
  echo "install-check: nothing listens on 127.0.0.1:$1" >&2
  exit 1
}

# The site's mirror, made with the release's own x86_64 llmgw.
mkdir "$work/tool"
tar -xzf "$dist/$gnu" -C "$work/tool"
llmgw=$work/tool/${gnu%.tar.gz}/llmgw
pub=$(free_port)
"$llmgw" mock-server --port "$pub" >/dev/null 2>&1 &
pids+=($!)
wait_port "$pub"
echo "\$ llmgw bundle create --want uv@0.12.20 --arch amd64 --llmgw-dir dist/ --out bundle.tar"
"$llmgw" bundle create --github-api "http://127.0.0.1:$pub" --want uv@0.12.20 --arch amd64 \
  --llmgw-dir "$dist" --out "$work/bundle.tar" 2>/dev/null | tee "$work/created"
sha=$(sed -n 's/^manifest sha256: //p' "$work/created")
echo "\$ llmgw bundle import bundle.tar --manifest-sha256 $sha --mirror mirror/"
"$llmgw" bundle import "$work/bundle.tar" --manifest-sha256 "$sha" --mirror "$work/mirror" 2>/dev/null
web=$(free_port)
python3 -m http.server --bind 127.0.0.1 --directory "$work/mirror" "$web" >/dev/null 2>&1 &
pids+=($!)
wait_port "$web"

# README's block, as it is there.
block=$(sed -n '/^## Install on a node/,/^## /p' README.md | sed -n '/^```sh$/,/^```$/p' | sed '1d;$d')
grep -q '^BASE=' <<<"$block" && grep -q '^ARCHIVE=' <<<"$block" ||
  { echo "install-check: README's \"Install on a node\" has no block with BASE= and ARCHIVE=" >&2; exit 1; }
status=0
for archive in "$gnu" "$musl"; do
  node=$work/node-${archive%.tar.gz}
  o=$work/overlay-$archive
  mounts=""
  for d in etc usr/local var opt; do
    mkdir -p "$o/$d/upper" "$o/$d/work"
    mounts="$mounts mount -t overlay overlay -o lowerdir=/$d,upperdir=$o/$d/upper,workdir=$o/$d/work /$d || exit 9;"
  done
  mkdir -p "$node"
  cp matrix/wants.json "$node/wants.json"   # the operator's wants
  script=$(sed -e "s|^BASE=.*|BASE=http://127.0.0.1:$web/llmgw/$version|" \
    -e "s|^ARCHIVE=.*|ARCHIVE=$archive|" <<<"$block")
  after=""
  if [ ! -d /run/systemd/system ]; then
    # No systemd here (a container): its lines are said, not run; the unit
    # is checked with systemd-analyze instead, and the agent it starts runs
    # one pass of its ExecStart, simulated on a V100 host (--host).
    script=$(sed -e 's|^systemctl \(.*\)|echo "not run, systemd is not running here: systemctl \1"|' <<<"$script")
    exec_start=$(sed -n '/^ExecStart=/,/[^\\]$/p' deploy/llmgw-agent.service | sed -e 's/^ExecStart=//' -e 's/\\$//' | tr -s ' \n' ' ')
    after="systemd-analyze verify /etc/systemd/system/llmgw-agent.service
      mkdir -p /var/lib/llmgw   # the unit's StateDirectory=llmgw, which systemd makes
      $exec_start --once --host $repo/matrix/hosts/v100.json --format json | python3 -c 'import json,sys; r=json.load(sys.stdin); print(\"agent pass:\", {s: sum(e[\"state\"] == s for e in r[\"engines\"]) for s in sorted({e[\"state\"] for e in r[\"engines\"]})})'"
  fi
  echo
  echo "== README's block, ARCHIVE=$archive, in a fresh directory"
  set +e
  unshare -m bash -c "
    $mounts
    cd '$node'
    set -e -x
    $script
    $after
  " 2>&1 | sed -e "s|$work|\$TMP|g"
  code=${PIPESTATUS[0]}
  set -e
  echo "== exit $code"
  if [ "$code" != 0 ]; then status=1; fi
  # What the block left, as systemd would find it.
  echo "what it wrote outside its directory:"
  (cd "$o" && find etc/upper usr/local/upper var/upper opt/upper -type f 2>/dev/null |
    sed -e 's|^\([a-z/]*\)/upper/|/\1/|' | sort | awk '
      /^\/opt\/llmgw\/engines\// { n++; next }
      { print "  " $0 }
      END { if (n) print "  /opt/llmgw/engines/: " n " files, the simulated pass'"'"'s installs" }')
  rm -rf "$o" "$node"
done
exit $status
