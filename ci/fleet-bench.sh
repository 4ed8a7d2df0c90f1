#!/usr/bin/env bash
# The cost curve of a fleet what-if: fleets of 69, 690, 6,900 and 69,000
# host files made by copying matrix/hosts/ with new names and, for one host
# in four, one random field changed (seeded: a disk size, gcc installed, or
# another driver), so that machines repeat but groups are not all trivial.
# For each it runs
#   llmgw matrix --hosts FLEET --set nvidia.driver=580.95.05 --diff --format json
# (the summary, for every size alike) and prints wall time, CPU time (user + system),
# peak memory (GNU time's maximum resident set size), the distinct machine
# simulations, and the ratio of each to the 69-host run.
# Then, on the 690-host fleet, it checks that grouping changes nothing:
# `--ungrouped` (every host simulated on its own) gives the same bytes, for
# the cells in every format and for the summary.
#
# Usage: ci/fleet-bench.sh [SIZES…]   (from the repository root; default 69 690 6900 69000)
# Environment: FLEET_SEED (default 19), FLEET_RUNS (runs per size, the median
# shown; default 3), FLEET_DIR (default a temporary directory, removed).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v /usr/bin/time >/dev/null || { apt-get install -y time >/dev/null 2>&1 || true; }
cargo build --release --quiet
llmgw=$PWD/target/release/llmgw
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(69 690 6900 69000)
seed=${FLEET_SEED:-19}
runs=${FLEET_RUNS:-3}
work=${FLEET_DIR:-$(mktemp -d)}
[ -n "${FLEET_DIR:-}" ] || trap 'rm -rf "$work"' EXIT

# make_fleet N DIR: N host files in DIR, copies of matrix/hosts/*.json.
make_fleet() {
  python3 - "$1" "$2" "$seed" <<'PY'
import json, os, random, sys
n, out, seed = int(sys.argv[1]), sys.argv[2], int(sys.argv[3])
os.makedirs(out, exist_ok=True)
base = sorted(f for f in os.listdir("matrix/hosts") if f.endswith(".json"))
hosts = [(f[:-5], json.load(open(os.path.join("matrix/hosts", f)))) for f in base]
rng = random.Random(seed)
for i in range(n):
    stem, h = hosts[i % len(hosts)]
    copy = i // len(hosts)
    h = json.loads(json.dumps(h))
    h["name"] = f"{h['name']} node{copy:05d}"
    if rng.random() < 0.25:
        change = rng.choice(["disk", "gcc", "driver"])
        if change == "disk":
            h["disk_free_gb"] = rng.choice([40, 1000])
        elif change == "gcc":
            installed = set(h["packages"]["installed"]) | {"gcc"}
            h["packages"]["installed"] = sorted(installed)
        elif h.get("nvidia"):
            h["nvidia"]["driver"] = rng.choice(["570.172.08", "580.95.05"])
    with open(os.path.join(out, f"{stem}-n{copy:05d}.json"), "w") as f:
        json.dump(h, f, indent=2)
PY
}

what=(matrix --summary --set nvidia.driver=580.95.05 --diff --format json)
printf '%-8s %-9s %-8s %-8s %-8s %-9s %-8s %-8s\n' files machines "wall s" "cpu s" "peak MB" "wall x" "cpu x" "mem x"
base_wall="" base_cpu="" base_mem=""
for n in "${sizes[@]}"; do
  dir=$work/fleet-$n
  [ -d "$dir" ] || make_fleet "$n" "$dir"
  # Warm the page cache, as a fleet's files are after a copy.
  cat "$dir"/*.json > /dev/null 2>&1 || find "$dir" -name '*.json' -exec cat {} + > /dev/null
  # The median of $runs runs, each figure on its own.
  for r in $(seq "$runs"); do
    /usr/bin/time -f '%e %U %S %M' -o "$work/time-$r" "$llmgw" "${what[@]}" --hosts "$dir" > "$work/out-$n.json" 2> "$work/err-$n"
  done
  median() { sort -g | sed -n "$(( (runs + 1) / 2 ))p"; }
  wall=$(cat "$work"/time-* | awk '{print $1}' | median)
  cpu=$(cat "$work"/time-* | awk '{print $2 + $3}' | median)
  mem=$(cat "$work"/time-* | awk '{print $4 / 1024}' | median)
  rm -f "$work"/time-*
  machines=$(grep -o 'as [0-9]* distinct' "$work/err-$n" | grep -o '[0-9]*' || echo "-")
  [ -n "$base_wall" ] || { base_wall=$wall; base_cpu=$cpu; base_mem=$mem; }
  printf '%-8s %-9s %-8.2f %-8.2f %-8.0f %-9.1f %-8.1f %-8.1f\n' "$n" "$machines" "$wall" "$cpu" "$mem" \
    "$(echo "$wall / $base_wall" | bc -l)" "$(echo "$cpu / $base_cpu" | bc -l)" "$(echo "$mem / $base_mem" | bc -l)"
done

# Grouped and ungrouped, byte for byte, on 690 hosts (or the second size given).
n=${sizes[1]:-690}
dir=$work/fleet-$n
[ -d "$dir" ] || make_fleet "$n" "$dir"
same=0
for args in "--cells --format json" "--cells --format table" "--cells --format markdown" "--cells --format junit" \
            "--summary --format json --set nvidia.driver=580.95.05 --diff" "--cells --set nvidia.driver=580.95.05 --diff"; do
  # shellcheck disable=SC2086
  "$llmgw" matrix --hosts "$dir" $args > "$work/grouped" 2>/dev/null || true
  # shellcheck disable=SC2086
  "$llmgw" matrix --hosts "$dir" $args --ungrouped > "$work/ungrouped" 2>/dev/null || true
  if cmp -s "$work/grouped" "$work/ungrouped"; then
    echo "grouped = ungrouped on $n hosts: $args ($(wc -c < "$work/grouped") bytes)"
  else
    echo "DIFFERENT on $n hosts: $args"; same=1
  fi
done
exit $same
