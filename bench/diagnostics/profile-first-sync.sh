#!/usr/bin/env bash
# Where a fresh start spends its CPU until /ready and the first reconciliation with the supplier
# (SIZE items, default 100,000; PostgreSQL at 127.0.0.1): node --cpu-prof with npm start's flags,
# summarised by bench/http/cpuprofile-summary.mjs.
#   [PIN=0] bash bench/diagnostics/profile-first-sync.sh     (needs npm run build; PIN: the service on that core)
cd "$(dirname "$0")/../.."
mkdir -p .tmp
psql -h 127.0.0.1 -U postgres -d test -qc "DROP DATABASE IF EXISTS mps_prof" -c "CREATE DATABASE mps_prof" 2>/dev/null
rm -rf .tmp/prof-data .tmp/prof; mkdir -p .tmp/prof
FLAGS=$(node -p 'require("./package.json").scripts.start.split(" ").filter((a) => a.startsWith("--")).join(" ")')
env DATABASE_URL=postgres://postgres@127.0.0.1:5432/mps_prof DATA_DIR=.tmp/prof-data PORT=18095 OPS_PORT=18096 \
  SIM_CATALOGUE_SIZE=${SIZE:-100000} SIM_CHURN_PER_SECOND=0 DEMO_MERCHANT=false LOG_LEVEL=info DUMP_INTERVAL_SECONDS=3600 \
  ${PIN:+taskset -c $PIN} node $FLAGS --cpu-prof --cpu-prof-dir=.tmp/prof dist/bundle/main.mjs > .tmp/prof.log 2>&1 &
PID=$!
START=$(date +%s.%N)
until grep -q "catalogue reconciled" .tmp/prof.log; do sleep 0.1; done
until curl -sf http://127.0.0.1:18096/ready >/dev/null; do sleep 0.1; done
echo "ready+reconciled after $(echo "$(date +%s.%N) - $START" | bc) s"
kill -TERM $PID; wait $PID
node bench/http/cpuprofile-summary.mjs .tmp/prof/*.cpuprofile --top 35
