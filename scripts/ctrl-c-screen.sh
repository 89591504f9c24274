#!/bin/bash
# What an 80x24 terminal shows after Ctrl-C typed during a writing test
# (seen before it was fixed: the terminal's echo of "^C" wrapped a full-width progress bar
# and left a stale bar line above the report). Runs `flashlab bench LOOP
# --write` on a loop device over a 256 MiB file in a tmux pane, types
# Ctrl-C after DELAY seconds (default 3), prints the pane and says whether a
# progress line is left on it. Needs root (losetup) and tmux; detaches its
# loop device by name.
#
#     scripts/ctrl-c-screen.sh [FLASHLAB_BINARY]
set -eu
BIN=$(realpath "${1:-target/release/flashlab}")
DIR=$(mktemp -d)
IMG="$DIR/card.img"
truncate -s 256M "$IMG"
L=$(losetup -f --show "$IMG")
cleanup() {
  tmux kill-session -t flashlab-ctrlc 2>/dev/null || true
  losetup -d "$L" 2>/dev/null || true
  rm -rf "$DIR"
}
trap cleanup EXIT
tmux new -d -s flashlab-ctrlc -x 80 -y 24
tmux send-keys -t flashlab-ctrlc "clear; FLASHLAB_DB=$DIR/db.sqlite $BIN bench $L --write --journal-dir $DIR/j; echo END-\$((40+2))" Enter
sleep "${DELAY:-3}"
tmux send-keys -t flashlab-ctrlc C-c
for _ in $(seq 1 240); do
  sleep 0.5
  tmux capture-pane -t flashlab-ctrlc -p | grep -q "END-42" && break
done
screen=$(tmux capture-pane -t flashlab-ctrlc -p)
printf '%s\n' "$screen"
echo "----"
if printf '%s\n' "$screen" | grep -qE "ETA|\] +[0-9]+%|interrupted; writing"; then
  echo "a progress line is left on the screen"
  exit 1
fi
echo "no progress line left"
