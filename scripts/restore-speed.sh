#!/usr/bin/env bash
# Restore throughput against the device's own sequential write speed (the
# goal: restore >= 80% of it). Needs root for the loop device; creates and
# detaches its own loop device over a temporary file, never touches another.
#
#   sudo [WORKDIR=/dev/shm] scripts/restore-speed.sh [SIZE_MIB]   (default 512 MiB in /var/tmp)
set -euo pipefail
cd "$(dirname "$0")/.."
size_mib=${1:-512}
range_mib=$((size_mib / 2))
cargo build --release --quiet
bin=target/release/flashlab

work=$(mktemp -d "${WORKDIR:-/var/tmp}/flashlab-restore.XXXXXX")
dev=""
cleanup() {
  [ -n "$dev" ] && losetup -d "$dev" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

head -c $((size_mib << 20)) /dev/urandom >"$work/img"
dev=$(losetup --find --show "$work/img")
echo "device: $dev over a ${size_mib} MiB file (loop, buffered backing file)"

# The device's sequential write speed: 1 MiB O_DIRECT writes, QD1, as dd does
# it; without a flush (compare with the write-back) and with one (compare with
# the whole verified restore, which ends with a flush too).
dd_rate() {
  local s
  s=$(dd if=/dev/zero of="$dev" bs=1M count="$range_mib" oflag=direct "$@" 2>&1 |
    awk '/copied/ { for (i = 1; i <= NF; i++) if ($i == "s,") print $(i-1) }')
  awk -v m="$range_mib" -v s="$s" 'BEGIN { printf "%.0f", m * 1048576 / s }'
}
best() { local b=0 r; for r in "$@"; do [ "$r" -gt "$b" ] && b=$r; done; echo "$b"; }
dd_plain=$(best "$(dd_rate)" "$(dd_rate)" "$(dd_rate)")
dd_sync=$(best "$(dd_rate conv=fsync)" "$(dd_rate conv=fsync)" "$(dd_rate conv=fsync)")

run() {
  "$bin" debug write-pattern "$dev" --write --journal-dir "$work/j" --range "0+${range_mib}M" --json 2>/dev/null |
    python3 -c 'import json,sys; o=json.load(sys.stdin)["outcome"]; print(int(o["restore_write_bytes_per_sec"]), int(o["restore_bytes_per_sec"]))'
}
w=(); v=()
for _ in 1 2 3; do read -r a b < <(run); w+=("$a"); v+=("$b"); done
rw=$(best "${w[@]}"); rv=$(best "${v[@]}")
pct() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f%%", 100 * a / b }'; }
mb() { echo "$(($1 / 1000000)) MB/s"; }
echo "restoring ${range_mib} MiB, best of 3 each:"
echo "  dd 1 MiB O_DIRECT writes:            $(mb "$dd_plain")"
echo "  flashlab write-back:                 $(mb "$rw")  ($(pct "$rw" "$dd_plain") of dd)"
echo "  dd 1 MiB O_DIRECT writes + fsync:    $(mb "$dd_sync")"
echo "  flashlab verified restore (+ flush): $(mb "$rv")  ($(pct "$rv" "$dd_sync") of dd + fsync)"
