#!/usr/bin/env bash
# The p99 of /items/search in 8-second rounds 20 s apart after /ready, with V8's collections in each
# round (--trace-gc): the service (npm start's node flags, or FLAGS; EXTRA: more flags) pinned to
# core 0 on a fresh PostgreSQL database (or PGlite's, with `pglite`) with the simulator's 100,000
# items, wrk -t1 -c50 on core 1.
#   bash bench/diagnostics/search-p99-over-time.sh [pglite]   (needs npm run build, wrk, PostgreSQL at 127.0.0.1)
cd "$(dirname "$0")/../.."
mkdir -p .tmp
FLAGS=${FLAGS:-$(node -p 'require("./package.json").scripts.start.split(" ").filter((a) => a.startsWith("--")).join(" ")')}
rm -rf .tmp/p99-data
if [ "$1" = "pglite" ]; then
  DBENV=""
else
  psql -h 127.0.0.1 -U postgres -d test -qc "DROP DATABASE IF EXISTS mps_p99" -c "CREATE DATABASE mps_p99" 2>/dev/null
  DBENV="DATABASE_URL=postgres://postgres@127.0.0.1:5432/mps_p99"
fi
env $DBENV DATA_DIR=.tmp/p99-data PORT=18090 OPS_PORT=18091 ADMIN_TOKEN=adm_p99_token_0123456789abcdef \
  SIM_CATALOGUE_SIZE=100000 SIM_CHURN_PER_SECOND=0 DEMO_MERCHANT=false LOG_LEVEL=info RATE_LIMIT_RPS=1000000000 RATE_LIMIT_BURST=1000000000 DUMP_INTERVAL_SECONDS=3600 \
  taskset -c 0 node $FLAGS --trace-gc $EXTRA dist/bundle/main.mjs > .tmp/p99.log 2>&1 &
PID=$!
until curl -sf http://127.0.0.1:18091/ready >/dev/null; do sleep 0.2; done
echo "ready"
KEY=$(curl -s -X POST -H 'Authorization: Bearer adm_p99_token_0123456789abcdef' -H 'Content-Type: application/json' http://127.0.0.1:18091/admin/merchants -d '{"name":"p99"}' | node -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).api_key))')
URL="http://127.0.0.1:18090/api/v1/merchant/items/search?market_hash_name=AK-47%20%7C%20Redline%20(Field-Tested)&max_price=500&limit=10"
for i in $(seq 1 ${ROUNDS:-6}); do
  L0=$(wc -l < .tmp/p99.log)
  OUT=$(taskset -c 1 wrk -t1 -c50 -d8s --latency -H "Authorization: Bearer $KEY" "$URL")
  RPS=$(echo "$OUT" | awk '/Requests\/sec/{print $2}')
  P99=$(echo "$OUT" | awk '$1=="99%"{print $2}')
  GCS=$(tail -n +$((L0+1)) .tmp/p99.log | grep -c "Mark-Compact\|Mark-sweep")
  SCAV=$(tail -n +$((L0+1)) .tmp/p99.log | grep -c "Scavenge")
  MAXP=$(tail -n +$((L0+1)) .tmp/p99.log | grep -oE "[0-9.]+ / [0-9.]+ ms" | awk '{if ($1>m) m=$1} END {print m}')
  echo "round $i: $RPS req/s p99 $P99; scavenges $SCAV, mark-compacts $GCS, longest GC $MAXP ms"
  sleep 12
done
kill $PID
