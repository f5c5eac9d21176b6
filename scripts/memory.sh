#!/usr/bin/env bash
# Peak resident memory of `spantree infer` while streaming 10^4 and 10^6
# lines (and any other counts given): memory must not grow with the input.
#
#   scripts/memory.sh                 # 10^4 and 10^6 lines
#   scripts/memory.sh 10000 100000    # other counts
#
# Each line is a random 8-word sentence (scores, 4 labels on every other
# line); the quantities are log_z, marginals and entropy on 2 threads. The
# binary is $SPANTREE, or the debug build of the workspace (built if
# missing, in $CARGO_TARGET_DIR or target/). Needs GNU time (/usr/bin/time)
# and python3. Prints one row per count: lines, seconds, peak RSS in MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
counts=("${@:-10000}")
[ $# -gt 0 ] || counts=(10000 1000000)
bin=${SPANTREE:-${CARGO_TARGET_DIR:-target}/debug/spantree}
[ -x "$bin" ] || cargo build --quiet -p spantree-cli
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A block of 1000 distinct lines, repeated: writing 10^6 lines stays fast.
python3 - "$work/block.jsonl" <<'PY'
import json, random, sys
random.seed(7)
with open(sys.argv[1], "w") as f:
    for i in range(1000):
        n = 8
        if i % 2:
            s = [[[round(random.gauss(0, 2), 3) for _ in range(4)] for _ in range(n + 1)] for _ in range(n + 1)]
        else:
            s = [[round(random.gauss(0, 2), 3) for _ in range(n + 1)] for _ in range(n + 1)]
        f.write(json.dumps({"id": i, "scores": s}, separators=(",", ":")) + "\n")
PY

printf '%10s %10s %14s\n' lines seconds peak_rss_MiB
for count in "${counts[@]}"; do
  start=$(date +%s.%N)
  # Input and output stream through pipes: nothing of size 10^6 lines on disk.
  out=$({
    for ((k = 0; k < count / 1000; k++)); do cat "$work/block.jsonl"; done
    head -n $((count % 1000)) "$work/block.jsonl"
  } | /usr/bin/time -f '%M' -o "$work/rss" "$bin" infer --threads 2 \
    --quantities log_z,marginals,entropy | wc -l)
  end=$(date +%s.%N)
  [ "$out" -eq "$count" ] || { echo "wrote $out records for $count lines" >&2; exit 1; }
  awk -v c="$count" -v s="$start" -v e="$end" -v k="$(cat "$work/rss")" \
    'BEGIN { printf "%10d %10.1f %14.1f\n", c, e - s, k / 1024 }'
done
