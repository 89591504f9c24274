#!/usr/bin/env bash
# The real flashbench against emulated cards whose truth is known, its output
# pasted into `flashlab import flashbench`: what the import reads from the
# real tool's tables through /dev/loopN (loop + FUSE + flashlab emulate), not
# from flashlab's own reproduction of flashbench's patterns. Run as root:
#   sudo scripts/flashbench-vs-emulate.sh [SPEC...]
# FLASHBENCH picks the program (default: Debian's, package flashbench; a
# build of bradfa/flashbench made outside this repository works the same).
# Per card: the truth, what the import said and how sure, and the seconds
# flashbench ran (in real time: device time is the user's time).
set -euo pipefail
FLASHLAB=${FLASHLAB:-$(dirname "$0")/../target/release/flashlab}
FLASHBENCH=${FLASHBENCH:-flashbench}
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(
  "sim:demo,capacity=256M,au_size=1M,open_aus_linear=3,open_aus_random=2"
  "sim:kingston-sa04g,capacity=256M"
  "sim:toshiba-7au,capacity=512M"
  "sim:demo,capacity=512M,au_size=4M,open_aus_linear=5,open_aus_random=1,host=am335x-hsmmc"
  "sim:demo,capacity=256M,au_size=1M,open_aus_linear=4,open_aus_random=2,host=at91-mci,max_blocks_per_cmd=64"
)
tmp=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill -TERM $pid 2>/dev/null; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
export FLASHLAB_EMULATE_DIR="$tmp/state"
for spec in "${specs[@]}"; do
  read -r au page lin rnd < <("$FLASHLAB" sim show "$spec" --json | python3 -c "
import json,sys; p=json.load(sys.stdin)['params']
print(p['au_size'], p['page_size'], p['open_aus_linear'], p['open_aus_random'])")
  "$FLASHLAB" emulate "$spec" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  for _ in $(seq 100); do [ -s "$tmp/out" ] && break; sleep 0.1; done
  dev=$(head -1 "$tmp/out")
  block=$(( au / 4 < 16384 ? au / 4 : 16384 ))
  session="$tmp/session.txt"
  : >"$session"
  start=$(date +%s.%N)
  # Debian's flashbench 62 writes its tables to fd 0 unless given -o (fixed
  # upstream in 7ec66d0); its -a rows go to stdout either way.
  fb() {
    echo "\$ sudo flashbench $*" >>"$session"
    "$FLASHBENCH" "$@" -o "$tmp/tables" >>"$session"
    cat "$tmp/tables" >>"$session"
  }
  for _ in 1 2 3; do fb -a "$dev" --blocksize=1024; done
  for n in $(seq $(( lin > 1 ? lin - 1 : 1 )) $(( lin + 1 ))); do
    fb "$dev" --open-au --erasesize="$au" --blocksize="$block" --open-au-nr="$n"
  done
  for n in $(seq $(( rnd > 1 ? rnd - 1 : 1 )) $(( rnd + 1 ))); do
    fb "$dev" --open-au --erasesize="$au" --blocksize="$block" --random --open-au-nr="$n"
  done
  secs=$(python3 -c "import time; print(round(time.time() - $start))")
  kill -TERM $pid; wait $pid || true; pid=
  "$FLASHLAB" import flashbench "$session" --no-store --json 2>/dev/null | python3 -c "
import json,sys
j=json.load(sys.stdin); a=j.get('align') or {}; o=j.get('open_au') or {}
def lim(w):
    s=o.get(w) or {}
    return '%s (%.2f)' % (s.get('max_open_aus'), s.get('confidence', 0))
print('%s' % '$spec')
print('  truth: erase %d, page %d, open %d in order, %d random; flashbench ran $secs s' % ($au, $page, $lin, $rnd))
print('  read:  erase %s (%.2f), page %s (%.2f), open %s in order, %s random' % (
    a.get('erase_size_bytes'), a.get('confidence', 0), a.get('page_size_bytes'), a.get('page_confidence', 0),
    lim('linear'), lim('random')))"
done
