#!/usr/bin/env bash
# How close an emulated card's timing, seen by fio through /dev/loopN (loop
# + FUSE + flashlab emulate), comes to the model's own figures (flashlab
# bench on the same sim: card). Run as root:
#   sudo scripts/emulate-vs-model.sh [SPEC...]
# Prints, per card and test, fio's IOPS and median latency beside the
# model's, and the request sizes the card saw.
set -euo pipefail
FLASHLAB=${FLASHLAB:-$(dirname "$0")/../target/release/flashlab}
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=("sim:demo,capacity=1G" "sim:kingston-sa04g,capacity=1G" "sim:emmc-hs400,capacity=1G")
tmp=$(mktemp -d)
trap 'kill -TERM $pid 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
export FLASHLAB_EMULATE_DIR="$tmp/state"
printf '%-34s %-18s %10s %10s %12s %12s\n' card test fio_iops model_iops fio_p50_us model_p50_us
for spec in "${specs[@]}"; do
  "$FLASHLAB" emulate "$spec" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 100); do [ -s "$tmp/out" ] && break; sleep 0.1; done
  dev=$(head -1 "$tmp/out")
  for t in "randread 4k 1" "randread 4k 32" "randwrite 4k 1" "write 1M 1" "read 1M 1"; do
    set -- $t
    fio --name=x --filename="$dev" --direct=1 --rw="$1" --bs="$2" --iodepth="$3" --ioengine=io_uring \
      --runtime=3 --time_based --offset=64M --size=64M --output-format=json >"$tmp/fio.json" 2>/dev/null
    read -r fi fl < <(python3 -c "
import json; j=json.load(open('$tmp/fio.json'))['jobs'][0]; d=j['write'] if j['write']['io_bytes'] else j['read']
print(round(d['iops']), round(d['clat_ns']['percentile']['50.000000']/1000))")
    "$FLASHLAB" bench "$spec" --rw "$1" --bs "$2" --qd "$3" --area 64M+64M --runtime 3s --no-store --json \
      >"$tmp/b.json" 2>/dev/null
    read -r mi ml < <(python3 -c "
import json; t=json.load(open('$tmp/b.json'))['bench']['tests'][0]
print(round(t['iops']), round(t['latency_ns']['p50']/1000))")
    printf '%-34s %-18s %10s %10s %12s %12s\n' "${spec%%,*}" "$1 $2 QD$3" "$fi" "$mi" "$fl" "$ml"
  done
  kill -TERM $pid; wait $pid || true
  grep "request sizes" "$tmp/err" | sed "s/^/  ${spec%%,*}: /"
done
