#!/usr/bin/env bash
# Runs every fuzz target (fuzz/, libFuzzer through cargo fuzz) for SECONDS
# each (default 60), one job each, on the stored corpus, which grows with the
# inputs that reach new coverage; a crash is minimised into
# fuzz/artifacts/<target>/ and makes the script fail.
#
#   scripts/fuzz.sh [SECONDS] [TARGET…]
#
# Needs cargo-fuzz (`cargo install cargo-fuzz --locked`). Builds with the
# stable toolchain: `-s none` (no sanitizer) needs no unstable flag; safe
# Rust (the workspace forbids unsafe code) gains little from AddressSanitizer.
# FUZZ_CODEGEN_UNITS=16 builds faster (CI) at some cost in executions per second.
# FUZZ_RUNS=N (CI) runs N inputs per target from the fixed seed 1 instead of
# SECONDS: one process, the same corpus and seed give the same inputs, so a
# CI run does not turn red on an input that an earlier run never tried.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
seconds=${1:-60}
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(json_line conllu arrays model)
target_dir=${CARGO_TARGET_DIR:-../target}/fuzz
for t in "${targets[@]}"; do
  dict=()
  cgu=()
  [ -z "${FUZZ_CODEGEN_UNITS:-}" ] || cgu=(--codegen-units "$FUZZ_CODEGEN_UNITS")
  [ -f "$t.dict" ] && dict=(-dict="$t.dict")
  if [ -n "${FUZZ_RUNS:-}" ]; then
    budget=(-runs="$FUZZ_RUNS" -seed=1)
    echo "== fuzz $t: $FUZZ_RUNS runs from seed 1"
  else
    budget=(-max_total_time="$seconds")
    echo "== fuzz $t for $seconds s"
  fi
  log=$(mktemp)
  # With FUZZ_SCRATCH=1 (CI) new inputs go to a scratch folder: the stored corpus stays as it is.
  corpus=()
  if [ -n "${FUZZ_SCRATCH:-}" ]; then
    corpus=("$(mktemp -d)" "corpus/$t")
  fi
  # One process (libFuzzer's default; -jobs=N would fork N logging to files), niced.
  if ! nice cargo fuzz run -s none -O "${cgu[@]}" --target-dir "$target_dir" "$t" "${corpus[@]}" -- \
    "${budget[@]}" -max_len=4096 -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 "${dict[@]}" >"$log" 2>&1; then
    grep -m 3 -A 2 "panicked" "$log" >&2 || true
    tail -n 40 "$log" >&2
    echo "fuzz target $t failed: the crasher is in fuzz/artifacts/$t" >&2
    rm -f "$log"
    exit 1
  fi
  grep -E '(INITED|DONE) |^stat::(number_of_executed_units|peak_rss_mb)' "$log" || true
  rm -f "$log"
done
