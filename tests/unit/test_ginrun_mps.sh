#!/bin/sh
# ginrun's MPS handling (tools/ginrun_mps.c) with stand-ins for nvidia-smi
# and nvidia-cuda-mps-control (tests/unit/fake_mps/) on PATH: when ranks
# share a GPU ginrun starts a daemon private to the job, hands its
# directories to the ranks and stops it when the job ends, also when a
# rank dies, when ginrun is interrupted and when ginrun is killed; it uses
# a daemon that already serves them; it counts the GPUs that
# CUDA_VISIBLE_DEVICES leaves and follows GIN_CUDA_DEVICE; it runs the job
# without MPS, saying why, when the compute mode forbids MPS, the control
# binary is missing, or the daemon refuses, stays mute or ignores quit;
# GIN_MPS=0 turns it off. The real daemon runs in scripts/gpu-test.sh.
# usage: test_ginrun_mps.sh PATH/ginrun SOURCE_DIR
# Exit 0 pass, 1 fail, 77 skip. Every ginrun call is bounded by timeout.
set -u
GINRUN=${1:?usage: test_ginrun_mps.sh ginrun source_dir}
SRC=${2:?usage: test_ginrun_mps.sh ginrun source_dir}
command -v timeout >/dev/null 2>&1 || { echo "SKIP: no timeout"; exit 77; }
command -v mkfifo >/dev/null 2>&1 || { echo "SKIP: no mkfifo"; exit 77; }
if "$GINRUN" --env | grep -q "no cuda target"; then
  echo "SKIP: this build has no cuda target, so ginrun starts no MPS daemon"
  exit 77
fi

TMP=$(mktemp -d)
BIN=$TMP/bin     # both stand-ins
SMI=$TMP/smionly # nvidia-smi alone
mkdir -p "$BIN" "$SMI"
for f in nvidia-smi nvidia-cuda-mps-control; do
  cp "$SRC/tests/unit/fake_mps/$f" "$BIN/$f"
  chmod +x "$BIN/$f"
done
cp "$BIN/nvidia-smi" "$SMI/"
# The system's PATH without nvidia-smi and nvidia-cuda-mps-control (a GPU
# machine has them, in /usr/bin say): each folder that holds either is
# replaced by a folder of links to its other programs, so that the cases
# without them really lack them.
SYSPATH= n=0
IFS0=$IFS
IFS=:
set -f
for d in $PATH; do
  case $d in
  /*) if [ -e "$d/nvidia-smi" ] || [ -e "$d/nvidia-cuda-mps-control" ]; then
    n=$((n + 1))
    mkdir -p "$TMP/sys$n"
    set +f
    ln -s "$d"/* "$TMP/sys$n/" 2>/dev/null
    set -f
    rm -f "$TMP/sys$n/nvidia-smi" "$TMP/sys$n/nvidia-cuda-mps-control"
    d=$TMP/sys$n
  fi ;;
  esac
  SYSPATH=${SYSPATH:+$SYSPATH:}$d
done
set +f
IFS=$IFS0
# ginrun makes the job's directories under TMPDIR: here, so that what is
# left behind shows.
export TMPDIR=$TMP/t
mkdir -p "$TMPDIR"
DIRS=$TMPDIR/ginrun-mps-
JOURNAL=$TMP/journal
OUT=$TMP/out
ERR=$TMP/err
FAILS=0
cleanup() {
  for f in "$TMP"/*.pid "$DIRS"*/pipe/daemon.pid; do
    [ -f "$f" ] && kill -KILL "$(cat "$f")" 2>/dev/null
  done
  rm -rf "$TMP"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*"
  echo "--- stdout:"; head -c 2000 "$OUT"
  echo "--- stderr:"; head -c 2000 "$ERR"
  echo "--- journal:"; head -c 1000 "$JOURNAL" 2>/dev/null
  FAILS=$((FAILS + 1))
}
expect_rc() { [ "$2" -eq "$1" ] || fail "$3: exit code $2, expected $1"; }
expect_line() { grep -q -- "$2" "$1" || fail "$3: no line matching '$2' in $(basename "$1")"; }
expect_none() { grep -q -- "$2" "$1" && fail "$3: a line matches '$2' in $(basename "$1")"; }

no_dirs() { # no_dirs WHAT: the job's directories are gone
  [ -z "$(ls -A "$TMPDIR")" ] || fail "$1: left in TMPDIR: $(ls -A "$TMPDIR")"
}

# Every case starts clean: one fake GPU in Default mode, no daemon, the
# stand-ins first on PATH, no setting of ours.
reset() {
  unset CUDA_VISIBLE_DEVICES GIN_CUDA_DEVICE GIN_MPS FAKE_GPUS FAKE_SMI_FAIL \
    FAKE_MPS_REFUSE FAKE_MPS_MUTE FAKE_MPS_DEAF
  export PATH="$BIN:$SYSPATH" FAKE_MPS_JOURNAL="$JOURNAL"
  export CUDA_MPS_PIPE_DIRECTORY="$TMP/no-daemon-here"
  : >"$JOURNAL"
}

