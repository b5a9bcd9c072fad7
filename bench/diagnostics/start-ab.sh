#!/usr/bin/env bash
# Start to /ready of this checkout's build against another revision's, alternating on this machine:
# the ratio carries a start time measured on another machine over to this one (machines here
# differ by up to four times in speed, and one machine drifts by a quarter within the hour).
#   bash bench/diagnostics/start-ab.sh <revision> [pglite]     (needs npm run build; PostgreSQL at 127.0.0.1)
# ROUNDS (default 3) pairs, the revision's start first; SIZE and PIN as start-to-ready.sh (PIN
# defaults to 0 here: the issue's method). The revision is built once (build-revision.sh).
set -e
cd "$(dirname "$0")/../.."
REV=$(git rev-parse --short "${1:?usage: start-ab.sh <revision> [pglite]}")
TREE=$(bash bench/diagnostics/build-revision.sh "$REV")
# each tree's own script: it starts that tree's build with that tree's npm start flags
SCRIPT=bench/diagnostics/start-to-ready.sh
[ -f "$TREE/$SCRIPT" ] || { echo "$REV has no $SCRIPT" >&2; exit 1; }
seconds() { PIN=${PIN:-0} bash "$1/$SCRIPT" "$2" | sed -n 's/^ready after \([0-9.]*\) s.*/\1/p'; }
THEIRS=(); OURS=()
for round in $(seq 1 "${ROUNDS:-3}"); do
  THEIRS+=("$(seconds "$TREE" "$2")"); OURS+=("$(seconds . "$2")")
  echo "round $round: $REV ${THEIRS[-1]} s, this build ${OURS[-1]} s"
done
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
A=$(median "${THEIRS[@]}"); B=$(median "${OURS[@]}")
echo "medians: $REV $A s, this build $B s; ratio $(echo "scale=3; $B / $A" | bc)"
