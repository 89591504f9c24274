#!/usr/bin/env bash
# A Raspberry-Pi-like workload, recorded and put through `flashlab life` on
# three built-in cards: the figures of life's closing note. As root: an
# emulated card (so nothing real is written) with ext4 on it, then for
# SECONDS (default 120) a log line fsync'd every second (journald, syslog)
# and 20 rows into a SQLite database in WAL mode every 5 s (a home
# automation recorder), recorded with `flashlab trace` from after the mount.
#
#   sudo scripts/life-pi.sh [SECONDS]        FLASHLAB=path/to/flashlab to choose the binary
set -euo pipefail
secs=${1:-120}
fl=${FLASHLAB:-flashlab}
work=$(mktemp -d /tmp/life-pi.XXXXXX)
export FLASHLAB_DB=$work/results.sqlite FLASHLAB_EMULATE_DIR=$work/emulate
card="sim:demo,capacity=1G"
"$fl" emulate "$card" > "$work/emulate.out" 2> "$work/emulate.err" &
emu=$!
cleanup() {
  umount "$work/mnt" 2>/dev/null || true
  [ -n "${tr:-}" ] && kill -INT "$tr" 2>/dev/null || true
  kill -TERM "$emu" 2>/dev/null || true
  wait 2>/dev/null || true
}
trap cleanup EXIT
until dev=$(head -1 "$work/emulate.out" 2>/dev/null) && [[ $dev == /dev/loop* ]]; do sleep 0.2; done
# No lazy init: a new ext4 zeroes its inode tables in the background for
# minutes, 2 MiB at a time, which is not what a Pi does for years.
mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$dev"
mkdir -p "$work/mnt" && mount "$dev" "$work/mnt"
"$fl" trace "$dev" -o /dev/shm/life-pi --json > "$work/trace.json" 2> "$work/trace.err" &
tr=$!
until [ -e /dev/shm/life-pi.blktrace.0 ]; do sleep 0.1; done
python3 - "$work/mnt" "$secs" <<'PY'
import os, sqlite3, sys, time
mnt, secs = sys.argv[1], int(sys.argv[2])
db = sqlite3.connect(os.path.join(mnt, "recorder.db"))
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE IF NOT EXISTS states (t REAL, entity TEXT, state TEXT)")
log = open(os.path.join(mnt, "syslog"), "a")
end = time.time() + secs
n = 0
while time.time() < end:
    log.write(f"{time.time():.3f} pi sensor[42]: reading {n}\n"); log.flush(); os.fsync(log.fileno())
    if n % 5 == 0:
        db.executemany("INSERT INTO states VALUES (?, ?, ?)", [(time.time(), f"sensor.{i}", str(n)) for i in range(20)])
        db.commit()
    n += 1
    time.sleep(1)
PY
kill -INT "$tr"; wait "$tr" || true; tr=
umount "$work/mnt"
for c in sim:kingston-sa04g sim:demo sim:emmc-hs400; do
  "$fl" life /dev/shm/life-pi.blktrace.0 --card "$c" --coalesce 60s --no-store
  echo
done
echo "trace kept in /dev/shm/life-pi.blktrace.*; work files in $work"