# What the ranks see: the directories in their environment and, when
# the daemon's pipe is there, its pid.
RANK='echo "pipe=${CUDA_MPS_PIPE_DIRECTORY:-unset} log=${CUDA_MPS_LOG_DIRECTORY:-unset}"
if [ -p "${CUDA_MPS_PIPE_DIRECTORY:-/nonexistent}/control" ]; then
  echo "live $(cat "$CUDA_MPS_PIPE_DIRECTORY/daemon.pid")"; fi'

run() { # run NRANKS: the job, bounded; sets rc
  timeout -k 5 60 "$GINRUN" -n "$1" sh -c "$RANK" >"$OUT" 2>"$ERR"
  rc=$?
}

# The job's daemon: started, seen live by every rank in its private
# directories, told to quit, gone with its directories afterwards.
expect_private() { # expect_private NRANKS WHAT
  expect_rc 0 "$rc" "$2"
  expect_line "$ERR" "^ginrun: $1 ranks share 1 GPU: started an MPS control daemon for this job ($DIRS" "$2"
  dir=$(sed -n 's/^\[0\] pipe=\(.*\)\/pipe log=.*/\1/p' "$OUT")
  case "$dir" in "$DIRS"??????) ;; *) fail "$2: rank 0 got pipe dir '$dir'"; return ;; esac
  r=0
  while [ "$r" -lt "$1" ]; do
    expect_line "$OUT" "^\[$r\] pipe=$dir/pipe log=$dir/log\$" "$2: rank $r's directories"
    expect_line "$OUT" "^\[$r\] live [0-9]" "$2: rank $r sees the daemon"
    r=$((r + 1))
  done
  pid=$(sed -n 's/^\[0\] live \([0-9]*\)$/\1/p' "$OUT")
  expect_line "$JOURNAL" "^start $dir/pipe\$" "$2: daemon started"
  expect_line "$JOURNAL" "^quit\$" "$2: daemon told to quit"
  no_dirs "$2"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && fail "$2: daemon $pid still runs"
}

expect_nothing() { # expect_nothing WHAT: no daemon, no MPS line, no dirs
  expect_rc 0 "$rc" "$1"
  expect_none "$ERR" "MPS" "$1"
  expect_line "$OUT" "^\[0\] pipe=$TMP/no-daemon-here log=unset\$" "$1: ranks' environment untouched"
  [ -s "$JOURNAL" ] && fail "$1: a daemon was started"
  no_dirs "$1"
}

expect_without() { # expect_without NRANKS WHY WHAT: said why, ran without
  expect_rc 0 "$rc" "$3"
  expect_line "$ERR" "^ginrun: $1 ranks share 1 GPU and no MPS daemon serves them; cannot start one: $2\. Running without MPS: .*milliseconds instead of microseconds" "$3"
  expect_line "$OUT" "^\[0\] pipe=$TMP/no-daemon-here log=unset\$" "$3: ranks' environment untouched"
  expect_none "$OUT" "live" "$3"
  no_dirs "$3"
}

# 1. 4 ranks on 1 GPU, no daemon: a private one for the job.
reset; run 4; expect_private 4 "4 ranks, 1 GPU"

# 2. GIN_MPS=0: nothing.
reset; GIN_MPS=0 run 4; expect_nothing "GIN_MPS=0"

# 3. As many GPUs as ranks: nothing; fewer visible: a daemon.
two="0, GPU-aaaaaaaa-0000-0000-0000-000000000000, Default;1, GPU-bbbbbbbb-0000-0000-0000-000000000000, Default"
reset; FAKE_GPUS=$two run 2; expect_nothing "2 ranks, 2 GPUs"
reset; FAKE_GPUS=$two CUDA_VISIBLE_DEVICES=1 run 2; expect_private 2 "CUDA_VISIBLE_DEVICES=1"
reset; FAKE_GPUS=$two CUDA_VISIBLE_DEVICES=GPU-bbbb run 2; expect_private 2 "CUDA_VISIBLE_DEVICES by UUID prefix"
reset; FAKE_GPUS=$two CUDA_VISIBLE_DEVICES=0,7,1 run 2; expect_private 2 "CUDA_VISIBLE_DEVICES ends at an unknown GPU"
reset; FAKE_GPUS=$two CUDA_VISIBLE_DEVICES=1,0 run 2; expect_nothing "CUDA_VISIBLE_DEVICES=1,0"
reset; CUDA_VISIBLE_DEVICES= run 2; expect_nothing "CUDA_VISIBLE_DEVICES empty"

# 4. GIN_CUDA_DEVICE: one GPU for all shares it; -2 (the program places
#    its ranks) starts nothing.
reset; FAKE_GPUS=$two GIN_CUDA_DEVICE=1 run 2; expect_private 2 "GIN_CUDA_DEVICE=1"
reset; GIN_CUDA_DEVICE=-2 run 2; expect_nothing "GIN_CUDA_DEVICE=-2"
reset; GIN_MPS=maybe run 2; expect_private 2 "GIN_MPS not a number"
expect_line "$ERR" '^ginrun: GIN_MPS="maybe" is not an integer; using the default 1$' "GIN_MPS not a number"

