#!/bin/sh
# A peer that stops reading: under ginrun, rank 0 of
# tests/fault/netfault.c "stream" puts to every other rank in turn as fast
# as it can over tcp (each rank a host of its own); once all run, the
# target is stopped with SIGSTOP (a stopped process neither reads nor
# closes its sockets), so the socket buffers fill and rank 0's puts wait.
# Rank 0 must report that its pending call failed with a timeout naming
# the target, known within 2 x GIN_TIMEOUT_MS + 2 s of the stop (the
# limits: tests/fault/netfault.c), and the other receivers that their
# waits ended in time; once rank 0's error is known the target is
# continued (SIGCONT) and must end its wait with an error; every rank must
# tear down to nothing and exit 0, no process of the job may survive,
# /dev/shm must be as before.
# usage: slowreader.sh GINRUN NETFAULT_PROG NRANKS TARGET
# Exit 0 pass, 1 fail, 77 skip.
set -u
GINRUN=${1:?usage: slowreader.sh ginrun prog nranks target}
PROG=${2:?}
N=${3:?}
TARGET=${4:?}
export GIN_TIMEOUT_MS=${GIN_TIMEOUT_MS:-3000}
# shellcheck source=SCRIPTDIR/fault_common.sh
. "$(dirname "$0")/fault_common.sh"
fault_begin slowreader

mkdir "$TMP/st"
t0=$(now_ms)
timeout -k 5 120 "$GINRUN" -n "$N" --grace 10 "$PROG" stream --target "$TARGET" \
  --own-host --stamp "$TMP/st" "$MARK" > "$TMP/out" 2> "$TMP/err" &
GPID=$!

# have NAME...: how many of these stamp files exist.
have() {
  k=0
  for f in "$@"; do [ -s "$TMP/st/$f" ] && k=$((k + 1)); done
  echo $k
}
running=""
r=0
while [ $r -lt "$N" ]; do
  running="$running running.$r"
  r=$((r + 1))
done
i=0
while [ "$(have $running)" -lt "$N" ] && [ $i -lt 300 ]; do
  sleep 0.1
  i=$((i + 1))
done
if [ "$(have $running)" -lt "$N" ]; then
  fail "the ranks did not all start"
else
  sleep 0.5 # the stream flows
  pid=$(cat "$TMP/st/pid.$TARGET")
  date +%s%N > "$TMP/st/stop.tmp"
  kill -STOP "$pid" || fail "cannot stop rank $TARGET (pid $pid)"
  mv "$TMP/st/stop.tmp" "$TMP/st/stop"
  stopped=$(now_ms)
  # The sender's pending call fails, in time.
  senders=failed.0
  want=1
  limit=$((2 * GIN_TIMEOUT_MS + 2000 + 1000))
  while [ "$(have $senders)" -lt $want ] &&
    [ $(($(now_ms) - stopped)) -lt $limit ]; do
    sleep 0.05
  done
  echo "slowreader: rank $TARGET stopped; $(have $senders) of $want senders failed after $(($(now_ms) - stopped)) ms"
  [ "$(have $senders)" -eq $want ] ||
    fail "not every sender failed within $limit ms of the stop"
  date +%s%N > "$TMP/st/cont.tmp"
  kill -CONT "$pid"
  mv "$TMP/st/cont.tmp" "$TMP/st/cont"
fi
wait "$GPID"
rc=$?
GPID=
t=$(($(now_ms) - t0))
cat "$TMP/out"
grep -v '^\[[0-9]*\] ' "$TMP/err" # ginrun's own lines
grep '^\[[0-9]*\] .*\(WARN\|FAIL\)' "$TMP/err" | head -20
[ "$rc" -eq 0 ] || fail "ginrun exited with $rc"
r=0
while [ $r -lt "$N" ]; do
  grep -q "^\[$r\] netfault: rank $r: OK stream" "$TMP/out" ||
    fail "rank $r did not report OK"
  r=$((r + 1))
done
grep -q "died" "$TMP/out" "$TMP/err" && fail "a rank was said to have died"
fault_end slowreader "$t" $((4 * GIN_TIMEOUT_MS + 20000))
