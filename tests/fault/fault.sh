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
command -v pgrep >/dev/null 2>&1 || { echo "SKIP: no pgrep"; exit 77; }
command -v timeout >/dev/null 2>&1 || { echo "SKIP: no timeout"; exit 77; }
export GIN_TIMEOUT_MS=${GIN_TIMEOUT_MS:-3000}

TMP=$(mktemp -d)
MARK="gin_fault_marker_$$"
kill_marked() {
  pids=$(pgrep -f -- "$MARK")
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
}
trap 'kill_marked; rm -rf "$TMP"' EXIT
FAILS=0
fail() {
  echo "FAIL: $*"
  FAILS=$((FAILS + 1))
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
shm_list() { ls -A /dev/shm 2>/dev/null | sort; }

shm_list >"$TMP/shm.before"
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
limit=$((2 * GIN_TIMEOUT_MS + 15000))
[ "$t" -lt "$limit" ] || fail "the job took $t ms (limit $limit ms)"
sleep 0.2
if pgrep -f -- "$MARK" >/dev/null; then
  fail "processes survived: $(pgrep -a -f -- "$MARK")"
fi
shm_list >"$TMP/shm.after"
cmp -s "$TMP/shm.before" "$TMP/shm.after" ||
  fail "/dev/shm changed: $(diff "$TMP/shm.before" "$TMP/shm.after" | tr '\n' ' ')"
if [ $FAILS -ne 0 ]; then
  echo "fault $SCEN: $FAILS failure(s) ($t ms)"
  exit 1
fi
echo "fault $SCEN: passed ($t ms)"
exit 0
