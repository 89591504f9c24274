#!/usr/bin/env bash
# Hostile test of the preserving write path: kills writing runs at random
# moments and checks that no byte of the target is ever lost, through every
# name of the same bytes (a file, a hard link to it, two loop devices over it,
# a loop device over a loop device, and a loop device at a 1 MiB offset), on
# both I/O engines.
#
# Needs root (loop devices). Creates a temporary directory (under $WORKDIR,
# default /var/tmp) holding a 96 MiB file of random bytes, a hard link, a
# 96 MiB decoy file and the journal directory; attaches its own loop devices
# and detaches every one of them, by name, when it ends (also on failure);
# never touches a device it did not create. Nothing is written to a results
# store (--no-store, and FLASHLAB_DB points into the temporary directory).
#
#   sudo scripts/hostile.sh [TRIALS] [SEED]
#   sudo FLASHLAB=/path/to/flashlab scripts/hostile.sh 160 7
#
# After every trial the bytes are read through every name (a loop device
# has a page cache of its own) and, after `sync`, through the file again.
#
# TRIALS (default 150) kill/term trials: a random writing command, engine and
# name; SIGKILL (most), SIGTERM or SIGINT after 0-1500 ms; then `flashlab
# restore` through a random name of the same bytes (or by journal path),
# sometimes after the loop devices were detached and attached again under new
# numbers (sometimes with a decoy file of the same size at the old number),
# sometimes killing restore itself part-way; then the file's sha256 must be
# the original's. Besides, ALIAS_TRIALS (default TRIALS/5) alias trials: a
# long run holds one name while a writing run (and a restore) through every
# name must be refused with exit 2 and write nothing, or two runs start at
# once through two names and exactly one may run; PENDING_TRIALS (default
# TRIALS/15) trials where a crashed run's journal is pending and a writing run
# through every name must be refused (exit 2) naming `flashlab restore`; and
# MULTI_TRIALS (default TRIALS/5) trials of two writing runs on the same bytes
# under different journal directories (--journal-dir, FLASHLAB_JOURNAL_DIR,
# each user's default) and different users (root, and nobody through
# setpriv on the file and its hard link), at once or one after the other,
# each killed at a random moment; the second must be refused while the
# first's journal holds bytes, and restores by either user through any
# directory must end with the original bytes.
# SEED (default 1) seeds bash's RANDOM: the same seed gives the same choices.
#
# The binary is ${FLASHLAB:-target/release/flashlab} (relative to the
# repository root); it is not built here. Exit status: 0 when nothing was
# lost and nothing else went wrong, 1 otherwise. The temporary directory is
# removed, or kept (and named) when something went wrong, or with KEEP=1.
set -euo pipefail

TRIALS=${1:-150}
SEED=${2:-1}
ALIAS_TRIALS=${ALIAS_TRIALS:-$((TRIALS / 5))}
PENDING_TRIALS=${PENDING_TRIALS:-$((TRIALS / 15 > 0 ? TRIALS / 15 : 1))}
MULTI_TRIALS=${MULTI_TRIALS:-$((TRIALS / 5 > 0 ? TRIALS / 5 : 1))}
SIZE_MIB=96

[ "$(id -u)" -eq 0 ] || { echo "hostile.sh needs root (loop devices)" >&2; exit 2; }
cd "$(dirname "$0")/.."
BIN=${FLASHLAB:-target/release/flashlab}
[ -x "$BIN" ] || { echo "no flashlab binary at $BIN (build it, or set FLASHLAB)" >&2; exit 2; }
BIN=$(realpath "$BIN")
RANDOM=$SEED

work=$(mktemp -d "${WORKDIR:-/var/tmp}/flashlab-hostile.XXXXXX")
chmod 755 "$work" # nobody (65534) reaches the file and its own home
J=$work/journals
J2=$work/journals-shared # mode 1777: root's and nobody's runs both use it
J3=$work/journals-env    # named by FLASHLAB_JOURNAL_DIR alone
NOBODY_HOME=$work/nobody
mkdir -p "$J" "$work/logs" "$work/stuck" "$J2" "$NOBODY_HOME"
chmod 1777 "$J2"
chown 65534:65534 "$NOBODY_HOME"
export FLASHLAB_DB=$work/results.sqlite
export FLASHLAB_JOURNAL_DIR=$work/default-journals
# Every directory a journal of this script's runs can be in.
JDIRS=("$J" "$J2" "$J3" "$FLASHLAB_JOURNAL_DIR" "$NOBODY_HOME/.local/state/flashlab/journals")
IMG=$work/img
LINK=$work/img.link
DECOY=$work/decoy
ORIG=$work/img.orig
LOG=$work/hostile.log

LOOPS=()    # every loop device this script attached and has not detached
BGPIDS=()   # background flashlab runs of the current trial
failed=0

