#!/usr/bin/env bash
# Starts N copies of a program the way torchrun presents ranks (RANK,
# WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT) and fails if any fails.
# Usage: launch_torchrun_env.sh N PORT prog [args...]
set -u
n=$1 port=$2; shift 2
pids=()
for ((r = 0; r < n; r++)); do
  RANK=$r WORLD_SIZE=$n LOCAL_RANK=$r MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    timeout 200 "$@" > >(sed "s/^/[$r] /") 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
