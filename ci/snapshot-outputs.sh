#!/usr/bin/env bash
# Saves every output a user sees into a directory, so that a refactor can be
# checked byte for byte: run it before (`ci/snapshot-outputs.sh before/`),
# change the code, run it again (`ci/snapshot-outputs.sh after/`), then
# `diff -r before/ after/`. Each command's stdout, stderr and exit code go to
# one file each, named after the command.
#
# What it runs: `matrix --format json` and the table; `simulate` (text and
# JSON) and `plan` (JSON) for every host of matrix/hosts/; `simulate --format
# json` for every host under every scenario of mocks/scenarios/; README's
# examples (builds, --set --diff, the agent in simulation, discover --replay
# of tests/discover/*); `--help` of every command. About two minutes with a
# release build.
#
# Usage: ci/snapshot-outputs.sh OUT_DIR   (LLMGW_BIN: the binary; default
# target/release/llmgw, built if missing)
set -euo pipefail
cd "$(dirname "$0")/.."

if [ $# -ne 1 ] || [ "${1:-}" = "--help" ]; then
  sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
  [ "${1:-}" = "--help" ] && exit 0 || exit 2
fi
out=$1
bin=${LLMGW_BIN:-target/release/llmgw}
if [ ! -x "$bin" ]; then
  cargo build --release --locked --quiet
fi
mkdir -p "$out"

# run NAME ARGS...: the command's stdout, stderr (log lines without their
# timestamps) and exit code into $out/NAME.*
run() {
  local name=$1
  shift
  set +e
  "$bin" "$@" >"$out/$name.out" 2>"$out/$name.err.raw"
  echo $? >"$out/$name.code"
  set -e
  sed -E 's/^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z +//' "$out/$name.err.raw" >"$out/$name.err"
  rm "$out/$name.err.raw"
}

run matrix-json matrix --format json
run matrix-table matrix
run matrix-markdown matrix --format markdown
run matrix-scenario matrix --scenario mocks/scenarios/llama-cuda-without-ptx.json
run matrix-diff matrix --set nvidia.driver=580.95.05 --diff

for h in matrix/hosts/*.json; do
  id=$(basename "$h" .json)
  run "simulate-$id-json" simulate --host "$h" --format json
  run "simulate-$id-text" simulate --host "$h"
  run "plan-$id-json" plan --host "$h" --format json
  for s in mocks/scenarios/*.json; do
    run "scenario-$(basename "$s" .json)-$id" simulate --host "$h" --scenario "$s" --format json
  done
done

run readme-plan plan --host matrix/hosts/v100.json --want llama.cpp@b10850
run readme-diff simulate --host matrix/hosts/v100.json --set nvidia.driver=580.95.05 --diff
run readme-builds builds --engine llama.cpp --version b10850 --arch arm64
run readme-builds-json builds --engine llama.cpp --version b10850 --arch amd64 --format json
run readme-agent-once agent --wants matrix/wants.json --host matrix/hosts/v100.json --once
run readme-agent-once-json agent --wants matrix/wants.json --host matrix/hosts/v100.json --once --format json
for d in tests/discover/*/; do
  run "discover-replay-$(basename "$d")" discover --replay "$d"
done
run help help
for c in simulate plan matrix provision mock-server discover agent builds bundle; do
  run "help-$c" "$c" --help
done
run bad-want simulate --host matrix/hosts/v100.json --want nope@1
run bad-host simulate --host README.md
echo "saved $(ls "$out" | wc -l) files into $out"
