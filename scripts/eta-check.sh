#!/bin/bash
# How well probe's progress ETAs hold on a real target (the goal: within a
# factor of 2): runs `flashlab probe LOOP --write` on a loop device over a
# 1 GiB file in an 80x24 tmux pane, samples the progress lines every
# 0.5 s, and prints, per step and for probe's overall line ("probe"), each
# ETA shown against the time the step (or the whole run) really took.
# Needs root (losetup) and tmux; detaches its loop device by name.
#
#     scripts/eta-check.sh [FLASHLAB_BINARY]
#     TARGET=/dev/loopN scripts/eta-check.sh   (a device you made, e.g. by
#                                              `flashlab emulate`: left as is)
#     SAMPLES=FILE scripts/eta-check.sh        (keep every sampled line, each
#                                              with its second, in FILE)
set -eu
BIN=${1:-target/release/flashlab}
BIN=$(realpath "$BIN")
DIR=$(mktemp -d)
if [ -n "${TARGET:-}" ]; then
  L=$TARGET
  OURS=
else
  IMG="$DIR/card.img"
  truncate -s 1G "$IMG"
  L=$(losetup -f --show "$IMG")
  OURS=$L
fi
cleanup() {
  tmux kill-session -t flashlab-eta 2>/dev/null || true
  if [ -n "$OURS" ]; then losetup -d "$OURS" 2>/dev/null || true; fi
  rm -rf "$DIR"
}
trap cleanup EXIT
tmux new -d -s flashlab-eta -x 80 -y 24
# The end marker is computed by the shell in the pane, so the typed
# command line does not already contain it.
tmux send-keys -t flashlab-eta \
  "FLASHLAB_DB=$DIR/db.sqlite $BIN probe $L --write --journal-dir $DIR/j; echo END-\$((40+2))" Enter
start=$(date +%s.%N)
samples="$DIR/samples"
: > "$samples"
for _ in $(seq 1 2400); do
  sleep 0.5
  # probe's overall line, a step's bar, its spinner before the bar (name
  # and elapsed time only), or the end marker: each line shown, with the
  # sample's second.
  lines=$(tmux capture-pane -t flashlab-eta -p | grep -E "ETA|END-42|^[^ ]+ [a-z-]+ [0-9]+[smh]$" || true)
  now=$(echo "$(date +%s.%N) - $start" | bc)
  printf '%s\n' "$lines" | while IFS= read -r line; do printf '%s %s\n' "$now" "$line"; done >> "$samples"
  case "$lines" in *END-42*) break ;; esac
done
if [ -n "${SAMPLES:-}" ]; then cp "$samples" "$SAMPLES"; fi
# Per step: when it began (a sample's time less the elapsed time its line
# shows, the spinner's before the bar's) and was last seen, and each ETA
# shown (seconds or minutes as indicatif words them) as a predicted end.
awk '
  function secs(x,   v) {
    gsub(/[()]/, "", x); v = x + 0
    if (x ~ /m$/) v *= 60; if (x ~ /h$/) v *= 3600
    return v
  }
  NF >= 4 && $3 ~ /^[a-z-]+$/ && $NF ~ /^\(?[0-9]+[smh]\)?$/ {
    # The overall line of probe ("probe 5/8 open-au [...] ETA 1m, budget 9m")
    # counts as the step "probe".
    step = $3; t = $1; began = t - secs($NF)
    if (!(step in first)) { first[step] = began; order[++n] = step }
    if (began < first[step]) first[step] = began
    last[step] = t
    v = ""
    for (i = 1; i <= NF; i++) if ($i == "ETA") { v = $(i + 1); u = $(i + 2) }
    if (v ~ /^[0-9]+$/) {
      s = v; if (u ~ /^minute/) s = v * 60; if (u ~ /^hour/) s = v * 3600
      pred[step, ++k[step]] = t + s
    } else if (v ~ /^[0-9]+[smh][0-9m]*,$/) {
      # The short words of the overall line: 41s, 3m, 1h5m.
      sub(/,$/, "", v); s = 0
      if (v ~ /h/) { split(v, hm, "h"); s = hm[1] * 3600; v = hm[2] }
      s += secs(v)
      pred[step, ++k[step]] = t + s
    }
  }
  END {
    for (j = 1; j <= n; j++) {
      st = order[j]; took = last[st] - first[st] + 0.5; worst = 1
      for (i = 1; i <= k[st]; i++) {
        r = (pred[st, i] - first[st]) / took; if (r < 1) r = 1 / r
        if (r > worst) worst = r
      }
      printf "%-10s took %6.1f s; %3d ETAs shown; worst predicted/actual length ratio %.2f\n", st, took, k[st], worst
    }
  }' "$samples"
