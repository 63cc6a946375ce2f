#!/bin/sh
# A rank SIGKILLed in the middle of a scenario (tests/fault/fault.c), under
# ginrun: ginrun must exit 137 naming the rank and its pid; every other rank
# must report OK (its calls failed naming the dead rank within
# 2 x GIN_TIMEOUT_MS, and it tore down to nothing); no process of the job
# may survive, /dev/shm must be as before, and the whole run must take
# less than 2 x GIN_TIMEOUT_MS plus start-up.
# usage: fault.sh GINRUN FAULT_PROG NRANKS SCENARIO VICTIM [prog args...]
# Exit 0 pass, 1 fail, 77 skip. GIN_TIMEOUT_MS defaults to 3000 here.
set -u
GINRUN=${1:?usage: fault.sh ginrun prog nranks scenario victim [args]}
PROG=${2:?}
N=${3:?}
SCEN=${4:?}
VICTIM=${5:?}
shift 5
export GIN_TIMEOUT_MS=${GIN_TIMEOUT_MS:-3000}
# shellcheck source=SCRIPTDIR/fault_common.sh
. "$(dirname "$0")/fault_common.sh"
fault_begin fault

t0=$(now_ms)
timeout -k 5 120 "$GINRUN" -n "$N" --grace 10 "$PROG" "$SCEN" \
  --victim "$VICTIM" --stamp "$TMP" "$@" "$MARK" >"$TMP/out" 2>"$TMP/err"
rc=$?
t=$(($(now_ms) - t0))
if [ "$rc" -eq 77 ]; then
  echo "SKIP: $(grep -m1 SKIP "$TMP/out" "$TMP/err")"
  exit 77
fi
cat "$TMP/out"
grep -v '^\[[0-9]*\] ' "$TMP/err"   # ginrun's own lines
grep '^\[[0-9]*\] .*\(WARN\|FAIL\)' "$TMP/err" | head -20
# Slow releases (the library logs them) whatever came before them.
grep '^\[[0-9]*\] .*WARN.* took [0-9.]* ms' "$TMP/err"

[ "$rc" -eq 137 ] || fail "ginrun exited with $rc, expected 137 (rank $VICTIM killed by SIGKILL)"
grep -q "^ginrun: rank $VICTIM (pid [0-9]*) killed by signal 9 (Killed)\$" "$TMP/err" ||
  fail "ginrun did not name rank $VICTIM, its pid and signal 9"
r=0
while [ $r -lt "$N" ]; do
  if [ $r -ne "$VICTIM" ]; then
    grep -q "^\[$r\] fault: rank $r: OK $SCEN: rank $VICTIM died" "$TMP/out" ||
      fail "rank $r did not report OK"
  fi
  r=$((r + 1))
done
grep -q "FAIL" "$TMP/out" && fail "a rank reported FAIL"
# The survivors exit 0 on their own (a sanitizer's report would not).
grep "^ginrun: rank [0-9]* (pid [0-9]*) \(exited\|killed\)" "$TMP/err" |
  grep -v "^ginrun: rank $VICTIM " | grep -q . &&
  fail "another rank failed: $(grep '^ginrun: rank' "$TMP/err" | tr '\n' ' ')"
grep -q "^ginrun: stopping" "$TMP/err" && fail "ginrun had to stop survivors"
vpid=$(sed -n "s/^ginrun: rank $VICTIM (pid \([0-9]*\)) killed by signal 9.*/\1/p" "$TMP/err")
fault_end "fault $SCEN" "$t" $((2 * GIN_TIMEOUT_MS + 15000)) "$vpid"
