#!/usr/bin/env bash
# Long runs of the C runtime's libFuzzer harnesses (runtime_c/fuzz/; docs/testing.md, "Fuzzing"),
# one after another at the lowest CPU priority, then the executions of each:
#
#   bash scripts/fuzz_long.sh [SECONDS] [HARNESS...]      (default: 600 s each; module device elf flat)
#
# SECONDS_<harness>=N sets one harness's time (SECONDS_module=1500). FUZZ_FORK=N runs N libFuzzer
# jobs per harness (-fork=N) instead of one process. BUILD_DIR (default build/fuzz-long, in
# runtime_c/) holds the harnesses, the seed corpora (make fuzz-corpus, made once; REBUILD_CORPUS=1
# makes them again), what the runs found (fuzz/work/HARNESS: the next run goes on from there) and
# the crashes (fuzz/artifacts/HARNESS). Exits non-zero when a harness found something: replay it with
# BUILD_DIR/fuzz/HARNESS_replay FILE, fix the runtime, and commit the input to
# runtime_c/fuzz/regressions/HARNESS/.
set -uo pipefail
cd "$(dirname "$0")/../runtime_c"
SECONDS_EACH=${1:-600}
shift || true
HARNESSES=("$@")
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(module device elf flat)
BUILD_DIR=${BUILD_DIR:-build/fuzz-long}
FUZZ_DIR=$BUILD_DIR/fuzz
export MAKEFLAGS=

nice -n 19 make -s BUILD_DIR="$BUILD_DIR" fuzz fuzz-replay-build || exit 1
if [ ! -f "$FUZZ_DIR/trusted_code.txt" ] || [ -n "${REBUILD_CORPUS:-}" ]; then
  nice -n 19 make -s BUILD_DIR="$BUILD_DIR" fuzz-corpus || exit 1
fi

found=0
summary=()
for h in "${HARNESSES[@]}"; do
  var="SECONDS_$h"
  seconds=${!var:-$SECONDS_EACH}
  mkdir -p "$FUZZ_DIR/work/$h" "$FUZZ_DIR/artifacts/$h" "fuzz/regressions/$h"
  log="$FUZZ_DIR/artifacts/$h/long.log"
  fork=()
  [ -n "${FUZZ_FORK:-}" ] && fork=(-fork="$FUZZ_FORK")
  echo "fuzz_long: $h for $seconds s (log: $log)"
  stamp="$FUZZ_DIR/artifacts/$h/.started"
  touch "$stamp"
  start=$(date +%s)
  IRP_FUZZ_DATA="$FUZZ_DIR:fuzz/regressions" ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    nice -n 19 "$FUZZ_DIR/${h}_fuzzer" "${fork[@]}" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
      -print_final_stats=1 -artifact_prefix="$FUZZ_DIR/artifacts/$h/" \
      "$FUZZ_DIR/work/$h" "$FUZZ_DIR/corpus/$h" "fuzz/regressions/$h" > "$log" 2>&1
  rc=$?
  elapsed=$(( $(date +%s) - start ))
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' | tail -1)
  [ -n "$execs" ] || execs=$(grep -o '^#[0-9]*' "$log" | tr -d '#' | tail -1)
  crashes=$(find "$FUZZ_DIR/artifacts/$h" -type f ! -name '*.log' ! -name .started -newer "$stamp" | wc -l)
  corpus=$(find "$FUZZ_DIR/work/$h" -type f | wc -l)
  line="$h: ${execs:-0} execs in $elapsed s ($(( ${execs:-0} / (elapsed > 0 ? elapsed : 1) ))/s), corpus $corpus, findings $crashes, exit $rc"
  summary+=("$line")
  echo "fuzz_long: $line"
  if [ "$rc" -ne 0 ] || [ "$crashes" -gt 0 ]; then
    found=1
    grep -E "ERROR|SUMMARY|fuzz check failed|runtime error|Test unit written" "$log" | head -5
  fi
done
echo "fuzz_long: summary"
printf '  %s\n' "${summary[@]}"
exit $found
