#!/usr/bin/env bash
# Peak resident memory of the largest runs flashlab accepts, on a small
# simulated card and on the largest one (1 PiB), with the test area as large
# as each allows: nothing a run keeps may grow with the area or the device.
# A bench over a 1 PiB area once peaked at 4.2 GB (a list of its 4 MiB
# pieces), and a random write over 1 TiB of a fast card at 24 GB (a MiB of
# erased originals kept per piece it touched).
#
# The goals: a bench peaks under GOAL_MIB (default 64) on either card, and
# no command peaks more than GROWTH_MIB (default 8) higher on 1 PiB than on
# 4 GiB. Each run is printed with its peak; exit 1 when a goal is missed.
#
#   scripts/bench-memory.sh            (needs GNU time as /usr/bin/time)
set -euo pipefail
cd "$(dirname "$0")/.."
goal_kib=$(( ${GOAL_MIB:-64} * 1024 ))
growth_kib=$(( ${GROWTH_MIB:-8} * 1024 ))
if ! /usr/bin/time -f %M true >/dev/null 2>&1; then
  echo "error: GNU time is not at /usr/bin/time" >&2
  echo "hint: apt-get install time" >&2
  exit 2
fi
cargo build --release --quiet
bin=target/release/flashlab
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Peak RSS in KiB of one run, which must succeed.
peak() {
  if ! /usr/bin/time -f %M -o "$work/rss" "$bin" "$@" --no-store >/dev/null 2>"$work/err"; then
    echo "error: flashlab $* failed:" >&2
    cat "$work/err" >&2
    exit 1
  fi
  tail -n 1 "$work/rss"
}

# Each case with CAP (the card) and AREA (the largest area it allows:
# the whole card for reads, at most 256 GiB, 65536 pieces of 4 MiB, for
# writes) filled in.
cases=(
  "bench sim:demo,capacity=CAP --area 0+CAP --rw randread --bs 512 --runtime 1"
  "bench sim:demo,capacity=CAP --area 0+CAP --rw randread --bs 512 --size 8G"
  "bench sim:demo,capacity=CAP --area 0+AREA --rw randwrite --bs 4k --runtime 1"
  "bench sim:demo,capacity=CAP --area 0+AREA --rw randrw --bs 4k --runtime 1"
  "bench sim:demo,capacity=CAP --area 0+AREA --rw write --bs 4k --runtime 1"
  "bench sim:emmc-hs400,capacity=CAP --area 0+AREA --rw randwrite --bs 4k --qd 32 --runtime 1"
  "bench sim:demo,capacity=CAP --preset full"
  "capacity sim:demo,capacity=CAP"
  "probe sim:demo,capacity=CAP"
)
missed=0
printf '%-10s %-10s %s\n' "4 GiB" "1 PiB" "command (CAP, AREA)"
for c in "${cases[@]}"; do
  small=${c//CAP/4G}
  large=${c//CAP/1P}
  # shellcheck disable=SC2086 # each case is its words
  s=$(peak ${small//AREA/4G})
  # shellcheck disable=SC2086
  l=$(peak ${large//AREA/256G})
  mark=""
  if [ $((l - s)) -gt "$growth_kib" ]; then
    mark=" <- grows with the card by $(((l - s) / 1024)) MiB"
    missed=1
  fi
  if [ "${c%% *}" = bench ] && { [ "$l" -gt "$goal_kib" ] || [ "$s" -gt "$goal_kib" ]; }; then
    mark="$mark <- over ${GOAL_MIB:-64} MiB"
    missed=1
  fi
  printf '%-10s %-10s %s%s\n' "$((s / 1024)) MiB" "$((l / 1024)) MiB" "$c" "$mark"
done
exit "$missed"
