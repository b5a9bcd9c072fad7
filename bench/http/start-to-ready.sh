#!/usr/bin/env bash
# Start to /ready on a fresh database: SIZE (default 100000) simulator items, no churn; prints the
# time, the process's CPU and its RSS then (and SETTLE seconds later if SETTLE is set).
#   bash bench/http/start-to-ready.sh [pglite]     (needs npm run build; PostgreSQL at 127.0.0.1)
# The node flags are npm start's (package.json), or FLAGS if set. PIN=0 runs the service (all its
# threads) on core 0 with taskset, as the issue's method pins it. THREADS=1 prints each thread's CPU.
cd "$(dirname "$0")/../.."
FLAGS=${FLAGS:-$(node -p 'require("./package.json").scripts.start.split(" ").filter((a) => a.startsWith("--")).join(" ")')}
mkdir -p .tmp
# a service left running from an interrupted run would answer /ready at once
if curl -sf http://127.0.0.1:18081/ready >/dev/null 2>&1; then echo "port 18081 is taken: stop what listens there" >&2; exit 1; fi
if [ "$1" = "pglite" ]; then
  rm -rf .tmp/start-data; DBENV="DATA_DIR=.tmp/start-data"
else
  psql -h 127.0.0.1 -U postgres -d test -qc "DROP DATABASE IF EXISTS mps_start" -c "CREATE DATABASE mps_start" 2>/dev/null
  DBENV="DATABASE_URL=postgres://postgres@127.0.0.1:5432/mps_start DATA_DIR=.tmp/start-data"
fi
env $DBENV PORT=18080 OPS_PORT=18081 SIM_CATALOGUE_SIZE=${SIZE:-100000} SIM_CHURN_PER_SECOND=0 DEMO_MERCHANT=false LOG_LEVEL=info ${PIN:+taskset -c $PIN} node $FLAGS dist/bundle/main.mjs > .tmp/start.log 2>&1 &
PID=$!
START=$(date +%s.%N)
for i in $(seq 1 1200); do
  if curl -sf http://127.0.0.1:18081/ready >/dev/null 2>&1; then
    T=$(echo "$(date +%s.%N) - $START" | bc)
    read -r U S < <(awk '{print $14, $15}' /proc/$PID/stat)
    echo "ready after $T s; node CPU $(echo "scale=2; ($U + $S) / 100" | bc) s; RSS $(( $(awk '/VmRSS/{print $2}' /proc/$PID/status) / 1024 )) MB"
    # THREADS=1: each thread's CPU (main, V8's helpers, libuv's pool, the deflate and PGlite workers)
    # (the main thread's id is the process's; the other threads are all named "node")
    [ -n "$THREADS" ] && for t in /proc/$PID/task/*; do echo "  $([ "${t##*/}" = "$PID" ] && echo main || cat $t/comm): $(awk '{printf "%.2f", ($14 + $15) / 100}' $t/stat) s"; done | sort -t: -k2 -rn | awk -F': ' '$2 > 0.01'
    break
  fi
  sleep 0.1
done
sleep ${SETTLE:-0}
[ "${SETTLE:-0}" != 0 ] && echo "after ${SETTLE} s: RSS $(( $(awk '/VmRSS/{print $2}' /proc/$PID/status) / 1024 )) MB"
grep -o '"message":"catalogue reconciled[^}]*}[^}]*"timestamp":"[^"]*"' .tmp/start.log | head -2
kill $PID; wait $PID 2>/dev/null
