# shellcheck shell=sh
# Shared by the fault scripts that run a job under ginrun (fault.sh,
# slowreader.sh; POSIX sh, sourced): a marker that every process of the
# job carries on its command line, failure counting, and the checks every
# such test ends with.
#
#   fault_begin NAME   exits 77 (skip) without pgrep or timeout; sets TMP (a
#                      fresh directory), MARK (gin_NAME_marker_PID) and
#                      FAILS=0; on exit kills the background job GPID (if
#                      set) and every marked process (continued first:
#                      some may be stopped), then removes TMP; lists
#                      /dev/shm into TMP/shm.before
#   fail MSG           prints FAIL: MSG and counts it
#   now_ms             wall time in milliseconds
#   fault_end WHAT T LIMIT [PID]  the end: the job took T ms, less than
#                      LIMIT; no marked process is left; /dev/shm is as
#                      before (the SIGKILLed rank PID's libfabric shm
#                      regions, "PID:...", included: ginrun removes
#                      them), but for those of other jobs (live
#                      processes', and any where this job does not use
#                      libfabric).
#                      Prints "WHAT: passed (T ms)" and exits 0, or "WHAT:
#                      N failure(s) (T ms)" and exits 1

fault_begin() {
  command -v pgrep > /dev/null 2>&1 || {
    echo "SKIP: no pgrep"
    exit 77
  }
  command -v timeout > /dev/null 2>&1 || {
    echo "SKIP: no timeout"
    exit 77
  }
  TMP=$(mktemp -d)
  MARK="gin_$1_marker_$$"
  FAILS=0
  GPID=
  trap 'fault_cleanup_' EXIT
  fault_shm_ > "$TMP/shm.before"
}

fault_cleanup_() {
  [ -n "$GPID" ] && kill -KILL "$GPID" 2> /dev/null
  pids=$(pgrep -f -- "$MARK")
  if [ -n "$pids" ]; then
    kill -CONT $pids 2> /dev/null
    kill -KILL $pids 2> /dev/null
  fi
  rm -rf "$TMP"
}

fail() {
  echo "FAIL: $*"
  FAILS=$((FAILS + 1))
}

now_ms() { echo $(($(date +%s%N) / 1000000)); }

fault_shm_() { ls -A /dev/shm 2> /dev/null | sort; }

fault_end() {
  [ "$2" -lt "$3" ] || fail "the job took $2 ms (limit $3 ms)"
  sleep 0.2
  if pgrep -f -- "$MARK" > /dev/null; then
    fail "processes survived: $(pgrep -a -f -- "$MARK")"
  fi
  fault_shm_ > "$TMP/shm.after"
  # libfabric's shm provider names its regions after their process's pid
  # ("PID:..."): those of live processes belong to other jobs running
  # beside this one (this job's are all gone, checked above); the killed
  # rank cannot remove its own, so ginrun does once the job ended; and a
  # job that does not use libfabric (GIN_TRANSPORT other than ofi) has
  # none. Any other new name fails (below).
  ofi=0
  [ "${GIN_TRANSPORT:-}" = ofi ] && ofi=1
  : > "$TMP/shm.ours"
  while read -r f; do
    p=${f%%:*}
    case $p in
    "$f" | '' | *[!0-9]*) echo "$f" >> "$TMP/shm.ours" ;; # not "PID:..."
    "${4:-none}")
      fail "/dev/shm/$f left by the killed rank $4 (ginrun removes its libfabric shm regions)"
      rm -f "/dev/shm/$f"
      ;;
    *) [ $ofi = 1 ] && ! kill -0 "$p" 2> /dev/null && echo "$f" >> "$TMP/shm.ours" ;;
    esac
  done < "$TMP/shm.after"
  grep -vxFf "$TMP/shm.before" "$TMP/shm.ours" > "$TMP/shm.new"
  # A dead process's region may be another fault job's killed rank, which
  # that job removes when it ends: what is still there after 5 s is ours.
  for _ in $(seq 50); do
    [ -s "$TMP/shm.new" ] || break
    sleep 0.1
    while read -r f; do
      [ -e "/dev/shm/$f" ] && echo "$f"
    done < "$TMP/shm.new" > "$TMP/shm.left"
    mv "$TMP/shm.left" "$TMP/shm.new"
  done
  [ -s "$TMP/shm.new" ] && fail "/dev/shm gained: $(tr '\n' ' ' < "$TMP/shm.new")"
  if [ "$FAILS" -ne 0 ]; then
    echo "$1: $FAILS failure(s) ($2 ms)"
    exit 1
  fi
  echo "$1: passed ($2 ms)"
  exit 0
}
