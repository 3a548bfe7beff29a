#!/usr/bin/env bash
# Runs engram's libFuzzer targets (fuzz/, issue 29): event parsing and validation, the body of
# POST /v1/events, the event log's record decoder, and what is read from an event's text
# (requests, stated preferences, topic terms, facts, entities), each for RUNS executions (default
# 1,000,000), starting from the seed corpus committed under fuzz/corpus/<target>/. Not run in CI.
#
# Needs the nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`). Builds go to
# $FUZZ_TARGET_DIR; the corpus each run grows, and any crash or timeout input, go under
# $FUZZ_WORK, never into the repository.
#
#   bench/fuzz.sh                 # every target, 1,000,000 runs each
#   RUNS=10000 bench/fuzz.sh event
#
# Prints per target the executions libFuzzer reports and its exit status (0: no crash, no
# timeout, no leak); exits 1 when any target failed.
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${RUNS:-1000000}"
FUZZ_TARGET_DIR="${FUZZ_TARGET_DIR:-$HOME/.cache/engram/fuzz-target}"
FUZZ_WORK="${FUZZ_WORK:-$HOME/.cache/engram/fuzz-work}"
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=(event events_body log_records text_reading)

cd "$ROOT/fuzz"
export CARGO_TARGET_DIR="$FUZZ_TARGET_DIR"
# optimised, with debug assertions (integer overflow panics), as `cargo fuzz run` builds
cargo +nightly fuzz build -O --debug-assertions || exit 1

failed=0
summary=()
for target in "${TARGETS[@]}"; do
    corpus="$FUZZ_WORK/corpus/$target"
    artifacts="$FUZZ_WORK/artifacts/$target"
    log="$FUZZ_WORK/$target.log"
    mkdir -p "$corpus" "$artifacts"
    # the first corpus folder receives new inputs; the committed seeds are only read
    cargo +nightly fuzz run -O --debug-assertions "$target" "$corpus" "corpus/$target" -- \
        -runs="$RUNS" -timeout=10 -rss_limit_mb=2048 -max_len=16384 \
        -artifact_prefix="$artifacts/" -print_final_stats=1 >"$log" 2>&1
    status=$?
    execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -1)
    if [ "$status" -eq 0 ]; then
        result="ok: no crash, no timeout"
    else
        result="FAILED (libFuzzer exit status $status; inputs in $artifacts, log in $log)"
        failed=1
    fi
    summary+=("$(printf '%-12s %10s executions  %s' "$target" "${execs:-?}" "$result")")
    echo "${summary[-1]}"
done

echo
echo "fuzz summary (RUNS=$RUNS):"
printf '%s\n' "${summary[@]}"
exit "$failed"
