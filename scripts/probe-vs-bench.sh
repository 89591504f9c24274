#!/usr/bin/env bash
# Does bench alone say what probe says? For N cards of the generated hard
# family (seed SEED), runs `probe SPEC` and `bench SPEC` in process and
# compares bench's figures: each test's rate, and each SD class verdict.
# A class met in one and missed in the other is a contradiction (one left
# unjudged is not). Prints the cards where a figure differs by more than
# 2x or a class is contradicted, then the counts.
#
#   scripts/probe-vs-bench.sh [N] [SEED]     (default 100 cards, seed 1)
#
# The binaries are ${FLASHLAB:-target/release/flashlab} and
# ${BUDGET:-target/release/examples/budget} (`cargo build --release
# --example budget`); neither is built here. Nothing is stored.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100}
SEED=${2:-1}
FLASHLAB=$(realpath "${FLASHLAB:-target/release/flashlab}")
BUDGET=$(realpath "${BUDGET:-target/release/examples/budget}")
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
"$BUDGET" "$N" "$SEED" --specs > "$DIR/specs"
while read -r spec; do
  "$FLASHLAB" probe "$spec" --json --no-store > "$DIR/p.json" 2>/dev/null || true
  "$FLASHLAB" bench "$spec" --json --no-store > "$DIR/b.json" 2>/dev/null || true
  python3 - "$spec" "$DIR/p.json" "$DIR/b.json" <<'PY' >> "$DIR/rows"
import json, sys
spec, p, b = sys.argv[1:]
def bench(path):
    try:
        d = json.load(open(path)).get("bench") or {}
    except ValueError:
        return {}, {}
    figures = {}
    for t in d.get("tests", []):
        figures[t["name"]] = (t["bytes_per_sec"], t["short_sample"])
    return figures, d.get("classes") or {}
(pf, pc), (bf, bc) = bench(p), bench(b)
far = [n for n in pf if n in bf and not pf[n][1] and not bf[n][1]
       and max(pf[n][0], bf[n][0]) > 2 * max(min(pf[n][0], bf[n][0]), 1e-9)]
clash = [c for c in pc if c in bc and pc[c] != bc[c]]
print(json.dumps({"spec": spec, "far": far, "clash": clash,
                  "p": {n: round(v[0] / 1e6, 2) for n, v in pf.items()},
                  "b": {n: round(v[0] / 1e6, 2) for n, v in bf.items()}}))
PY
done < "$DIR/specs"
python3 - "$DIR/rows" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
for r in rows:
    if r["far"] or r["clash"]:
        print(r["spec"])
        print("  over 2x apart:", ", ".join(r["far"]) or "-", "| classes contradicted:", ", ".join(r["clash"]) or "-")
        print("  probe MB/s:", r["p"])
        print("  bench MB/s:", r["b"])
print(f"{len(rows)} cards: a figure over 2x apart on {sum(1 for r in rows if r['far'])},"
      f" a class contradicted on {sum(1 for r in rows if r['clash'])}")
PY
