#!/usr/bin/env bash
# batch's speed and memory goal: N emulated 1 GiB cards at once (capacity and
# bench's quick preset) against one card alone. Every emulated card is served
# by this machine's CPUs, so all share one bus ("emulated on this host") and
# their speed tests run one at a time; the goal is the batch's wall time at
# most 1.3x one card's, plus the speed tests that waited for the bus (the
# rows' speed_s beyond one card's). As root; nothing real is written. Time
# runs SCALE times real time (default 0.1: ten times faster, the same for
# both runs).
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
cp "$work/out.json" "$work/alone.json"
read -r all all_rss <<< "$(run "${devs[@]}")"
python3 - "$work/out.json" "$alone" "$all" "$alone_rss" "$all_rss" "$n" "$work/alone.json" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
alone, together, rss1, rssn, n = float(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
one = json.load(open(sys.argv[7]))["batch"]["rows"][0]["speed_s"]
rows = doc["batch"]["rows"]
verdicts = {}
for r in rows:
    verdicts[r["verdict"]] = verdicts.get(r["verdict"], 0) + 1
waited = sum(r["speed_s"] for r in rows) - one
goal = 1.3 * alone + waited
print(f"one card alone: {alone:.1f} s wall ({one:.1f} s of it its speed test), max RSS {rss1 / 1024:.1f} MiB")
print(f"{n} cards at once: {together:.1f} s wall; goal {goal:.1f} s = 1.3 x {alone:.1f} + {waited:.1f} s of "
      f"speed tests that waited for the bus ({together / goal:.2f} of the goal); "
      f"max RSS {rssn / 1024:.1f} MiB ({(rssn - rss1) / 1024 / max(n - 1, 1):.1f} MiB more a card)")
print("verdicts:", verdicts, "buses:", len({r["bus"] for r in rows}))
PY
