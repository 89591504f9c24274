#!/usr/bin/env bash
# flashlab bench against fio on a RAM-backed block device (the engine
# check). Needs root, fio and a built flashlab (cargo build --release).
#
#   sudo scripts/bench-vs-fio.sh [ROUNDS] [MIB]
#   sudo BACKING=zram scripts/bench-vs-fio.sh [ROUNDS] [MIB]
#   sudo PIN= scripts/bench-vs-fio.sh        # not pinned to one CPU
#
# Makes a loop device with direct I/O over a file in /dev/shm (or, with
# BACKING=zram, a zram device, which serves each read in the submitting
# thread: no loop worker thread to be scheduled, so less noise), then runs fio
# and `flashlab bench` alternately with the same settings: 4 KiB random reads,
# direct, io_uring, queue depth 1 and 32, the same number of bytes, ROUNDS
# times (default 5). Prints each tool's IOPS, p50 and p99 of the total
# latency, submission to completion (fio's lat_ns with --lat_percentiles=1,
# which is what flashlab measures; fio's clat leaves out the submission,
# where a loop device may do the whole read), and the median IOPS ratio. A benchmark, not a test: figures go
# in the note. The loop device and the file are removed on exit.
#
# Both tools run on one CPU (taskset; PIN=CPU chooses it, the last by
# default; PIN= turns it off), so neither gains from where the scheduler
# happens to put it: on a 2-vCPU VM an unpinned QD 1 run moves between 15k
# and 48k IOPS with where the other vCPU's load leaves it.
set -euo pipefail
ROUNDS=${1:-5}
PIN=${PIN-$(($(nproc) - 1))}
RUN=()
if [ -n "$PIN" ] && command -v taskset >/dev/null; then RUN=(taskset -c "$PIN"); fi
MIB=${2:-1024}
BIN=${FLASHLAB:-$(dirname "$0")/../target/release/flashlab}
BACKING=${BACKING:-shm}
IMG=""
DEV=""
ZRAM=""
cleanup() {
    [ -n "$DEV" ] && [ -z "$ZRAM" ] && losetup -d "$DEV" 2>/dev/null || true
    [ -n "$ZRAM" ] && echo "$ZRAM" > /sys/class/zram-control/hot_remove 2>/dev/null || true
    [ -n "$IMG" ] && rm -f "$IMG"
}
trap cleanup EXIT
if [ "$BACKING" = zram ]; then
    ZRAM=$(cat /sys/class/zram-control/hot_add)
    DEV=/dev/zram$ZRAM
    echo "${MIB}M" > /sys/block/zram$ZRAM/disksize
    dd if=/dev/urandom of="$DEV" bs=1M count="$MIB" oflag=direct status=none
    WHAT="zram device $DEV (${MIB} MiB)"
else
    IMG=$(mktemp /dev/shm/flashlab-fio.XXXXXX)
    truncate -s "${MIB}M" "$IMG"
    dd if=/dev/urandom of="$IMG" bs=1M count="$MIB" conv=notrunc status=none
    DEV=$(losetup --direct-io=on -f --show "$IMG")
    WHAT="loop device $DEV over $IMG (${MIB} MiB, direct I/O)"
fi
BYTES=$((MIB / 2))M
echo "$WHAT; ${BYTES} of 4 KiB random reads per run"
printf '%-4s %-8s %10s %10s %10s %10s %10s %10s %7s\n' qd round fio_iops fl_iops fio_p50 fl_p50 fio_p99 fl_p99 ratio
for QD in 1 32; do
    RATIOS=()
    for R in $(seq 1 "$ROUNDS"); do
        F=$("${RUN[@]}" fio --name=r --filename="$DEV" --rw=randread --bs=4k --direct=1 --ioengine=io_uring \
            --iodepth="$QD" --size="$MIB"M --io_size="$BYTES" --norandommap --randrepeat=0 --lat_percentiles=1 \
            --output-format=json 2>/dev/null)
        FI=$(echo "$F" | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]; print(round(j["iops"]))')
        FP50=$(echo "$F" | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]["lat_ns"]["percentile"]; print(j["50.000000"])')
        FP99=$(echo "$F" | python3 -c 'import json,sys; j=json.load(sys.stdin)["jobs"][0]["read"]["lat_ns"]["percentile"]; print(j["99.000000"])')
        L=$("${RUN[@]}" "$BIN" bench "$DEV" --rw randread --bs 4k --qd "$QD" --size "$BYTES" --area 0+"$MIB"M \
            --engine io_uring --json 2>/dev/null)
        LI=$(echo "$L" | python3 -c 'import json,sys; t=json.load(sys.stdin)["bench"]["tests"][0]; print(round(t["iops"]))')
        LP50=$(echo "$L" | python3 -c 'import json,sys; t=json.load(sys.stdin)["bench"]["tests"][0]; print(t["latency_ns"]["p50"])')
        LP99=$(echo "$L" | python3 -c 'import json,sys; t=json.load(sys.stdin)["bench"]["tests"][0]; print(t["latency_ns"]["p99"])')
        RATIO=$(python3 -c "print(f'{$LI/$FI:.2f}')")
        RATIOS+=("$RATIO")
        printf '%-4s %-8s %10s %10s %10s %10s %10s %10s %7s\n' "$QD" "$R" "$FI" "$LI" "$FP50" "$LP50" "$FP99" "$LP99" "$RATIO"
    done
    MED=$(printf '%s\n' "${RATIOS[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
    echo "qd $QD: median flashlab/fio IOPS ratio $MED"
done
