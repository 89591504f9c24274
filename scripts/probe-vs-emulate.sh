#!/usr/bin/env bash
# flashlab's own real-device path against cards whose truth is known:
# `probe --write /dev/loopN` on an emulated card (loop + FUSE + flashlab
# emulate, at time scale 1: device time is real time) beside `probe SPEC` in
# process on the same card. Per card and I/O engine: the truth, each
# verdict with its confidence ("!" marks a confident verdict that is wrong,
# "?" an unsure one), and the device-seconds each took. Each engine gets a
# fresh emulation, so both start from the state the in-process card starts
# from. Run as root:
#
#   sudo scripts/probe-vs-emulate.sh [SPEC...]
#   sudo HARD=10 SEED=7 scripts/probe-vs-emulate.sh        # the default set
#   sudo ENGINES=psync scripts/probe-vs-emulate.sh sim:demo,capacity=256M
#   sudo ROWS=rows.jsonl scripts/probe-vs-emulate.sh   # also keep each card's row
#   sudo ROWS_ONLY=rows.jsonl scripts/probe-vs-emulate.sh   # table from kept rows
#   sudo KEEP=dir scripts/probe-vs-emulate.sh   # keep every run's JSON and stderr
#
# Without SPECs: demo, kingston-sa04g and toshiba-7au (each at 256-512 MiB,
# so capacity's reads stay short), then HARD generated cards of the hard
# family (seed SEED: large AUs with 4 KiB pages, 4 KiB sectors, slow hosts,
# jitter; `cargo run --release --example budget -- N SEED --specs`). The
# binary is ${FLASHLAB:-target/release/flashlab}; it is not built here.
# Emulations keep their state under a temporary directory and are stopped
# (SIGTERM, then `emulate --cleanup`) when the script ends, also on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" -eq 0 ] || { echo "probe-vs-emulate.sh needs root (emulate)" >&2; exit 2; }
FLASHLAB=$(realpath "${FLASHLAB:-target/release/flashlab}")
[ -x "$FLASHLAB" ] || { echo "no flashlab binary at $FLASHLAB (build it, or set FLASHLAB)" >&2; exit 2; }
read -r -a engines <<<"${ENGINES:-psync io_uring}"
specs=("$@")
if [ ${#specs[@]} -eq 0 ] && [ -z "${ROWS_ONLY:-}" ]; then
  specs=(
    "sim:demo,capacity=256M,au_size=1M"
    "sim:kingston-sa04g,capacity=256M"
    "sim:toshiba-7au,capacity=512M"
  )
  if [ "${HARD:-10}" -gt 0 ]; then
    mapfile -t hard < <(cargo run -q --release --example budget -- "${HARD:-10}" "${SEED:-7}" --specs 2>/dev/null)
    specs+=("${hard[@]}")
  fi
fi
tmp=$(mktemp -d)
pid=
stop() {
  if [ -n "$pid" ]; then
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    pid=
  fi
}
trap 'stop; FLASHLAB_EMULATE_DIR="$tmp/state" "$FLASHLAB" emulate --cleanup >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
export FLASHLAB_EMULATE_DIR="$tmp/state" FLASHLAB_DB="$tmp/results.sqlite" FLASHLAB_JOURNAL_DIR="$tmp/journals"

# One document's verdicts as one line of JSON (the summary probe prints).
verdicts() {
  python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
s = d.get("summary") or {}
def v(o, k="bytes"):
    return None if not o else [o.get(k), o.get("confidence", 0)]
oa = s.get("open_aus") or {}
print(json.dumps({
    "erase": v(s.get("erase_block")), "page": v(s.get("page")),
    "linear": v(oa.get("linear"), "count"), "random": v(oa.get("random"), "count"),
    "fat": v(s.get("fat_area"), "aus"), "device_s": d.get("device_time_s"),
    "error": (d.get("error") or {}).get("message")}))' "$1"
}

# KEEP=DIR: a copy of FILE as DIR/N-NAME, N the card's number in this run.
keep() { if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$1" "$KEEP/$n-$2"; fi; }

rows=()
if [ -n "${ROWS_ONLY:-}" ]; then
  mapfile -t rows <"$ROWS_ONLY"
  specs=()
fi
for spec in "${specs[@]}"; do
  truth=$("$FLASHLAB" sim show "$spec" --json | python3 -c '
import json, sys
p = json.load(sys.stdin)["params"]
print(json.dumps({"erase": p["au_size"], "page": p["page_size"], "linear": p["open_aus_linear"],
                  "random": p["open_aus_random"], "fat": p["fat_area_aus"]}))')
  "$FLASHLAB" probe "$spec" --json --no-store >"$tmp/model.json" 2>/dev/null || true
  n=$((${n:-0} + 1))
  keep "$tmp/model.json" model.json
  printf '%s\n' "$spec" >"$tmp/spec" && keep "$tmp/spec" spec
  row="{\"spec\": $(python3 -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$spec"), \"truth\": $truth, \"model\": $(verdicts "$tmp/model.json")"
  for engine in "${engines[@]}"; do
    : >"$tmp/out"
    "$FLASHLAB" emulate "$spec" >"$tmp/out" 2>"$tmp/emulate.err" &
    pid=$!
    for _ in $(seq 300); do [ -s "$tmp/out" ] && break; sleep 0.1; done
    dev=$(head -1 "$tmp/out")
    case $dev in /dev/loop*) ;; *) echo "emulate $spec: $(cat "$tmp/emulate.err")" >&2; stop; continue ;; esac
    start=$(date +%s.%N)
    "$FLASHLAB" probe "$dev" --write --engine "$engine" --json --no-store >"$tmp/real.json" 2>"$tmp/real.err" || true
    wall=$(python3 -c "import time; print(round(time.time() - $start, 1))")
    stop
    keep "$tmp/real.json" "$engine.json"
    keep "$tmp/real.err" "$engine.err"
    keep "$tmp/emulate.err" "$engine.emulate.err"
    # The summary is wrapped at 80 columns: one line first. Its words:
    # "N of M answers late (a mean X past their moment, the latest Y): the
    # machine did not keep up; ...".
    late=$(tr '\n' ' ' <"$tmp/emulate.err" | tr -s ' ' | grep -o '[0-9,]* of [0-9,]* answers late[^:]*' | head -1 || true)
    # "N requests reached the card after later ones": the card took those
    # out of the kernel's order (a sequential write's pieces as random).
    overtaken=$(tr '\n' ' ' <"$tmp/emulate.err" | tr -s ' ' | grep -Eo '[0-9,]* requests? reached the card after later ones' | head -1 || true)
    [ -n "$overtaken" ] && late="${late:+$late; }$overtaken"
    # The largest request the loop device passed on ("requests   up to 512
    # KiB each; ..."): a card whose host takes 512 KiB a command but got
    # 32 KiB pieces measures the path, not the card.
    pieces=$(grep -o 'up to [0-9.]* [KMG]iB' "$tmp/out" | head -1 || true)
    row+=", \"$engine\": $(verdicts "$tmp/real.json"), \"${engine}_wall\": $wall, \"${engine}_late\": \"$late\", \"${engine}_pieces\": \"$pieces\""
  done
  rows+=("$row}")
  # Each card's row as it ends, so a run cut short keeps what it measured
  # (ROWS=FILE; ROWS_ONLY=FILE renders such a file without measuring).
  [ -n "${ROWS:-}" ] && printf '%s\n' "$row}" >>"$ROWS"
  echo "done: $spec" >&2
done

printf '%s\n' "${rows[@]}" | python3 -c '
import json, sys
engines = sys.argv[1:]
MIB = 1 << 20
def size(b):
    if b is None: return "-"
    return "%gM" % (b / MIB) if b >= MIB else "%gK" % (b / 1024)
def cell(v, truth, key):
    if not v: return "-"
    val, c = v
    shown = size(val) if key in ("erase", "page") else ("-" if val is None else str(val))
    mark = "?" if c < 0.9 else ("" if val == truth else "!")
    return "%s %.2f%s" % (shown, c, mark)
keys = ["erase", "page", "linear", "random", "fat"]
wrong = {e: 0 for e in ["model"] + engines}
differ = {e: 0 for e in engines}
ratio = {e: [] for e in engines}
for line in sys.stdin:
    r = json.loads(line)
    t = r["truth"]
    print(r["spec"])
    print("  %-9s %s" % ("truth", "  ".join("%s %s" % (k, size(t[k]) if k in ("erase", "page") else t[k]) for k in keys)))
    for who in ["model"] + engines:
        v = r.get(who)
        if not v:
            continue
        cells = "  ".join("%s %s" % (k, cell(v.get(k), t[k], k)) for k in keys)
        extra = ""
        if who != "model":
            m = r["model"].get("device_s") or 0
            d = v.get("device_s") or 0
            if m: ratio[who].append(d / m)
            extra = "; %.1f s wall" % r.get(who + "_wall", 0) + (" (%s)" % r[who + "_late"] if r.get(who + "_late") else "")
            extra += "; requests %s" % r[who + "_pieces"] if r.get(who + "_pieces") else ""
            for k in keys:
                a, b = v.get(k), r["model"].get(k)
                if (a and a[1] >= 0.9) != (b and b[1] >= 0.9) or (a and b and a[1] >= 0.9 and a[0] != b[0]):
                    differ[who] += 1
        for k in keys:
            x = v.get(k)
            if x and x[1] >= 0.9 and x[0] != t[k]:
                wrong[who] += 1
        err = " ERROR: %s" % v["error"] if v.get("error") else ""
        print("  %-9s %s; %.1f device-s%s%s" % (who, cells, v.get("device_s") or 0, extra, err))
print()
print("confident and wrong: " + ", ".join("%s %d" % (w, n) for w, n in wrong.items()))
for e in engines:
    rs = sorted(ratio[e])
    if rs:
        print("%s: %d verdicts differ from the model in confidence or value; device time real/model median %.2fx, max %.2fx"
              % (e, differ[e], rs[len(rs) // 2], rs[-1]))
' "${engines[@]}"