# 5. No GPU (nvidia-smi fails or is missing): nothing.
reset; FAKE_SMI_FAIL=1 run 2; expect_nothing "nvidia-smi fails"
reset; PATH=$SYSPATH run 2; expect_nothing "no nvidia-smi"

# 6. A daemon already serves CUDA_MPS_PIPE_DIRECTORY: used, none started.
reset
served=$TMP/served
mkdir -p "$served"
CUDA_MPS_PIPE_DIRECTORY=$served nvidia-cuda-mps-control -f >/dev/null 2>&1 &
echo $! >"$TMP/served.pid"
i=0
while [ ! -p "$served/control" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
CUDA_MPS_PIPE_DIRECTORY=$served run 2
expect_rc 0 "$rc" "served"
expect_none "$ERR" "MPS" "served: nothing to say"
expect_line "$OUT" "^\[1\] pipe=$served log=unset\$" "served: ranks keep its directory"
expect_line "$OUT" "^\[1\] live [0-9]" "served: ranks see it"
[ "$(grep -c '^start' "$JOURNAL")" -eq 1 ] || fail "served: another daemon started"
expect_none "$JOURNAL" "^quit" "served: ginrun stopped a daemon it did not start"
echo quit | CUDA_MPS_PIPE_DIRECTORY=$served timeout 5 nvidia-cuda-mps-control
wait

# 7. A stale pipe (its daemon gone): not served; a private daemon.
reset
mkdir -p "$TMP/stale"
mkfifo "$TMP/stale/control"
CUDA_MPS_PIPE_DIRECTORY=$TMP/stale run 2; expect_private 2 "stale pipe"

# 8. Cannot start: each says why, the job runs without MPS.
reset
FAKE_GPUS="0, GPU-cccccccc-0000-0000-0000-000000000000, Prohibited" run 2
expect_without 2 "GPU 0's compute mode is Prohibited" "Prohibited"
reset; PATH="$SMI:$SYSPATH" run 2
expect_without 2 "nvidia-cuda-mps-control is not on PATH" "no control binary"
reset; FAKE_MPS_REFUSE="An instance of this daemon is already running" run 2
expect_without 2 "nvidia-cuda-mps-control -f exited with status 1: An instance of this daemon is already running" "daemon refuses"
reset; FAKE_MPS_MUTE=1 run 2
expect_without 2 "nvidia-cuda-mps-control -f did not answer within 10 s" "mute daemon"

# 9. A daemon that ignores quit is killed after its grace.
reset; FAKE_MPS_DEAF=1 run 2
expect_private 2 "deaf daemon"
expect_line "$ERR" "^ginrun: the job's MPS daemon (pid [0-9]*) did not stop within 10 s of quit; killing it\$" "deaf daemon"

# 10. The job ends badly: a rank dies; ginrun is interrupted; ginrun is
#     killed (the daemon gets SIGTERM as ginrun's death signal).
reset
timeout -k 5 60 "$GINRUN" -n 2 --grace 0.5 sh -c "$RANK"'
  [ "$GIN_RANK" = 1 ] && kill -KILL $$; exec sleep 30' >"$OUT" 2>"$ERR"
rc=$?
expect_line "$ERR" "^ginrun: rank 1 (pid [0-9]*) killed by signal 9" "rank death"
rc=0; expect_private 2 "rank death"

# A 2-rank job in the background (gpid), once both ranks said they live
# (each its own line, in either order; up to 30 s on a loaded machine).
start_live() {
  "$GINRUN" -n 2 sh -c "$RANK"'
exec sleep 30' >"$OUT" 2>"$ERR" &
  gpid=$!
  i=0
  while ! { grep -q '^\[0\] live' "$OUT" && grep -q '^\[1\] live' "$OUT"; } &&
    [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
}

reset
start_live
kill -TERM $gpid
wait $gpid
rc=$?
expect_rc 143 "$rc" "SIGTERM to ginrun"
rc=0; expect_private 2 "SIGTERM to ginrun"

reset
start_live
pid=$(sed -n 's/^\[0\] live \([0-9]*\)$/\1/p' "$OUT")
dir=$(sed -n 's/^\[0\] pipe=\(.*\)\/pipe log=.*/\1/p' "$OUT")
kill -KILL $gpid
wait $gpid 2>/dev/null
i=0
while [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
[ -z "$pid" ] && fail "SIGKILL to ginrun: no daemon seen"
[ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && fail "SIGKILL to ginrun: daemon $pid outlived ginrun"
rm -rf "$TMPDIR"/* # ginrun, killed, could not

if [ "$FAILS" -gt 0 ]; then
  echo "$FAILS failure(s)"
  exit 1
fi
echo "ginrun MPS: all cases pass"
