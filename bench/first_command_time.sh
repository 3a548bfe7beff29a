#!/usr/bin/env bash
# Times the first README command (scripts/serve) as a newcomer meets it: a fresh clone of COMMIT
# with empty cargo home, target, models and pip/npm caches, from the command until the server
# answers on loopback. The Debian packages and the Rust toolchain are whatever this machine has.
# Writes the cargo --timings report under WORK/target/cargo-timings (summarise it with
# bench/build_timings.py). Not run in CI: it takes the machine's cores for half an hour.
#
#     bench/first_command_time.sh WORK [COMMIT] [PORT]
set -euo pipefail
work="$(realpath -m -- "${1:?usage: first_command_time.sh WORK [COMMIT] [PORT]}")"
commit=${2:-HEAD}
port=${3:-18687}
repo="$(cd "$(dirname "$0")/.." && pwd)"
# a new folder every time: the point is that nothing is cached, and nothing else is deleted
if [ -e "$work" ] && [ -n "$(ls -A "$work")" ]; then
  echo "$work exists and is not empty: give a new folder" >&2
  exit 1
fi
if curl -s -o /dev/null -m 2 "http://127.0.0.1:$port/"; then
  echo "something already answers on 127.0.0.1:$port: give a free port" >&2
  exit 1
fi
mkdir -p "$work/cargo_home" "$work/npm_cache"
git clone -q "$repo" "$work/clone"
git -C "$work/clone" checkout -q "$(git -C "$repo" rev-parse "$commit")"
# the one change to the command: cargo writes its timings report
sed -i 's/^\(cargo build .*--bin engram\)$/\1 --timings/' "$work/clone/scripts/serve"
grep -q -- '--timings' "$work/clone/scripts/serve" || { echo "no cargo build line found in scripts/serve" >&2; exit 1; }
export CARGO_HOME="$work/cargo_home" CARGO_TARGET_DIR="$work/target" ENGRAM_MODELS_DIR="$work/models"
export PIP_NO_CACHE_DIR=1 npm_config_cache="$work/npm_cache"
# nothing that would reuse earlier compilations or change what is compiled
unset ENGRAM_BIN ENGRAM_CONFIG RUSTC_WRAPPER CARGO_BUILD_RUSTC_WRAPPER RUSTFLAGS CARGO_ENCODED_RUSTFLAGS
start=$(date +%s)
# its own process group, so that stopping this script stops cargo, rustc and the server too
(cd "$work/clone" && exec setsid bash scripts/serve --http-addr "127.0.0.1:$port") \
  > "$work/serve.out" 2> >(while IFS= read -r line; do printf '%s %s\n' "$(date +%T)" "$line"; done > "$work/serve.err") &
pid=$!
trap 'kill -- -$pid 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM
until curl -s -o /dev/null -m 2 "http://127.0.0.1:$port/"; do
  kill -0 $pid 2>/dev/null || { echo "scripts/serve exited before listening; see $work/serve.err" >&2; exit 1; }
  sleep 5
done
end=$(date +%s)
grep -E "setup:|Finished" "$work/serve.err" || true
echo "first command: listening after $((end - start)) s ($(( (end - start) / 60 )) min $(( (end - start) % 60 )) s)"
