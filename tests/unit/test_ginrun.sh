#!/bin/sh
# ginrun: prefixed output, failure reporting (rank and pid), the grace the
# other ranks get before they are stopped, cleanup of the other ranks,
# --timeout, signal forwarding, usage errors, --env, and a real bootstrap.
# usage: test_ginrun.sh PATH/ginrun PATH/ginrun_child SOURCE_DIR
# Exit 0 pass, 1 fail, 77 skip. Every ginrun call is bounded by timeout.
set -u
USAGE="usage: test_ginrun.sh ginrun ginrun_child source_dir"
GINRUN=${1:?$USAGE}
CHILD=${2:?$USAGE}
SRC=${3:?$USAGE}
command -v pgrep >/dev/null 2>&1 || { echo "SKIP: no pgrep"; exit 77; }
command -v timeout >/dev/null 2>&1 || { echo "SKIP: no timeout"; exit 77; }

TMP=$(mktemp -d)
MARK="ginrun_test_marker_$$"
kill_marked() { # kills, by pid, what this test started with marker $1
  pids=$(pgrep -f -- "$1")
  [ -n "$pids" ] && kill -KILL $pids 2>/dev/null
}
trap 'kill_marked "$MARK"; rm -rf "$TMP"' EXIT
FAILS=0
# The MPS daemon ginrun may start on a GPU machine is test_ginrun_mps.sh's
# subject; here it would only add its line to ginrun's output.
export GIN_MPS=0
OUT=$TMP/out
ERR=$TMP/err

