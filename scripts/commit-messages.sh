#!/usr/bin/env bash
# Commit messages a reader can scan: a subject of at most 72 characters,
# a blank line, then a body that says why. Checks every commit after BASE
# (default: cf3f7aa, the last one before the rule was kept; the history
# before it has subjects of up to 1,507 characters, left as they are).
#
#   scripts/commit-messages.sh [BASE]
#
# A clone without BASE (a shallow one) has nothing to check against: it
# says so and passes.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-cf3f7aa59f7fa0d6ede0e137a6c421225b88fb11}
if ! git cat-file -e "$base^{commit}" 2>/dev/null; then
  echo "commit-messages: $base is not in this clone (shallow?); nothing checked" >&2
  exit 0
fi
bad=0
for c in $(git rev-list --no-merges "$base..HEAD"); do
  subject=$(git log -1 --format=%s "$c")
  second=$(git log -1 --format=%B "$c" | sed -n 2p)
  body=$(git log -1 --format=%b "$c" | grep -c . || true)
  short=$(git log -1 --format=%h "$c")
  if [ ${#subject} -gt 72 ]; then
    echo "commit $short: the subject is ${#subject} characters (72 at most): $subject" >&2
    bad=1
  fi
  if [ -n "$second" ] || [ "$body" -eq 0 ]; then
    echo "commit $short: a blank line and a body should follow the subject: $subject" >&2
    bad=1
  fi
done
exit $bad
