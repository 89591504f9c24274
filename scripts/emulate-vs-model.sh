#!/usr/bin/env bash
# How close an emulated card (loop + FUSE + flashlab emulate) comes to the
# model's own figures, through real programs. Run as root, with fio and a
# built flashlab (cargo build --release):
#
#   sudo scripts/emulate-vs-model.sh fio [SPEC...]     fio and flashlab's real path against bench
#   sudo scripts/emulate-vs-model.sh scale [SPEC...]   align and scatter at each --time-scale
#   sudo LOAD=1 scripts/emulate-vs-model.sh ...        the same with a cargo build running beside it
#   sudo RT=1 scripts/emulate-vs-model.sh ...          the measuring programs in the real-time class
#
# fio: per card and test, fio through /dev/loopN (time scale 1; psync at QD 1,
# io_uring at QD 32; direct I/O) and `flashlab bench /dev/loopN --write`
# (the real path) against `flashlab bench SPEC` (in process, virtual time:
# the model's truth), each on a fresh emulation, since writes change the
# card. All three run the same requests: bench's, by count (--size, for
# about the test's seconds on the model), which fio replays from an iolog
# (bench's offsets, in its order: a card's writes cost what the addresses
# they land on make them cost). The first tenth (at least a queue's
# worth) warms up and is not counted, as bench counts it: fio's rate is
# taken from its per-request log over the same requests. A window of
# another length (fio's ramp_time against bench's warm-up of whole
# queues) put the two 14-19% apart on random writes at QD 32, with the
# emulation as exact as at QD 1. IOPS, the ratio to the model, median
# latency, and the answers the emulation counted late. CELLS chooses the
# tests ("rw bs qd seconds", comma-separated; default: the seven below).
#
# scale: per card and time scale, `flashlab align` and `flashlab scatter`
# (read-only) through /dev/loopN, their times divided by the scale,
# against the same tests in process: align's 2-8 KiB rows (pre, on and
# post: the worst of their ratios to the model) and scatter's median and
# 90th percentile. SCALES chooses the scales (default 1 0.5 0.2 0.1 0.05
# 0.02 0.01), ROUNDS how many emulations each (default 3, the worst shown;
# EACH=1 shows every round too).
#
# LOAD=1 builds this repository (a copy of HEAD, its own target directory,
# cargo build --release, started again as it ends) beside the measurement,
# as another engineer's build would. The busy column is the share of the
# time some task waited for a CPU while the cell ran (/proc/pressure/cpu).
#
# RT=1 runs fio and flashlab's measuring side with `chrt -f 1`, as the
# emulation's own answering threads run: on a busy machine a program of
# normal priority waits for a CPU after each answer (milliseconds while a
# compiler runs), on a real card as here, and at queue depth 1 that wait,
# not the card, sets its IOPS. The emulation's summary says when it did.
set -euo pipefail
mode=${1:-fio}
shift || true
FLASHLAB=${FLASHLAB:-$(dirname "$0")/../target/release/flashlab}
FLASHLAB=$(realpath "$FLASHLAB")
REPO=$(realpath "$(dirname "$0")/..")
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=("sim:demo,capacity=1G" "sim:kingston-sa04g,capacity=1G")
tmp=$(mktemp -d)
pid=
loadpid=
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  [ -n "$loadpid" ] && kill -TERM -- "-$loadpid" 2>/dev/null
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
export FLASHLAB_EMULATE_DIR="$tmp/state"
prog=()
[ "${RT:-}" = 1 ] && prog=(chrt -f 1)

if [ "${LOAD:-}" = 1 ]; then
  mkdir "$tmp/load-src"
  git -C "$REPO" archive HEAD | tar -x -C "$tmp/load-src"
  # Its own session, so the whole build is ended by its group's id.
  setsid bash -c "cd '$tmp/load-src'; while :; do CARGO_TARGET_DIR='$tmp/load-target' \
    cargo build --release --offline -q >/dev/null 2>&1; rm -rf '$tmp/load-target'; done" &
  loadpid=$!
  sleep 20 # past cargo's start, into the compilers
  echo "load: cargo build --release of $(git -C "$REPO" rev-parse --short HEAD) beside it"
fi

# The share of time since the last call that some task waited for a CPU
# (the kernel's pressure stall information, /proc/pressure/cpu "some"):
# near 0% on an idle machine, whatever this script itself runs.
stat0=
busy() {
  local now
  now="$(sed -n 's/^some .*total=//p' /proc/pressure/cpu) $(date +%s%N)"
  if [ -n "$stat0" ]; then
    python3 -c "a,b='$stat0'.split(); c,d='$now'.split(); print(f'{(int(c)-int(a))*1e3/max(1,int(d)-int(b)):.0%}')"
  fi
  stat0=$now
}

# Start an emulation of $1 at time scale $2; sets dev.
start() {
  : >"$tmp/out"
  "$FLASHLAB" emulate "$1" --time-scale "$2" >"$tmp/out" 2>"$tmp/err" &
  pid=$!
  dev=
  for _ in $(seq 3000); do
    dev=$(grep -m1 '^/dev/loop' "$tmp/out" || true)
    [ -n "$dev" ] || ! kill -0 "$pid" 2>/dev/null && break
    sleep 0.1
  done
  [ -n "$dev" ] || { echo "emulate $1 gave no device:" >&2; cat "$tmp/out" "$tmp/err" >&2; exit 1; }
}

