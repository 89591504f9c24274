#!/usr/bin/env bash
# batch's speed and memory goal: N emulated 1 GiB cards at once (capacity and
# bench's quick preset) against the slowest card alone. Each emulation is its
# own FUSE mount, so its own bus: their speed tests may run side by side, and
# the goal is the batch's wall time at most 1.3x one card's. As root; nothing
# real is written. Time runs SCALE times real time (default 0.1: ten times
# faster, the same for both runs).
#
#   sudo scripts/batch-speed.sh [N] [SCALE]     FLASHLAB=path/to/flashlab to choose the binary
set -euo pipefail
n=${1:-16}
scale=${2:-0.1}
fl=${FLASHLAB:-flashlab}
work=$(mktemp -d /tmp/batch-speed.XXXXXX)
export FLASHLAB_EMULATE_DIR=$work/emulate
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT
devs=()
for i in $(seq 1 "$n"); do
  "$fl" emulate "sim:demo,capacity=1G" --time-scale "$scale" > "$work/emu$i.out" 2> "$work/emu$i.err" &
  pids+=($!)
done
for i in $(seq 1 "$n"); do
  until dev=$(head -1 "$work/emu$i.out" 2>/dev/null) && [[ $dev == /dev/loop* ]]; do sleep 0.2; done
  devs+=("$dev")
done
run() {
  /usr/bin/time -f "%e %M" -o "$work/time" "$fl" batch "$@" --write --no-store --json \
    --journal-dir "$work" > "$work/out.json" 2> "$work/err" || { cat "$work/err"; exit 1; }
  read -r wall rss < "$work/time"
  echo "$wall $rss"
}
read -r alone alone_rss <<< "$(run "${devs[0]}")"
read -r all all_rss <<< "$(run "${devs[@]}")"
python3 - "$work/out.json" "$alone" "$all" "$alone_rss" "$all_rss" "$n" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
alone, together, rss1, rssn, n = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
rows = doc["batch"]["rows"]
verdicts = {}
for r in rows:
    verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
print(f"one card alone: {alone:.1f} s wall, max RSS {rss1 / 1024:.1f} MiB")
print(f"{n} cards at once: {together:.1f} s wall ({together / alone:.2f}x; goal 1.3x), "
      f"max RSS {rssn / 1024:.1f} MiB ({(rssn - rss1) / 1024 / max(n - 1, 1):.1f} MiB more a card)")
print("verdicts:", verdicts, "buses:", len({r["bus"] for r in rows}))
PY
