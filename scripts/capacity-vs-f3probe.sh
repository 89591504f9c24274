#!/usr/bin/env bash
# flashlab capacity and f3probe (Debian package f3) on the same emulated
# cards (flashlab emulate: a loop device over a FUSE file behaving as the
# simulated card), side by side: verdict, usable size, bytes written and
# read by each (from the emulation's own counters), device-seconds, and
# whether the card's real area came back unchanged. Run as root:
#   sudo [ONLY=WORD] scripts/capacity-vs-f3probe.sh [TIME_SCALE]
# ONLY runs the cards whose name holds WORD.
# Time runs TIME_SCALE times the card's (default 1: the card's own time,
# as a user waits for it); device-seconds are wall seconds divided by it.
# A faster scale (0.05: 20 times faster) shortens the run but counts each
# program's own wall time (start, identification, fsyncs: about 0.3 s
# for flashlab, 0.45 s of 9 "device-seconds" on a drop fake at 0.05,
# where the same run takes 2 s at 1) as that many times device time.
set -euo pipefail
FLASHLAB=${FLASHLAB:-$(dirname "$0")/../target/release/flashlab}
scale=${1:-1}
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -TERM $pid 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
export FLASHLAB_EMULATE_DIR="$tmp/state" FLASHLAB_DB="$tmp/db.sqlite" FLASHLAB_JOURNAL_DIR="$tmp/j"
cards=(
  "genuine 1G|sim:demo,capacity=1G"
  "wrap 2^30 in 4G|sim:demo,capacity=4G,real_capacity=1G,fake_mode=wrap"
  "wrap 700M in 4G|sim:demo,capacity=4G,real_capacity=700M,fake_mode=wrap"
  "wrap 12M in 4G|sim:demo,capacity=4G,real_capacity=12M,fake_mode=wrap"
  "drop-zeros 300M in 4G|sim:demo,capacity=4G,real_capacity=300M,fake_mode=drop-zeros"
  "drop-stale 300M in 4G|sim:demo,capacity=4G,real_capacity=300M,fake_mode=drop-stale"
  "I/O errors past 300M in 4G|sim:demo,capacity=4G,bad_ranges=300M+3796M"
  "cache 512K, drop 1G in 4G|sim:demo,capacity=4G,real_capacity=1G,fake_mode=drop-zeros,write_cache=512K"
  "cache 8M, drop 1G in 4G|sim:demo,capacity=4G,real_capacity=1G,fake_mode=drop-zeros,write_cache=8M"
  "cache 48M, drop 1G in 4G|sim:demo,capacity=4G,real_capacity=1G,fake_mode=drop-zeros,write_cache=48M"
  "cache 64M, drop 1G, 4K sectors|sim:demo,capacity=4G,sector_size=4096,real_capacity=1G,fake_mode=drop-zeros,write_cache=64M"
  "chain 1.5G/2G in 8G|sim:demo,capacity=8G,real_capacity=1536M,fake_mode=chain,fake_module=2G"
  "wrap 1G in 4G, 4K sectors|sim:demo,capacity=4G,sector_size=4096,real_capacity=1G,fake_mode=wrap"
)
serve() {
  "$FLASHLAB" emulate "$1" --time-scale "$scale" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 100); do [ -s "$tmp/out" ] && break; sleep 0.1; done
  dev=$(head -1 "$tmp/out")
}
# Not in a $(...) subshell: only this shell can wait for the emulation.
stop() {
  kill -TERM "$pid"; wait "$pid" || true; pid=
  # "... N reads (X), M writes (Y) ..." from the summary
  # (the summary wraps at 80 columns: read it as one line)
  tr -s '\n ' '  ' <"$tmp/err" |
    sed -n 's/.*SIGTERM; \([0-9]*\) reads (\([^)]*\)), \([0-9]*\) writes (\([^)]*\)).*/read \2, wrote \4/p' >"$tmp/io"
}
printf '%-28s | %-44s | %-44s\n' card flashlab f3probe
for c in "${cards[@]}"; do
  name=${c%%|*}; spec=${c#*|}
  [[ -z "${ONLY:-}" || "$name" == *"$ONLY"* ]] || continue
  serve "$spec"; real_sha=$(head -c 8M "$dev" | sha256sum | cut -c1-12)
  t0=$(date +%s.%N)
  fl=$("$FLASHLAB" capacity "$dev" --write --no-store --json 2>/dev/null | python3 -c "
import json,sys; d=json.load(sys.stdin); c=d.get('capacity')
print(f\"{c['verdict']} {c['kind'] or ''} {c['usable_bytes']}\" if c else 'no verdict: ' + d['error']['message'][:40])" || true)
  t1=$(date +%s.%N)
  after=$(head -c 8M "$dev" | sha256sum | cut -c1-12)
  stop; flio=$(cat "$tmp/io")
  serve "$spec"
  t2=$(date +%s.%N)
  f3=$(f3probe --destructive "$dev" 2>&1 | awk '/Good news/{v="genuine"} /Bad news/{v="fake"} /is damaged/{v="damaged"} /\*Usable\* size/{u=$0} END{gsub(/.*\(/,"",u); gsub(/ blocks\).*/,"",u); print v, u" blocks"}' || true)
  t3=$(date +%s.%N)
  stop; f3io=$(cat "$tmp/io")
  ds() { python3 -c "print(f'{($2-$1)/$scale:.1f} s')"; }
  printf '%-28s | %-44s | %-44s\n' "$name" "$fl; $(ds $t0 $t1)" "$f3; $(ds $t2 $t3)"
  printf '%-28s | %-44s | %-44s\n' "" "$flio; first 8M $([ "$real_sha" = "$after" ] && echo same || echo CHANGED)" "$f3io (destructive)"
done