detach() { # detach one loop device of ours, by name
  local dev=$1 i keep=()
  losetup -d "$dev" 2>/dev/null || echo "warning: could not detach $dev" >&2
  for i in "${LOOPS[@]}"; do [ "$i" = "$dev" ] || keep+=("$i"); done
  LOOPS=("${keep[@]}")
}
cleanup() {
  local p i
  for p in "${BGPIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  # Newest first: a loop over a loop goes before the loop it rests on.
  for ((i = ${#LOOPS[@]} - 1; i >= 0; i--)); do losetup -d "${LOOPS[i]}" 2>/dev/null || true; done
  if [ "$failed" -eq 0 ] && [ "${KEEP:-0}" != 1 ]; then
    rm -rf "$work"
  else
    echo "kept $work (logs in $work/logs, journals in $J)" >&2
  fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

attach() { # attach FILE [OFFSET] -> $DEV
  if [ -n "${2:-}" ]; then DEV=$(losetup -f --show -o "$2" "$1"); else DEV=$(losetup -f --show "$1"); fi
  LOOPS+=("$DEV")
}

# ---------------------------------------------------------------- randomness
rnd() { R=$(((RANDOM << 15 | RANDOM) % $1)); } # R in [0, $1)
pick() { rnd $#; local a=("$@"); P=${a[R]}; }  # P = one of the arguments
chance() { rnd 100; [ "$R" -lt "$1" ]; }       # true with $1 percent
msleep() { sleep "$(printf '%d.%03d' $(($1 / 1000)) $(($1 % 1000)))"; }

# ---------------------------------------------------------------- the names
# NAME[n]: the path; OFF[n]: where its byte 0 lies in the file.
declare -A NAME OFF
NAMES=(file link A B C D)
attach_names() {
  attach "$IMG"; NAME[A]=$DEV
  attach "$IMG"; NAME[B]=$DEV
  attach "${NAME[A]}"; NAME[C]=$DEV # a loop over loop A
  attach "$IMG" 1048576; NAME[D]=$DEV
}
OLD_LOOPS=()
reattach_names() { # new numbers first (so none is reused), then the old ones go
  local old=("${NAME[C]}" "${NAME[D]}" "${NAME[B]}" "${NAME[A]}") d
  attach_names
  for d in "${old[@]}"; do detach "$d"; done
  OLD_LOOPS=("${old[@]}")
}

sha() { sha256sum "$1" | cut -d' ' -f1; }
sha_except() { # sha256 of the file without [off, off+len)
  { head -c "$1" "$IMG"; tail -c +"$(($1 + $2 + 1))" "$IMG"; } | sha256sum | cut -d' ' -f1
}
journals() { # every journal in every directory a run of ours used -> JS
  local d f
  JS=()
  for d in "${JDIRS[@]}"; do
    for f in "$d"/*.fljournal; do [ -e "$f" ] && JS+=("$f"); done
  done
  return 0
}
has_journal() { journals; [ "${#JS[@]}" -gt 0 ]; }
# What `flashlab restore --json` lists: "HOLDING EMPTY UNREADABLE" journals.
# (the listing covers the whole machine: ours are those under $work)
pending_kinds() {
  "$BIN" restore --json --journal-dir "$J" 2>/dev/null | python3 -c '
import json, sys
p = [j for j in json.load(sys.stdin).get("pending", []) if j["journal"].startswith(sys.argv[1])]
print(sum(1 for j in p if (j.get("bytes") or 0) > 0), sum(1 for j in p if j.get("bytes") == 0),
      sum(1 for j in p if j.get("error")))' "$work/" 2>/dev/null || echo "? ? ?"
}

# ---------------------------------------------------------------- counters
declare -A KIND
crash_trials=0 kill_sent=0 term_sent=0 int_sent=0 landed=0 landed_kill=0 landed_term=0
restores=0 restores_killed=0 restores_refused=0 reattached=0 decoys=0
refusals=0 lost_trials=0 lost_bytes=0 false_verified=0 panics=0
missed_refusals=0 wrote_while_refused=0 bad_exit=0 stuck=0 term_left_journal=0 both_refused=0
term_died=0 term_left_empty=0 stale_views=0 busy_after_kill=0
PROBLEMS=() NOTES=()
problem() { # something the promise rules out: the run fails
  failed=1
  PROBLEMS+=("trial $trial: $*")
  echo "PROBLEM (trial $trial): $*" | tee -a "$LOG" >&2
}
note() { # odd but no byte at risk: reported, the run does not fail for it
  NOTES+=("trial $trial: $*")
  echo "note (trial $trial): $*" >>"$LOG"
}
log() { echo "$*" >>"$LOG"; }

# ---------------------------------------------------------------- commands
COMMANDS=(pattern pattern pattern open-au fat au page capacity bench probe)
cmd_for() { # cmd_for KIND TARGET ENGINE -> CMD array
  local k=$1 t=$2 e=$3
  case $k in
    # --max 3 (2 on D, 1 MiB shorter): --max 4 does not fit on 96 MiB
    # (refused before writing).
    open-au) CMD=(open-au "$t" --write --erase-size 1M --max "$([ "$t" = "${NAME[D]}" ] && echo 2 || echo 3)" --no-store) ;;
    fat) CMD=(fat "$t" --write --erase-size 1M --no-store) ;;
    au) CMD=(au "$t" --write --no-store) ;;
    page) CMD=(page "$t" --write --erase-size 1M --no-store) ;;
    capacity) CMD=(capacity "$t" --write --push 8M --no-store) ;;
    bench) CMD=(bench "$t" --write --rw randwrite --bs 4k --qd 1,8 --size 4M --no-store) ;;
    probe) CMD=(probe "$t" --write --erase-size 1M --no-store) ;;
    pattern) CMD=(debug write-pattern "$t" --range 8M+8M --write --pause-ms 5 --passes 20) ;;
    # ~3 s: longer than the second run's 1 s wait for a writer to go away
    race) CMD=(debug write-pattern "$t" --range 8M+8M --write --pause-ms 5 --passes 60) ;;
    long) CMD=(debug write-pattern "$t" --range 8M+8M --write --pause-ms 5 --passes 1000000) ;;
  esac
  CMD+=(--engine "$e" --journal-dir "$J")
}
# Start a run in the background with default signal dispositions (a
# background job of a script ignores SIGINT otherwise) -> $PID
start() { # start LOGNAME CMD...
  local out=$1; shift
  env --default-signal=INT,TERM "$BIN" "$@" >"$out.out" 2>"$out.err" &
  PID=$!
  BGPIDS+=("$PID")
}
reap() { # reap PID -> $RC
  RC=0
  wait "$1" 2>/dev/null || RC=$? # (no "Killed" line from bash)
  local p keep=()
  for p in "${BGPIDS[@]}"; do [ "$p" = "$1" ] || keep+=("$p"); done
  BGPIDS=("${keep[@]}")
}
check_rc() { # check_rc WHAT RC ERRFILE: a panic or an unexpected status is a problem
  if [ "$2" -eq 101 ] || grep -q "panicked" "$3" 2>/dev/null; then
    panics=$((panics + 1))
    problem "$1 panicked (exit $2): $(head -c 600 "$3")"
  fi
}

# ---------------------------------------------------------------- restore
VERIFIED_SAID=0
# One restore through a random name (or the journal's path), maybe killed.
restore_once() {
  local n=$1 how what killit=0 delay rc out
  restores=$((restores + 1))
  out=$work/logs/t$trial.r$restores
  if [ "$n" = journal ] && has_journal; then
    pick "${JS[@]}"; what=$P; how=journal
  else
    [ "$n" = journal ] && { pick "${NAMES[@]}"; n=$P; }
    what=${NAME[$n]}; how=$n
  fi
  pick psync io_uring
  local cmd=(restore "$what" --journal-dir "$J" --engine "$P")
  chance 30 && killit=1
  start "$out" "${cmd[@]}"
  if [ "$killit" = 1 ]; then
    rnd 151; delay=$R
    msleep "$delay"
    kill -KILL "$PID" 2>/dev/null || true
  fi
  reap "$PID"; rc=$RC
  log "  restore via $how ($what) ${cmd[*]:2}: exit $rc$([ $killit = 1 ] && echo " (SIGKILL after ${delay}ms)") :: $(tr '\n' ' ' <"$out.err" | head -c 300)"
  check_rc "restore via $how" "$rc" "$out.err"
  if [ "$rc" -eq 137 ]; then
    restores_killed=$((restores_killed + 1))
  elif [ "$rc" -eq 2 ]; then
    restores_refused=$((restores_refused + 1))
    # No other run is going in a crash trial: "in use" is the killed run.
    if [ "$kind_now" = crash ] && grep -q "is in use" "$out.err"; then
      busy_after_kill=$((busy_after_kill + 1))
      note "restore via $how right after the run was killed and reaped was refused as in use: $(head -n 1 "$out.err")"
    fi
  elif [ "$rc" -ne 0 ]; then
    bad_exit=$((bad_exit + 1))
    problem "restore via $how ($what) exited $rc: $(head -c 400 "$out.err")"
  fi
  grep -q "verified" "$out.err" && VERIFIED_SAID=1
  return 0
}
# Restore until no journal is left: random names first, then the run's own
# bytes (D for a run on D, else the file), which must work.
restore_all() { # restore_all HOME_NAME
  local home=$1 i
  VERIFIED_SAID=0
  # Always at least one restore, through a random name (or the journal).
  for ((i = 0; i < 6; i++)); do
    if chance 20; then restore_once journal; else pick "${NAMES[@]}"; restore_once "$P"; fi
    has_journal || break
  done
  has_journal && restore_once "$home"
  has_journal && restore_once "$home"
  if has_journal; then
    stuck=$((stuck + 1))
    problem "journal still pending after restores through every path: ${JS[*]}; $("$BIN" restore --journal-dir "$J" 2>&1 | tail -5)"
    mv "${JS[@]}" "$work/stuck/" 2>/dev/null || true
  fi
}
# The bytes must be the original again, seen through every name (as a user
# reading it would see them: a loop device has a page cache of its own), and
# still after `sync` (a loop device over a loop device writes into the lower
# one's page cache, which the kernel writes back up to 30 s later). Count what
# was lost, and put the original back for the next trial.
check_bytes() { # check_bytes WHAT
  local n want got bad=() lost=0
  for n in file A B C D; do
    want=$ORIG_SHA; [ "$n" = D ] && want=$ORIG_SHA_D
    got=$(sha "${NAME[$n]}")
    [ "$got" = "$want" ] || bad+=("$n")
  done
  sync
  if [ "$(sha "$IMG")" != "$ORIG_SHA" ]; then
    lost=$(cmp -l "$ORIG" "$IMG" | wc -l || true)
    lost_trials=$((lost_trials + 1)); lost_bytes=$((lost_bytes + lost))
    cmp -l "$ORIG" "$IMG" | head -3 >>"$LOG" || true
    local first
    first=$(cmp "$ORIG" "$IMG" | awk '{ gsub(",", "", $5); print $5 - 1 }' || true)
    problem "$1: after sync the file differs from the original ($lost bytes differ; first at offset $first)$([ "${#bad[@]}" -gt 0 ] && echo "; before sync these names already showed other bytes: ${bad[*]}")"
  elif [ "${#bad[@]}" -gt 0 ]; then
    stale_views=$((stale_views + 1))
    problem "$1: the file is right, but reading through ${bad[*]} shows other bytes (a stale page cache)"
  fi
  if [ "$lost" != 0 ] || [ "${#bad[@]}" -gt 0 ]; then
    if [ "$VERIFIED_SAID" = 1 ]; then
      false_verified=$((false_verified + 1))
      problem "$1: a restore (or the run) said \"verified\", yet the bytes differ"
    fi
    # The next trial starts from the original, with no loop device caching
    # anything else.
    for n in C D B A; do blockdev --flushbufs "${NAME[$n]}"; done
    dd if="$ORIG" of="$IMG" bs=1M conv=notrunc,fsync status=none
    sync
    for n in C D B A; do blockdev --flushbufs "${NAME[$n]}"; done
  fi
  if [ "$(sha "$DECOY")" != "$DECOY_SHA" ]; then
    problem "$1: the decoy file (never a target) changed"
    DECOY_SHA=$(sha "$DECOY")
  fi
}

# ---------------------------------------------------------------- trials
crash_trial() {
  crash_trials=$((crash_trials + 1))
  local kind engine tn sig delay out had=0 home rc before
  pick "${COMMANDS[@]}"; kind=$P
  pick psync io_uring; engine=$P
  pick file file A A B B C C link D; tn=$P
  rnd 100; if [ "$R" -lt 70 ]; then sig=KILL; elif [ "$R" -lt 85 ]; then sig=TERM; else sig=INT; fi
  rnd 1501; delay=$R
  KIND["crash:$kind"]=$((${KIND["crash:$kind"]:-0} + 1))
  before=$(sha "$IMG")
  [ "$before" = "$ORIG_SHA" ] || problem "the file changed between trials"
  cmd_for "$kind" "${NAME[$tn]}" "$engine"
  out=$work/logs/t$trial.run
  log "trial $trial: crash $kind on $tn (${NAME[$tn]}) engine $engine, SIG$sig after ${delay}ms"
  start "$out" "${CMD[@]}"
  msleep "$delay"
  has_journal && had=1
  kill -"$sig" "$PID" 2>/dev/null || true
  case $sig in KILL) kill_sent=$((kill_sent + 1)) ;; TERM) term_sent=$((term_sent + 1)) ;; INT) int_sent=$((int_sent + 1)) ;; esac
  reap "$PID"; rc=$RC
  log "  run exit $rc :: $(tail -n 3 "$out.err" | tr '\n' ' ' | head -c 300)"
  check_rc "$kind" "$rc" "$out.err"
  VERIFIED_SAID=0
  if [ "$sig" = KILL ]; then
    if has_journal; then landed=$((landed + 1)); landed_kill=$((landed_kill + 1)); fi
    [ "$rc" -eq 137 ] || [ "$rc" -eq 0 ] || { bad_exit=$((bad_exit + 1)); problem "$kind exited $rc (SIGKILL sent)"; }
  else
    local want=143; [ "$sig" = INT ] && want=130
    if [ "$rc" -eq "$want" ]; then
      [ "$had" = 1 ] && { landed=$((landed + 1)); landed_term=$((landed_term + 1)); }
      # Handled, the signal prints "interrupted by SIGTERM"; without it the
      # run died of the signal's default action (no restore of its own).
      if ! grep -q "interrupted by SIG" "$out.err"; then
        term_died=$((term_died + 1))
        log "  died of SIG$sig (no \"interrupted by\" message)"
      fi
      if has_journal; then
        local pk
        pk=$(pending_kinds)
        log "  journals left (holding, empty, unreadable): $pk"
        if [ "${pk%% *}" = 0 ] && [ "${pk##* }" = 0 ]; then
          term_left_empty=$((term_left_empty + 1))
          note "$kind ended by SIG$sig after ${delay}ms (exit $rc$(grep -q "interrupted by SIG" "$out.err" || echo ", died of the signal: no \"interrupted\" message")) left an empty journal that \`flashlab restore\` lists as pending: ${JS[*]}"
        else
          term_left_journal=$((term_left_journal + 1))
          problem "$kind exited $rc after SIG$sig but left a journal holding bytes pending ($pk): ${JS[*]}"
        fi
      fi
    elif [ "$rc" -ne 0 ]; then
      bad_exit=$((bad_exit + 1))
      problem "$kind exited $rc after SIG$sig (want $want, or 0 if it had ended): $(tail -n 2 "$out.err")"
    fi
  fi
  local run_verified=0
  grep -q "verified" "$out.err" && run_verified=1
  # Sometimes the loop devices go and come back under other numbers; the
  # run's old number may then show a decoy file of the same size.
  local decoy_dev=""
  if [ "$tn" != file ] && [ "$tn" != link ] && chance 30; then
    local oldname=${NAME[$tn]} i
    reattached=$((reattached + 1))
    reattach_names
    log "  loops attached again: A=${NAME[A]} B=${NAME[B]} C=${NAME[C]} D=${NAME[D]} (was $oldname)"
    if chance 40 && losetup "$oldname" "$DECOY" 2>/dev/null; then
      decoy_dev=$oldname; LOOPS+=("$decoy_dev"); decoys=$((decoys + 1))
      log "  decoy file attached at $oldname"
    fi
  fi
  home=file; [ "$tn" = D ] && home=D
  if [ -n "$decoy_dev" ] && chance 60 && has_journal; then restore_once journal; fi
  restore_all "$home"
  [ "$run_verified" = 1 ] && VERIFIED_SAID=1
  [ -n "$decoy_dev" ] && detach "$decoy_dev"
  check_bytes "crash $kind on $tn, SIG$sig after ${delay}ms"
}

# A writing run (and a restore) through every name while NAME is held: each
# must be refused (exit 2) and write nothing outside the holder's range.
refuse_all() { # refuse_all HOLDER_JOURNALS_COUNT WANT_TEXT
  local n kind rc out engine njs=$1 want=$2
  for n in "${NAMES[@]}"; do
    pick "${COMMANDS[@]}"; kind=$P
    pick psync io_uring; engine=$P
    cmd_for "$kind" "${NAME[$n]}" "$engine"
    out=$work/logs/t$trial.second-$n
    rc=0
    timeout -s KILL 90 "$BIN" "${CMD[@]}" >"$out.out" 2>"$out.err" || rc=$?
    refusals=$((refusals + 1))
    log "  second run $kind on $n (${NAME[$n]}) engine $engine: exit $rc :: $(head -n 2 "$out.err" | tr '\n' ' ' | head -c 300)"
    check_rc "second run $kind on $n" "$rc" "$out.err"
    if [ "$rc" -ne 2 ]; then
      missed_refusals=$((missed_refusals + 1))
      problem "second run '$kind' through $n (${NAME[$n]}) was not refused: exit $rc: $(head -n 3 "$out.err")"
    elif [ -n "$want" ] && ! grep -qF "$want" "$out.err"; then
      missed_refusals=$((missed_refusals + 1))
      problem "second run '$kind' through $n refused without naming '$want': $(head -n 3 "$out.err")"
    fi
    journals
    if [ "${#JS[@]}" -ne "$njs" ]; then
      problem "second run '$kind' through $n left ${#JS[@]} journals (want $njs): ${JS[*]}"
    fi
  done
}

hold_trial() {
  local holder engine off rc before_ex after_ex sig out n
  KIND[alias:hold]=$((${KIND[alias:hold]:-0} + 1))
  pick "${NAMES[@]}"; holder=$P
  pick psync io_uring; engine=$P
  off=$((OFF[$holder] + (8 << 20)))
  [ "$(sha "$IMG")" = "$ORIG_SHA" ] || problem "the file changed between trials"
  before_ex=$(sha_except "$off" $((8 << 20)))
  cmd_for long "${NAME[$holder]}" "$engine"
  out=$work/logs/t$trial.holder
  log "trial $trial: hold through $holder (${NAME[$holder]}) engine $engine"
  start "$out" "${CMD[@]}"
  local i
  for ((i = 0; i < 3000; i++)); do has_journal && break; msleep 10; done
  if ! has_journal; then problem "the holder made no journal in 30 s (a loaded machine): $(cat "$out.err")"; fi
  rnd 300; msleep "$R"
  refuse_all 1 ""
  # A restore through every name while the holder runs: refused too.
  for n in "${NAMES[@]}"; do
    rc=0
    "$BIN" restore "${NAME[$n]}" --journal-dir "$J" >"$out.rest.out" 2>"$out.rest.err" || rc=$?
    refusals=$((refusals + 1)); restores=$((restores + 1))
    log "  restore through $n while held: exit $rc :: $(head -n 1 "$out.rest.err")"
    check_rc "restore through $n while held" "$rc" "$out.rest.err"
    [ "$rc" -eq 2 ] || { missed_refusals=$((missed_refusals + 1)); problem "restore through $n (${NAME[$n]}) while a run holds $holder: exit $rc: $(head -n 2 "$out.rest.err")"; }
  done
  kill -0 "$PID" 2>/dev/null || problem "the holder ended early: $(tail -n 3 "$out.err")"
  after_ex=$(sha_except "$off" $((8 << 20)))
  if [ "$before_ex" != "$after_ex" ]; then
    wrote_while_refused=$((wrote_while_refused + 1))
    problem "bytes outside the holder's range changed while every second run was refused"
  fi
  pick KILL TERM TERM INT; sig=$P
  kill -"$sig" "$PID" 2>/dev/null || true
  reap "$PID"; rc=$RC
  log "  holder SIG$sig: exit $rc :: $(tail -n 2 "$out.err" | tr '\n' ' ')"
  check_rc "holder" "$rc" "$out.err"
  VERIFIED_SAID=0
  grep -q verified "$out.err" && VERIFIED_SAID=1
  case $sig in
    KILL) kill_sent=$((kill_sent + 1)); has_journal && { landed=$((landed + 1)); landed_kill=$((landed_kill + 1)); }
      local v=$VERIFIED_SAID; restore_all "$( [ "$holder" = D ] && echo D || echo file)"
      [ "$v" = 1 ] && VERIFIED_SAID=1 ;;
    TERM | INT)
      [ "$sig" = TERM ] && term_sent=$((term_sent + 1)) || int_sent=$((int_sent + 1))
      landed=$((landed + 1)); landed_term=$((landed_term + 1))
      local want=143; [ "$sig" = INT ] && want=130
      [ "$rc" -eq "$want" ] || { bad_exit=$((bad_exit + 1)); problem "holder exited $rc after SIG$sig (want $want)"; }
      has_journal && { term_left_journal=$((term_left_journal + 1)); problem "holder left a journal after SIG$sig"; restore_all file; } ;;
  esac
  check_bytes "hold through $holder, ended by SIG$sig"
}

# Two runs start at once through two names: exactly one may run.
race_trial() {
  local x y ex ey gap rx ry px py
  KIND[alias:race]=$((${KIND[alias:race]:-0} + 1))
  pick "${NAMES[@]}"; x=$P
  while :; do pick "${NAMES[@]}"; y=$P; [ "$y" != "$x" ] && break; done
  pick psync io_uring; ex=$P; pick psync io_uring; ey=$P
  rnd 60; gap=$R
  log "trial $trial: race $x ($ex) and $y ($ey), ${gap}ms apart"
  [ "$(sha "$IMG")" = "$ORIG_SHA" ] || problem "the file changed between trials"
  local t0=$SECONDS
  cmd_for race "${NAME[$x]}" "$ex"; start "$work/logs/t$trial.x" "${CMD[@]}"; px=$PID
  msleep "$gap"
  cmd_for race "${NAME[$y]}" "$ey"; start "$work/logs/t$trial.y" "${CMD[@]}"; py=$PID
  reap "$px"; rx=$RC; local tx=$((SECONDS - t0)); reap "$py"; ry=$RC
  refusals=$((refusals + 1))
  log "  exits $rx and $ry (first ended after ${tx}s, second after $((SECONDS - t0))s) :: $(head -n 1 "$work/logs/t$trial.x.err") / $(head -n 1 "$work/logs/t$trial.y.err")"
  check_rc "race run on $x" "$rx" "$work/logs/t$trial.x.err"
  check_rc "race run on $y" "$ry" "$work/logs/t$trial.y.err"
  VERIFIED_SAID=0
  if [ "$rx" -eq 0 ] && [ "$ry" -eq 0 ]; then
    missed_refusals=$((missed_refusals + 1))
    problem "two runs at once through $x (${NAME[$x]}) and $y (${NAME[$y]}) both ran (exit 0, 0)"
    VERIFIED_SAID=1
  elif [ "$rx" -eq 2 ] && [ "$ry" -eq 2 ]; then
    both_refused=$((both_refused + 1))
    note "two runs at once through $x and $y were both refused: $(head -n 1 "$work/logs/t$trial.x.err") / $(head -n 1 "$work/logs/t$trial.y.err")"
  elif ! { [ "$rx" -eq 0 ] && [ "$ry" -eq 2 ]; } && ! { [ "$rx" -eq 2 ] && [ "$ry" -eq 0 ]; }; then
    bad_exit=$((bad_exit + 1))
    problem "race through $x and $y: exits $rx and $ry"
  fi
  has_journal && { problem "journal left after the race: ${JS[*]}"; restore_all file; }
  check_bytes "race $x/$y"
}

# A crashed run's journal is pending: a writing run through every name is
# refused (exit 2) naming `flashlab restore`, and writes nothing.
pending_trial() {
  local x engine off i before_ex after_ex out
  KIND[pending]=$((${KIND[pending]:-0} + 1))
  pick "${NAMES[@]}"; x=$P
  pick psync io_uring; engine=$P
  off=$((OFF[$x] + (8 << 20)))
  [ "$(sha "$IMG")" = "$ORIG_SHA" ] || problem "the file changed between trials"
  before_ex=$(sha_except "$off" $((8 << 20)))
  cmd_for long "${NAME[$x]}" "$engine"
  out=$work/logs/t$trial.crashed
  log "trial $trial: pending journal from $x (${NAME[$x]}) engine $engine"
  start "$out" "${CMD[@]}"
  # Until the journal holds the range (an empty journal is not pending).
  for ((i = 0; i < 3000; i++)); do
    journals
    [ "${#JS[@]}" -gt 0 ] && [ "$(stat -c %s "${JS[0]}")" -gt $((8 << 20)) ] && break
    msleep 10
  done
  rnd 300; msleep $((50 + R))
  kill -KILL "$PID" 2>/dev/null || true
  reap "$PID"
  kill_sent=$((kill_sent + 1))
  has_journal && { landed=$((landed + 1)); landed_kill=$((landed_kill + 1)); }
  has_journal || problem "the crashed run left no journal"
  refuse_all 1 "flashlab restore"
  after_ex=$(sha_except "$off" $((8 << 20)))
  if [ "$before_ex" != "$after_ex" ]; then
    wrote_while_refused=$((wrote_while_refused + 1))
    problem "bytes outside the crashed run's range changed while a journal was pending"
  fi
  restore_all "$([ "$x" = D ] && echo D || echo file)"
  check_bytes "pending journal from $x"
}

# ---------------------------------------------------------------- users
# start_as LOGNAME WHO WHERE CMD...: a run in the background as root or
# nobody, its journal directory chosen by WHERE: J or J2 (--journal-dir),
# env (FLASHLAB_JOURNAL_DIR=J3 alone, root) or default (the user's own:
# root's FLASHLAB_JOURNAL_DIR, nobody's state directory in its home) -> $PID
start_as() {
  local out=$1 who=$2 where=$3; shift 3
  local args=("$@") pre=(env)
  case $where in
    J) args+=(--journal-dir "$J") ;;
    J2) args+=(--journal-dir "$J2") ;;
    env) pre=(env FLASHLAB_JOURNAL_DIR="$J3") ;;
    default) ;;
  esac
  if [ "$who" = nobody ]; then
    pre=(setpriv --reuid=65534 --regid=65534 --clear-groups
      env -u FLASHLAB_JOURNAL_DIR -u XDG_STATE_HOME HOME="$NOBODY_HOME" FLASHLAB_DB="$NOBODY_HOME/results.sqlite")
  fi
  env --default-signal=INT,TERM "${pre[@]}" "$BIN" "${args[@]}" >"$out.out" 2>"$out.err" &
  PID=$!
  BGPIDS+=("$PID")
}
# A user, a journal directory and a name of the bytes for one run -> WHO
# WHERE N (nobody reaches the file and its hard link only: the loop devices
# are root's)
pick_runner() {
  if chance 50; then
    WHO=nobody; pick J2 default; WHERE=$P; pick file link; N=$P
  else
    WHO=root; pick J J2 env default; WHERE=$P
    if [ "$LOOPLESS" = 1 ]; then pick file link; else pick "${NAMES[@]}"; fi
    N=$P
  fi
}
LOOPLESS=0
multi_left=0 multi_second_ran=0 multi_restores_refused=0
# One restore by a random user through a random directory and name (root
# when LAST is set), maybe killed part-way.
restore_as_once() { # restore_as_once LAST
  local who where n what out rc killit=0 delay
  restores=$((restores + 1))
  out=$work/logs/t$trial.r$restores
  if [ "$1" = 1 ]; then who=root; pick J default; where=$P; n=file
  elif chance 35; then who=nobody; pick J2 default; where=$P; pick file link journal; n=$P
  elif [ "$LOOPLESS" = 1 ]; then who=root; pick J J2 env default; where=$P; pick file link journal; n=$P
  else who=root; pick J J2 env default; where=$P; pick "${NAMES[@]}" journal; n=$P
  fi
  what=${NAME[$n]:-}
  if [ "$n" = journal ]; then journals; [ "${#JS[@]}" -gt 0 ] || return 0; pick "${JS[@]}"; what=$P; fi
  pick psync io_uring
  [ "$1" != 1 ] && chance 20 && killit=1
  start_as "$out" "$who" "$where" restore "$what" --engine "$P"
  if [ "$killit" = 1 ]; then rnd 151; delay=$R; msleep "$delay"; kill -KILL "$PID" 2>/dev/null || true; fi
  reap "$PID"; rc=$RC
  log "  restore as $who ($where) of $n ($what): exit $rc$([ $killit = 1 ] && echo " (SIGKILL after ${delay}ms)") :: $(tr '\n' ' ' <"$out.err" | head -c 300)"
  check_rc "restore as $who of $n" "$rc" "$out.err"
  case $rc in
    0) ;;
    137) restores_killed=$((restores_killed + 1)) ;;
    2) restores_refused=$((restores_refused + 1)); multi_restores_refused=$((multi_restores_refused + 1)) ;;
    *) bad_exit=$((bad_exit + 1)); problem "restore as $who ($where) of $n exited $rc: $(head -c 400 "$out.err")" ;;
  esac
  grep -q "verified" "$out.err" && VERIFIED_SAID=1
  return 0
}
# Two writing runs on the same bytes under other users and directories: at
# once, or the second after the first was killed; then restores by either
# user through any directory until no journal is left.
multi_trial() {
  local mode kx ky ex ey wx wy nx ny whox whoy dx dy gap rx ry px py pk loopless
  KIND[multi]=$((${KIND[multi]:-0} + 1))
  pick together after; mode=$P
  # nobody cannot claim root's loop devices, so with them attached each of
  # its writing runs is refused as "in use": most trials detach them first.
  LOOPLESS=0
  if chance 70; then
    LOOPLESS=1
    local d
    for d in C D B A; do detach "${NAME[$d]}"; done
  fi
  pick_runner; whox=$WHO; wx=$WHERE; nx=$N
  pick_runner; whoy=$WHO; wy=$WHERE; ny=$N
  pick pattern pattern pattern bench capacity open-au fat; kx=$P
  pick pattern pattern pattern bench capacity open-au fat; ky=$P
  pick psync io_uring; ex=$P; pick psync io_uring; ey=$P
  rnd 1501; dx=$R; rnd 1501; dy=$R; rnd 300; gap=$R
  [ "$(sha "$IMG")" = "$ORIG_SHA" ] || problem "the file changed between trials"
  log "trial $trial: multi ($mode): $kx as $whox ($wx) on $nx, $ky as $whoy ($wy) on $ny; kills after ${dx}ms and ${dy}ms"
  cmd_for "$kx" "${NAME[$nx]}" "$ex"; CMD=("${CMD[@]:0:${#CMD[@]}-2}")
  start_as "$work/logs/t$trial.x" "$whox" "$wx" "${CMD[@]}"; px=$PID
  if [ "$mode" = together ]; then
    msleep "$gap"
    cmd_for "$ky" "${NAME[$ny]}" "$ey"; CMD=("${CMD[@]:0:${#CMD[@]}-2}")
    start_as "$work/logs/t$trial.y" "$whoy" "$wy" "${CMD[@]}"; py=$PID
    msleep "$dx"; kill -KILL "$px" 2>/dev/null || true
    msleep "$dy"; kill -KILL "$py" 2>/dev/null || true
    reap "$px"; rx=$RC; reap "$py"; ry=$RC
  else
    msleep "$dx"; kill -KILL "$px" 2>/dev/null || true
    reap "$px"; rx=$RC
    pk=$(pending_kinds)
    cmd_for "$ky" "${NAME[$ny]}" "$ey"; CMD=("${CMD[@]:0:${#CMD[@]}-2}")
    start_as "$work/logs/t$trial.y" "$whoy" "$wy" "${CMD[@]}"; py=$PID
    msleep "$dy"; kill -KILL "$py" 2>/dev/null || true
    reap "$py"; ry=$RC
    refusals=$((refusals + 1))
    # The first run's journal holds bytes of the file: the second is
    # refused (a second killed before it got that far wrote nothing; one
    # that got past the refusals says "will write").
    if [ "${pk%% *}" != 0 ] && { [ "$ry" -eq 0 ] || grep -q "will write" "$work/logs/t$trial.y.err"; }; then
      missed_refusals=$((missed_refusals + 1))
      problem "$ky as $whoy ($wy) on $ny ran (exit $ry) while $kx's journal (as $whox, $wx) held bytes ($pk): $(head -n 2 "$work/logs/t$trial.y.err")"
    fi
  fi
  kill_sent=$((kill_sent + 2))
  log "  exits $rx and $ry :: $(head -n 1 "$work/logs/t$trial.x.err") / $(head -n 2 "$work/logs/t$trial.y.err" | tr '\n' ' ')"
  check_rc "multi run $kx" "$rx" "$work/logs/t$trial.x.err"
  check_rc "multi run $ky" "$ry" "$work/logs/t$trial.y.err"
  [ "$ry" -ne 2 ] && multi_second_ran=$((multi_second_ran + 1))
  journals
  if [ "${#JS[@]}" -gt 0 ]; then
    multi_left=$((multi_left + 1)); landed=$((landed + 1)); landed_kill=$((landed_kill + 1))
  fi
  VERIFIED_SAID=0
  local i
  for ((i = 0; i < 8; i++)); do
    has_journal || break
    restore_as_once 0
  done
  has_journal && restore_as_once 1
  has_journal && restore_as_once 1
  if has_journal; then
    stuck=$((stuck + 1))
    problem "journal still pending after restores by both users: ${JS[*]}; $("$BIN" restore 2>&1 | tail -5)"
    mv "${JS[@]}" "$work/stuck/" 2>/dev/null || true
  fi
  loopless=$LOOPLESS
  [ "$LOOPLESS" = 1 ] && attach_names
  LOOPLESS=0
  check_bytes "multi ($mode$([ "$loopless" = 1 ] && echo ", no loop devices")): $kx as $whox on $nx, $ky as $whoy on $ny"
}

# ---------------------------------------------------------------- main
echo "flashlab hostile test: $TRIALS kill/term trials, $ALIAS_TRIALS alias trials, $PENDING_TRIALS pending-journal trials, $MULTI_TRIALS two-user/two-directory trials, seed $SEED"
echo "binary: $BIN; work: $work"
head -c $((SIZE_MIB << 20)) /dev/urandom >"$IMG"
chown 65534:65534 "$IMG" # nobody's runs write it; root's restore nobody's journals over it
head -c $((SIZE_MIB << 20)) /dev/urandom >"$DECOY"
cp "$IMG" "$ORIG"
ln "$IMG" "$LINK"
ORIG_SHA=$(sha "$IMG")
ORIG_SHA_D=$(tail -c +1048577 "$IMG" | sha256sum | cut -d' ' -f1)
DECOY_SHA=$(sha "$DECOY")
NAME[file]=$IMG; NAME[link]=$LINK
OFF=([file]=0 [link]=0 [A]=0 [B]=0 [C]=0 [D]=1048576)
attach_names
echo "names: file=$IMG link=$LINK A=${NAME[A]} B=${NAME[B]} C=${NAME[C]} (over A) D=${NAME[D]} (offset 1 MiB)"

# The trial kinds, shuffled (seeded).
PLAN=()
for ((i = 0; i < TRIALS; i++)); do PLAN+=(crash); done
for ((i = 0; i < ALIAS_TRIALS; i++)); do if ((i % 3 == 2)); then PLAN+=(race); else PLAN+=(hold); fi; done
for ((i = 0; i < PENDING_TRIALS; i++)); do PLAN+=(pending); done
for ((i = 0; i < MULTI_TRIALS; i++)); do PLAN+=(multi); done
for ((i = ${#PLAN[@]} - 1; i > 0; i--)); do
  rnd $((i + 1)); t=${PLAN[i]}; PLAN[i]=${PLAN[R]}; PLAN[R]=$t
done

started=$SECONDS
trial=0 kind_now=""
for k in "${PLAN[@]}"; do
  trial=$((trial + 1))
  case $k in
    crash) kind_now=crash; crash_trial ;;
    hold) kind_now=hold; hold_trial ;;
    race) kind_now=race; race_trial ;;
    pending) kind_now=pending; pending_trial ;;
    multi) kind_now=multi; multi_trial ;;
  esac
  if ((trial % 10 == 0)); then
    echo "  $trial/${#PLAN[@]} trials, $((SECONDS - started)) s, problems so far: ${#PROBLEMS[@]}"
  fi
done

echo
echo "== flashlab hostile test, seed $SEED, $((SECONDS - started)) s =="
echo "trials by kind:"
for k in $(printf '%s\n' "${!KIND[@]}" | sort); do printf '  %-16s %d\n' "$k" "${KIND[$k]}"; done
echo "signals sent to runs: SIGKILL $kill_sent, SIGTERM $term_sent, SIGINT $int_sent"
echo "kills that landed while the run was writing (a journal existed): $landed (SIGKILL $landed_kill, SIGTERM/SIGINT $landed_term)"
echo "restores run: $restores (killed part-way: $restores_killed; refused with exit 2: $restores_refused)"
echo "loop devices attached again under new numbers: $reattached (a decoy at the old number: $decoys)"
echo "refusals checked: $refusals (missing: $missed_refusals; a refused run wrote: $wrote_while_refused; both of a race refused: $both_refused)"
echo "panics: $panics; unexpected exit codes: $bad_exit; stuck journals: $stuck; journals left after SIGTERM/SIGINT: $term_left_journal"
echo "two-user/two-directory trials: the second run ran in $multi_second_ran, journals were left in $multi_left, restores refused (another user's journal, a newer one first): $multi_restores_refused"
echo "bytes lost: $lost_bytes (in $lost_trials trials with a sha256 mismatch after sync)"
echo "trials where a name showed other bytes than the file (stale page cache): $stale_views"
echo "false \"verified\": $false_verified"
echo "restores refused as \"in use\" right after the killed run was reaped: $busy_after_kill"
echo "runs that died of SIGTERM/SIGINT itself (no \"interrupted by\" message): $term_died; empty journals they left: $term_left_empty"
if [ "${#NOTES[@]}" -gt 0 ]; then
  echo "notes (no byte at risk):"
  printf '  %s\n' "${NOTES[@]}"
fi
if [ "${#PROBLEMS[@]}" -gt 0 ]; then
  echo "problems:"
  printf '  %s\n' "${PROBLEMS[@]}"
fi
if [ "$lost_trials" -gt 0 ] || [ "$false_verified" -gt 0 ] || [ "${#PROBLEMS[@]}" -gt 0 ]; then
  failed=1
  exit 1
fi
echo "OK: nothing lost"
