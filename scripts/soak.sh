#!/usr/bin/env bash
# Soak run of `spantree infer`: for a fixed time (default 120 s), an
# endless seeded stream of good and adversarial lines (deep nesting, huge
# and non-finite numbers, invalid UTF-8, lines beyond --max-line-bytes,
# sentences beyond --max-words, truncated JSON, random bytes, blank lines)
# is piped into the command on 2 threads. Then it checks
#   1. one output line per non-blank input line;
#   2. every record equals the one of a 1-thread run on the same input
#      (the good lines' results included);
#   3. resident memory stayed flat: the peak of the second half of the run
#      is at most 10% + 8 MiB above the peak of the first half.
#
#   scripts/soak.sh [SECONDS]
#
# The binary is $SPANTREE, or the workspace's debug build (built if missing).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-120}
bin=${SPANTREE:-${CARGO_TARGET_DIR:-target}/debug/spantree}
[ -x "$bin" ] || cargo build --quiet -p spantree-cli
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
opts=(infer --quantities log_z,marginals,entropy,best_tree --max-line-bytes 1000000 --max-words 60)

cat >"$work/gen.py" <<'PY'
import json, random, sys
rng = random.Random(11)
out = sys.stdout.buffer
def scores(n, labels=0):
    cell = (lambda: [round(rng.gauss(0, 3), 4) for _ in range(labels)]) if labels else (lambda: round(rng.gauss(0, 3), 4))
    return [[cell() for _ in range(n + 1)] for _ in range(n + 1)]
def good(i):
    n = rng.randint(1, 30)
    return json.dumps({"id": i, "scores": scores(n, rng.choice([0, 0, 3]))}).encode()
def bad(i):
    k = rng.randrange(12)
    if k == 0: return b'{"id":%d,"scores":' % i + b"[" * 50000 + b"]" * 50000 + b"}"
    if k == 1: return b'{"id":%d,"scores":[[0,1e308,1e308],[0,0,1e308],[0,1e308,0]]}' % i
    if k == 2: return b'{"id":%d,"scores":[[0,NaN,Infinity],[0,-Infinity,1],[0,1,0]]}' % i
    if k == 3: return b'{"id":"\xff\xfe","scores":[[0,1],[0,0]]}'
    if k == 4: return json.dumps({"id": i, "pad": "x" * 1_200_000, "scores": [[0, 1], [0, 0]]}).encode()
    if k == 5: return json.dumps({"id": i, "scores": scores(70)}).encode()
    if k == 6: return good(i)[: rng.randint(1, 200)]
    if k == 7: return bytes(rng.randrange(256) for _ in range(rng.randint(1, 300))).replace(b"\n", b" ")
    if k == 8: return b"   "
    if k == 9: return json.dumps({"id": i, "scores": [[0, [1, 2]], [0, [1]]]}).encode()
    if k == 10: return json.dumps({"id": i, "weights": [[0, "1/3"], [0, -1]]}).encode()
    return json.dumps({"id": i, "scores": [[0] * 5] * 4}).encode()
i = 0
try:
    while True:
        out.write((good(i) if rng.random() < 0.7 else bad(i)) + b"\n")
        i += 1
except BrokenPipeError:
    pass
PY

# The stream goes to the command and, through tee, to a file for the checks
# and the 1-thread run (the command sees exactly the bytes of the file).
mkfifo "$work/stream"
python3 "$work/gen.py" >"$work/stream" &
generator=$!
tee "$work/in.jsonl" <"$work/stream" | "$bin" "${opts[@]}" --threads 2 -o "$work/two.jsonl" &
pid=$!
: >"$work/rss"
end=$((SECONDS + seconds))
while [ $SECONDS -lt $end ] && kill -0 "$pid" 2>/dev/null; do
  awk '/^VmRSS/ { print $2 }' "/proc/$pid/status" >>"$work/rss" 2>/dev/null || true
  sleep 1
done
# End the stream: the command reads to the end of what was written.
kill "$generator" 2>/dev/null || true
status=0
wait "$pid" || status=$?
# Exit status 1 means some lines became error records, as they should.
[ "$status" -le 1 ] || { echo "the 2-thread run ended with status $status" >&2; exit 1; }
"$bin" "${opts[@]}" --threads 1 -o "$work/one.jsonl" "$work/in.jsonl" || [ $? -le 1 ]

lines=$(python3 -c 'import sys; print(sum(1 for l in open(sys.argv[1], "rb") if l.strip(b" \t\n\r\x0c")))' "$work/in.jsonl")
records=$(wc -l <"$work/two.jsonl")
errors=$(grep -c '"error":' "$work/two.jsonl" || true)
echo "input: $lines non-blank lines ($errors error records) in ${seconds} s"
[ "$lines" -eq "$records" ] || { echo "FAIL: $records records for $lines lines" >&2; exit 1; }
cmp -s "$work/one.jsonl" "$work/two.jsonl" || { echo "FAIL: 1 and 2 threads differ" >&2; exit 1; }
echo "ok: one record per line; 2 threads = 1 thread on every record"
awk '{ v[NR] = $1 } END {
  h = int(NR / 2); a = 0; b = 0
  for (i = 1; i <= h; i++) if (v[i] > a) a = v[i]
  for (i = h + 1; i <= NR; i++) if (v[i] > b) b = v[i]
  printf "RSS peak: first half %.1f MiB, second half %.1f MiB (%d samples)\n", a / 1024, b / 1024, NR
  if (NR < 4 || b > 1.1 * a + 8192) { print "FAIL: memory grew" > "/dev/stderr"; exit 1 }
  print "ok: memory flat"
}' "$work/rss"