fail() {
  echo "FAIL: $*"
  echo "--- stdout:"; head -c 2000 "$OUT"
  echo "--- stderr:"; head -c 2000 "$ERR"
  FAILS=$((FAILS + 1))
}
expect_rc() { # expect_rc WANT GOT WHAT
  [ "$2" -eq "$1" ] || fail "$3: exit code $2, expected $1"
}
expect_line() { # expect_line FILE REGEX WHAT
  grep -q -- "$2" "$1" || fail "$3: no line matching '$2' in $(basename "$1")"
}
expect_no_survivors() { # expect_no_survivors MARKER WHAT
  if pgrep -f -- "$1" >/dev/null; then
    fail "$2: processes survived ginrun: $(pgrep -a -f -- "$1")"
    kill_marked "$1"
  fi
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# 1. prefixed output, job variables, long and unterminated lines
timeout -k 10 60 "$GINRUN" -n 3 "$CHILD" print "$MARK.p" >"$OUT" 2>"$ERR"
expect_rc 0 $? "print"
for r in 0 1 2; do
  expect_line "$OUT" "^\[$r\] out line 1 of rank $r\$" "stdout of rank $r"
  expect_line "$ERR" "^\[$r\] err line of rank $r\$" "stderr of rank $r"
  expect_line "$OUT" "^\[$r\] env rank=$r nranks=3 local_rank=$r local_size=3 uidlen=256\$" "env of rank $r"
  expect_line "$OUT" "^\[$r\] partial of rank $r\$" "unterminated line of rank $r"
  n=$(grep -c "^\[$r\] long x*\$" "$OUT")
  [ "$n" -eq 1 ] || fail "long line of rank $r appears $n times"
  len=$(grep "^\[$r\] long " "$OUT" | awk '{ print length($0) }')
  [ "$len" = 20009 ] || fail "long line of rank $r has $len characters, expected 20009"
done
grep -v '^\[[0-2]\] ' "$OUT" "$ERR" | grep -q . && fail "lines without a rank prefix"
[ "$(wc -l <"$OUT")" -eq 12 ] || fail "stdout has $(wc -l <"$OUT") lines, expected 12"

timeout -k 10 60 "$GINRUN" --no-prefix -n 2 "$CHILD" print "$MARK.q" >"$OUT" 2>"$ERR"
expect_rc 0 $? "--no-prefix"
expect_line "$OUT" "^out line 1 of rank 1\$" "--no-prefix stdout"
grep -q '^\[' "$OUT" && fail "--no-prefix still prefixes"

# 2. a rank exits non-zero: named with its pid; the others (sleeping) get
# --grace seconds, then are stopped; ginrun exits with the rank's code
t0=$(now_ms)
timeout -k 10 60 "$GINRUN" -n 3 --grace 1 "$CHILD" exit 2 3 "$MARK.e" >"$OUT" 2>"$ERR"
expect_rc 3 $? "failing rank"
t=$(($(now_ms) - t0))
expect_line "$ERR" "^ginrun: rank 2 (pid [0-9]*) exited with code 3\$" "failing rank message"
expect_line "$ERR" "^ginrun: stopping 2 ranks still running 1 s after rank 2 failed\$" "grace message"
[ "$t" -ge 900 ] && [ "$t" -lt 15000 ] || fail "--grace 1 took $t ms"
expect_no_survivors "$MARK.e" "failing rank"

# 3. a rank killed by a signal (default grace: 5 s)
t0=$(now_ms)
timeout -k 10 60 "$GINRUN" -n 3 "$CHILD" kill 1 "$MARK.k" >"$OUT" 2>"$ERR"
expect_rc 137 $? "killed rank"
t=$(($(now_ms) - t0))
expect_line "$ERR" "^ginrun: rank 1 (pid [0-9]*) killed by signal 9 (Killed)\$" "killed rank message"
[ "$t" -ge 4900 ] && [ "$t" -lt 20000 ] || fail "default grace took $t ms, expected 5 s"
expect_no_survivors "$MARK.k" "killed rank"
pid=$(sed -n 's/^ginrun: rank 1 (pid \([0-9]*\)) killed.*/\1/p' "$ERR")
[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && fail "the killed rank's pid $pid still exists"

# 3b. --grace 0: the others are stopped at once
t0=$(now_ms)
timeout -k 10 60 "$GINRUN" -n 3 --grace=0 "$CHILD" kill 1 "$MARK.g" >"$OUT" 2>"$ERR"
expect_rc 137 $? "--grace 0"
t=$(($(now_ms) - t0))
[ "$t" -lt 4000 ] || fail "--grace 0 took $t ms"
expect_no_survivors "$MARK.g" "--grace 0"

# 4. --timeout
t0=$(now_ms)
timeout -k 10 60 "$GINRUN" -n 2 --timeout 1 "$CHILD" sleep "$MARK.t" >"$OUT" 2>"$ERR"
expect_rc 124 $? "--timeout"
t=$(($(now_ms) - t0))
expect_line "$ERR" "^ginrun: job timed out after 1 s" "--timeout message"
[ "$t" -ge 900 ] && [ "$t" -lt 15000 ] || fail "--timeout 1 took $t ms"
expect_no_survivors "$MARK.t" "--timeout"

# 5. ranks that ignore SIGTERM get SIGKILL after the grace period
t0=$(now_ms)
timeout -k 10 60 "$GINRUN" -n 2 --timeout=0.5 "$CHILD" sleep_noterm "$MARK.n" >"$OUT" 2>"$ERR"
expect_rc 124 $? "SIGTERM ignored"
t=$(($(now_ms) - t0))
[ "$t" -ge 2300 ] && [ "$t" -lt 15000 ] || fail "grace period: took $t ms, expected 0.5 s + 2 s"
expect_no_survivors "$MARK.n" "SIGTERM ignored"

# 6. SIGTERM to ginrun is forwarded to the ranks (once they run, ginrun's
# handlers are in place)
: >"$OUT"
timeout -s KILL 60 "$GINRUN" -n 2 "$CHILD" sleep "$MARK.s" >"$OUT" 2>"$ERR" &
tpid=$!
i=0
while [ "$(grep -c '^\[[01]\] ready' "$OUT")" -lt 2 ] && [ $i -lt 300 ]; do
  sleep 0.1; i=$((i + 1))
done
gpid=$(pgrep -P $tpid)
[ -n "$gpid" ] && kill -TERM "$gpid"
wait $tpid
expect_rc 143 $? "SIGTERM to ginrun"
expect_line "$ERR" "^ginrun: got signal 15" "SIGTERM to ginrun message"
expect_no_survivors "$MARK.s" "SIGTERM to ginrun"

# 7. usage errors
for args in "" "-n" "-n 0 $CHILD" "-n abc $CHILD" "-n 1025 $CHILD" \
            "--timeout -1 $CHILD" "--grace -1 $CHILD" "--grace x $CHILD" \
            "--bogus $CHILD"; do
  # shellcheck disable=SC2086
  timeout -k 10 60 "$GINRUN" $args >"$OUT" 2>"$ERR"
  expect_rc 2 $? "usage error for '$args'"
  expect_line "$ERR" "^usage: ginrun" "usage line for '$args'"
done
timeout -k 10 60 "$GINRUN" -n 2 /nonexistent/ginrun_no_such_prog >"$OUT" 2>"$ERR"
expect_rc 127 $? "missing program"
timeout -k 10 60 "$GINRUN" -n 2 ginrun_no_such_prog_$$ >"$OUT" 2>"$ERR"
expect_rc 127 $? "program not on PATH"
expect_line "$ERR" "command not found" "program not on PATH message"

# 8. --env lists the settings with their help
timeout -k 10 60 "$GINRUN" --env >"$OUT" 2>"$ERR"
expect_rc 0 $? "--env"
expect_line "$OUT" "^GIN_TIMEOUT_MS=[0-9]*  (default: 30000)$" "--env GIN_TIMEOUT_MS"
expect_line "$OUT" "^GIN_ROOT_ADDR=" "--env GIN_ROOT_ADDR"
expect_line "$OUT" "^    bound in milliseconds" "--env help text"
# Every setting declared in the library's sources, on every build: the
# cuda target's too where it is not built, marked as such.
names=$(find "$SRC/src" -name '*.c' -exec cat {} + | tr '\n' ' ' |
  grep -oE 'GIN_PARAM_(TARGET_)?(INT|STR)\( *("[a-z]+", *)?[a-z_]+, *"[A-Z_0-9]+"' |
  sed 's/.*"\([A-Z_0-9]*\)"$/\1/' | sort -u)
[ "$(echo "$names" | wc -w)" -ge 20 ] || fail "--env: only $(echo "$names" | wc -w) settings found in $SRC/src"
for v in $names; do
  expect_line "$OUT" "^GIN_$v=" "--env lists GIN_$v"
done
expect_line "$OUT" "^GIN_CUDA_DEVICE=.*(default: -1; cuda target only" "--env marks GIN_CUDA_DEVICE"
expect_line "$OUT" "^GIN_HOST_SPINS=.*(default: -1; host target only)" "--env marks GIN_HOST_SPINS"
expect_line "$OUT" "^GIN_OFI_RMA=.*(default: -1; ofi transport only" "--env marks GIN_OFI_RMA"
expect_line "$OUT" "^# [0-9]* settings (GIN_\*); this build has the host target" "--env header"

# 9. the ranks really bootstrap through the unique id ginrun made
timeout -k 10 60 "$GINRUN" -n 4 "$CHILD" bootstrap >"$OUT" 2>"$ERR"
expect_rc 0 $? "bootstrap under ginrun"
for r in 0 1 2 3; do
  expect_line "$OUT" "^\[$r\] rank $r allgather ok\$" "bootstrap of rank $r"
done

if [ $FAILS -ne 0 ]; then
  echo "test_ginrun: $FAILS failure(s)"
  exit 1
fi
echo "test_ginrun: all passed"
exit 0
