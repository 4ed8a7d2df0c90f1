#!/usr/bin/env bash
# Times the whole hardware matrix in a release build and prints hosts per
# second, cells per second and peak memory (GNU time's maximum resident set
# size; one process runs every simulation, so this bounds each one's too).
# Usage: ci/matrix-speed.sh   (from the repository root; builds what it needs)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { apt-get install -y time >/dev/null 2>&1 || true; }
cargo build --release --quiet
hosts=$(ls matrix/hosts/*.json | wc -l)
runs=5
best=""
for _ in $(seq $runs); do
  start=$(date +%s.%N)
  ./target/release/llmgw matrix --format json > /dev/null
  end=$(date +%s.%N)
  t=$(echo "$end - $start" | bc -l)
  if [ -z "$best" ] || [ "$(echo "$t < $best" | bc -l)" = 1 ]; then best=$t; fi
done
cells=$(./target/release/llmgw matrix --format json | grep -c '"host_name"')
peak_kb=$(/usr/bin/time -f '%M' ./target/release/llmgw matrix --format json 2>&1 >/dev/null | tail -1)
printf 'matrix: %d hosts, %d cells, best of %d: %.2f s wall (%.0f hosts/s, %.0f cells/s); peak memory %.1f MB\n' \
  "$hosts" "$cells" "$runs" "$best" "$(echo "$hosts / $best" | bc -l)" "$(echo "$cells / $best" | bc -l)" "$(echo "$peak_kb / 1024" | bc -l)"
