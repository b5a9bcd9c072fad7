#!/usr/bin/env bash
# This checkout's build against another revision's under the same fast-lane load: both started
# once (fresh PostgreSQL databases, the simulator's 100,000 items, no churn, both on core 0), then
# wrk -t1 -c50 on core 1 against each in turn, ROUNDS pairs alternating, each round 2 s of warm-up
# and DURATION (8) s measured: req/s, p99 and the process's CPU per request from /proc. Two
# processes measured in the same minutes: this machine's speed drifts by a third within the hour.
#   bash bench/diagnostics/fast-lane-ab.sh <revision>     (needs npm run build, wrk; PostgreSQL at 127.0.0.1)
# PATH_QUERY: the request (default: a search of the catalogue). The revision is built once (build-revision.sh).
set -e
cd "$(dirname "$0")/../.."
REV=$(git rev-parse --short "${1:?usage: fast-lane-ab.sh <revision>}")
TREE=$(bash bench/diagnostics/build-revision.sh "$REV")
ROOT=$PWD
ADMIN=adm_fast_lane_ab_0123456789abcdef
PATH_QUERY=${PATH_QUERY:-"/api/v1/merchant/items/search?market_hash_name=AK-47%20%7C%20Redline%20(Field-Tested)&max_price=500&limit=10"}
mkdir -p .tmp
start() { # tree, port, database: prints the process id once it is ready
  local flags; flags=$(cd "$1" && node -p 'require("./package.json").scripts.start.split(" ").filter((a) => a.startsWith("--")).join(" ")')
  psql -h 127.0.0.1 -U postgres -d test -qc "DROP DATABASE IF EXISTS $3" -c "CREATE DATABASE $3" >/dev/null 2>&1
  rm -rf ".tmp/$3-data"
  # exec: no shell is left holding this function's output open (its caller reads it to the end)
  (cd "$1" && exec env DATABASE_URL="postgres://postgres@127.0.0.1:5432/$3" DATA_DIR="$ROOT/.tmp/$3-data" PORT="$2" OPS_PORT=$(($2 + 1)) \
    ADMIN_TOKEN=$ADMIN SIM_CATALOGUE_SIZE=100000 SIM_CHURN_PER_SECOND=0 DEMO_MERCHANT=false RATE_LIMIT_RPS=1000000000 \
    RATE_LIMIT_BURST=1000000000 DUMP_INTERVAL_SECONDS=3600 taskset -c 0 node $flags dist/bundle/main.mjs > "$ROOT/.tmp/$3.log" 2>&1) < /dev/null &
  until curl -sf "http://127.0.0.1:$(($2 + 1))/ready" >/dev/null; do sleep 0.2; done
  ss -ltnp | grep ":$2 " | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2
}
keyOf() { # ops port: a new merchant's API key
  curl -s -X POST -H "Authorization: Bearer $ADMIN" -H 'Content-Type: application/json' "http://127.0.0.1:$1/admin/merchants" -d '{"name":"ab"}' |
    node -e 'let s = ""; process.stdin.on("data", (d) => s += d).on("end", () => console.log(JSON.parse(s).api_key))'
}
THEIRS=$(start "$TREE" 18100 mps_fast_ab_theirs); OURS=$(start . 18110 mps_fast_ab_ours)
stop() {
  kill -INT "$THEIRS" "$OURS" 2>/dev/null || true
  while kill -0 "$THEIRS" 2>/dev/null || kill -0 "$OURS" 2>/dev/null; do sleep 0.2; done
}
trap stop EXIT
THEIR_KEY=$(keyOf 18101); OUR_KEY=$(keyOf 18111)
sleep "${SETTLE:-20}"
round() { # label, pid, port, key
  taskset -c 1 wrk -t1 -c50 -d2s -H "Authorization: Bearer $4" "http://127.0.0.1:$3$PATH_QUERY" >/dev/null
  read -r U0 S0 < <(awk '{print $14, $15}' "/proc/$2/stat")
  OUT=$(taskset -c 1 wrk -t1 -c50 -d"${DURATION:-8}"s --latency -H "Authorization: Bearer $4" "http://127.0.0.1:$3$PATH_QUERY")
  read -r U1 S1 < <(awk '{print $14, $15}' "/proc/$2/stat")
  N=$(echo "$OUT" | awk '/requests in/{print $1}')
  echo "$1: $(echo "$OUT" | awk '/Requests\/sec/{print $2}') req/s, p99 $(echo "$OUT" | awk '$1=="99%"{print $2}'), $(echo "scale=1; ($U1 + $S1 - $U0 - $S0) * 10000 / $N" | bc) µs CPU per request"
}
for i in $(seq 1 "${ROUNDS:-3}"); do
  if [ $((i % 2)) = 1 ]; then round "$REV" "$THEIRS" 18100 "$THEIR_KEY"; round "this build" "$OURS" 18110 "$OUR_KEY"
  else round "this build" "$OURS" 18110 "$OUR_KEY"; round "$REV" "$THEIRS" 18100 "$THEIR_KEY"; fi
done