# Stop it; sets late to "N/M" (answers late / answers) from its summary,
# and wait to how much later than the path's round trip, a mean in µs,
# requests came after the previous answer while none was in flight ("-"
# where the summary had nothing to say: under 50 µs).
stop() {
  kill -TERM "$pid"
  wait "$pid" || true
  pid=
  local s
  s=$(tr '\n' ' ' <"$tmp/err" | tr -s ' ')
  late=$(python3 -c "
import re,sys; s=sys.argv[1]
m=re.search(r'(\d+) of (\d+) answers late', s)
n=re.search(r'(\d+) reads \(.*?\), (\d+) writes', s)
total=int(n.group(1))+int(n.group(2)) if n else 0
print(f'{m.group(1)}/{m.group(2)}' if m else f'0/{total}')" "$s")
  wait=$(python3 -c "
import re,sys; s=sys.argv[1]
m=re.search(r'in flight, a mean ([0-9.]+) (ms|µs) later', s)
print(round(float(m.group(1)) * (1000 if m.group(2) == 'ms' else 1)) if m else '-')" "$s")
}

fio_mode() {
  printf '%-18s %-15s %5s %8s %8s %6s %8s %6s %8s %8s %10s %8s %10s %5s\n' card test busy model fio ratio \
    real ratio p50_mod p50_fio fio_late fio_wait real_late busy2
  # rw bs qd seconds (on the model)
  local cells=("randread 4k 1 5" "randread 4k 32 5" "randwrite 4k 1 10" "randwrite 4k 32 10"
    "write 1M 1 5" "write 1M 32 5" "write 128k 1 5")
  [ -n "${CELLS:-}" ] && IFS=, read -r -a cells <<<"$CELLS"
  for spec in "${specs[@]}"; do
    local card=${spec#sim:}
    card=${card%%,*}
    for cell in "${cells[@]}"; do
      set -- $cell
      local rw=$1 bs=$2 qd=$3 secs=$4
      [ "$rw" = randwrite ] && [ "$card" = kingston-sa04g ] && secs=30
      local bytes area_off area_len n warm
      bytes=$(python3 -c "print({'4k': 4096, '128k': 131072, '1M': 1048576}['$bs'])")
      read -r area_off area_len < <("$FLASHLAB" sim show "$spec" --json | python3 -c "
import json,sys; p=json.load(sys.stdin)['params']; n=p['capacity']; b=p['sector_size']
m=n//2//b*b; print(m, min(256<<20, n-m))")
      # How many requests take about $secs on the model; then the model's
      # figure over exactly that many (bench warms up with a tenth first,
      # a queue's worth at least).
      "$FLASHLAB" bench "$spec" --rw "$rw" --bs "$bs" --qd "$qd" --runtime "${secs}s" --no-store --json \
        >"$tmp/model.json" 2>/dev/null
      n=$(python3 -c "
import json; t=json.load(open('$tmp/model.json'))['bench']['tests'][0]; print(max(64, round(t['iops'] * $secs)))")
      warm=$(( n / 10 > qd ? n / 10 : qd ))
      "$FLASHLAB" bench "$spec" --rw "$rw" --bs "$bs" --qd "$qd" --size "$((n * bytes))" --no-store --json \
        >"$tmp/model.json" 2>/dev/null
      read -r mi ml < <(python3 -c "
import json; t=json.load(open('$tmp/model.json'))['bench']['tests'][0]
print(round(t['iops'],1), round(t['latency_ns']['p50']/1000))")
      local eng=psync
      [ "$qd" -gt 1 ] && eng=io_uring
      # bench's requests (its xorshift, seed 1; sequential ones in order),
      # warm-up first.
      python3 - "$rw" "$bytes" "$area_off" "$area_len" "$((warm + n))" >"$tmp/bench.iolog" <<'PY'
import sys
rw, bs, off, length, count = sys.argv[1:]
bs, off, length, count = int(bs), int(off), int(length), int(count)
M = (1 << 64) - 1
rng = (0x9E3779B97F4A7C15 & M) | 1
op = 'read' if rw.endswith('read') else 'write'
print('fio version 2 iolog\nx add\nx open')
for k in range(count):
    if rw.startswith('rand'):
        rng ^= (rng << 13) & M
        rng ^= rng >> 7
        rng ^= (rng << 17) & M
        b = rng % (length // bs)
    else:
        b = k % (length // bs)
    print(f'x {op} {off + b * bs} {bs}')
print('x close')
PY
      busy >/dev/null
      start "$spec" 1
      (cd "$tmp" && "${prog[@]}" fio --name=x --read_iolog="$tmp/bench.iolog" --replay_redirect="$dev" --direct=1 \
        --iodepth="$qd" --ioengine="$eng" --write_lat_log=x --log_avg_msec=0 --per_job_logs=0 \
        --output-format=json >"$tmp/fio.json" 2>/dev/null)
      stop
      local fio_late=$late fio_wait=$wait b1
      b1=$(busy)
      # fio's rate over the requests bench counts: from the warm-up's last
      # completion to the last (times in ms).
      read -r fi fl < <(python3 - "$tmp" "$warm" "$n" <<'PY'
import sys
tmp, warm, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rows = [l.split(',') for l in open(f'{tmp}/x_lat.log') if l.strip()]
done = sorted(int(r[0]) for r in rows)
lat = sorted(int(r[1]) for r in sorted(rows, key=lambda r: int(r[0]))[warm:])
span = max(1, done[-1] - done[warm - 1]) / 1e3
print(round((len(done) - warm) / span, 1), round(lat[len(lat) // 2] / 1000))
PY
)
      rm -f "$tmp"/x_lat.log "$tmp"/x_clat.log "$tmp"/x_slat.log
      start "$spec" 1
      "${prog[@]}" "$FLASHLAB" bench "$dev" --rw "$rw" --bs "$bs" --qd "$qd" --size "$((n * bytes))" --write \
        --no-preserve --no-store --json >"$tmp/real.json" 2>"$tmp/real.err" || { cat "$tmp/real.err" >&2; }
      stop
      local real_late=$late b2
      b2=$(busy)
      read -r ri < <(python3 -c "
import json; t=json.load(open('$tmp/real.json'))['bench']['tests'][0]; print(round(t['iops'],1))")
      printf '%-18s %-15s %5s %8s %8s %6s %8s %6s %8s %8s %10s %8s %10s %5s\n' "$card" "$rw $bs Q$qd" "$b1" "$mi" \
        "$fi" "$(python3 -c "print(f'{$fi/$mi:.2f}')")" "$ri" "$(python3 -c "print(f'{$ri/$mi:.2f}')")" "$ml" "$fl" \
        "$fio_late" "$fio_wait" "$real_late" "$b2"
    done
  done
}

scale_mode() {
  local scales=(${SCALES:-1 0.5 0.2 0.1 0.05 0.02 0.01})
  local rounds=${ROUNDS:-3}
  printf '%-18s %6s %5s %10s %10s %10s %12s\n' card scale busy align_2-8k scatter_p50 scatter_p90 late
  for spec in "${specs[@]}"; do
    local card=${spec#sim:}
    card=${card%%,*}
    "$FLASHLAB" align "$spec" --json --no-store >"$tmp/align-model.json" 2>/dev/null
    "$FLASHLAB" scatter "$spec" --json --no-store >"$tmp/scatter-model.json" 2>/dev/null
    for scale in "${scales[@]}"; do
      local rows=() lates=()
      busy >/dev/null
      for _ in $(seq "$rounds"); do
        start "$spec" "$scale"
        "${prog[@]}" "$FLASHLAB" align "$dev" --json --no-store >"$tmp/align.json" 2>"$tmp/run.err" \
          || cat "$tmp/run.err" >&2
        "${prog[@]}" "$FLASHLAB" scatter "$dev" --json --no-store >"$tmp/scatter.json" 2>"$tmp/run.err" || cat "$tmp/run.err" >&2
        stop
        lates+=("$late")
        rows+=("$(python3 - "$tmp" "$scale" <<'EOF'
import json, sys
tmp, scale = sys.argv[1], float(sys.argv[2])
def rows(f):
    return {r['boundary_bytes']: r for r in json.load(open(f))['align']['rows'] if 2048 <= r['boundary_bytes'] <= 8192}
m, e = rows(f'{tmp}/align-model.json'), rows(f'{tmp}/align.json')
ratios = [e[b][k] / scale / m[b][k] for b in m for k in ('pre_ns', 'on_ns', 'post_ns')]
worst = max(ratios, key=lambda r: abs(r - 1))
def q(f, p, s=1.0):
    v = sorted(x['latency_ns'] / s for x in json.load(open(f))['scatter']['points'])
    return v[int(p * (len(v) - 1))]
sm, se = f'{tmp}/scatter-model.json', f'{tmp}/scatter.json'
print(worst, q(se, 0.5, scale) / q(sm, 0.5), q(se, 0.9, scale) / q(sm, 0.9))
EOF
)")
      done
      # The worst round of each figure (farthest from 1).
      python3 - "$card" "$scale" "$(busy)" "${lates[*]}" "${rows[@]}" <<'EOF'
import os, sys
card, scale, busy, lates = sys.argv[1:5]
cols = list(zip(*[map(float, r.split()) for r in sys.argv[5:]]))
worst = [max(c, key=lambda r: abs(r - 1)) for c in cols]
print(f'{card:<18} {scale:>6} {busy:>5} {worst[0]:>10.2f} {worst[1]:>10.2f} {worst[2]:>10.2f}  {lates}')
if os.environ.get('EACH') == '1':
    for r in sys.argv[5:]:
        print('  round', ' '.join(f'{float(x):.2f}' for x in r.split()))
EOF
    done
  done
}

case $mode in
  fio) fio_mode ;;
  scale) scale_mode ;;
  *) echo "usage: $0 fio|scale [SPEC...]" >&2; exit 2 ;;
esac
