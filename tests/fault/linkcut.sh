#!/usr/bin/env bash
# A link cut between two hosts during tcp traffic. Two network namespaces
# joined by a veth pair (10.231.8.1/24 and 10.231.8.2/24, set up by
# tests/netns_common.sh as for tests/transport/multihost.sh), 2 ranks of
# tests/fault/netfault.c in each (torchrun-style environment),
# GIN_BACKEND=proxy: ipc inside a namespace, tcp across. Once every rank's
# kernel of puts with signals runs, the link is cut (`ip link set <veth>
# down` in the first namespace) and the time stamped. Every rank must
# report OK by itself (its pending call failed within 2 x GIN_TIMEOUT_MS +
# 2 s of the cut, its error then names a rank across the cut as
# unreachable, teardown left nothing) and exit 0 in time; no rank may call
# any rank dead, not even in a log line; no process may remain in the
# namespaces, which are then deleted and must be gone.
#
# LINKFAULT=blackhole: instead of taking the link down, each side's
# neighbour entry for the other is replaced by a permanent one with an
# address no interface has, so every frame is dropped with the link up:
# no RST, no FIN, no error from the network reaches either side, only
# silence (the same checks hold).
#
# LINKFAULT=flap: the ranks run netfault's flap scenario (every round's
# bytes checked where they land); the link goes down for FLAP_MS
# (default GIN_TIMEOUT_MS / 5) and up again, three times 2 s apart; then
# DIR/flapped, and DIR/stop once every rank's launch begun after it is
# through, which must happen within GIN_TIMEOUT_MS (a launch held up that
# long would have failed). TCP retries what a flap lost with a doubling
# timeout, so a 1 s flap can hold traffic up for 3 s and more where the
# kernel does not take gin's 1 s cap on it (before Linux 6.15, and
# libfabric's sockets). Nothing may fail: every rank reports OK flap with
# rounds after the last flap, exits 0 within 2 x GIN_TIMEOUT_MS + 12 s of
# the stop, and nobody is said to have died.
#
# LINKFAULT_TRANSPORT=ofi: the row picks its transport itself (ofi,
# GIN_OFI_PROVIDER or tcp: tcp;ofi_rxm); it skips in a pass that forces
# one on every row (make test-tcp, test-ofi), which would run it again.
#
# Usage: [LINKFAULT=cut|blackhole|flap] [LINKFAULT_TRANSPORT=ofi]
#        linkcut.sh PROG   (as root; PROG is netfault_host)
# Exit 0 pass, 1 fail, 77 skip (not root, or no network namespaces).
set -u
prog=${1:?usage: linkcut.sh netfault_prog}
fault=${LINKFAULT:-cut}
case $fault in
cut | blackhole | flap) ;;
*)
  echo "linkcut.sh: LINKFAULT=$fault: expected cut, blackhole or flap" >&2
  exit 2
  ;;
esac
if [ -n "${LINKFAULT_TRANSPORT:-}" ]; then
  if [ -n "${GIN_TRANSPORT:-}" ]; then
    echo "SKIP: this row runs over $LINKFAULT_TRANSPORT by itself; the pass forces GIN_TRANSPORT=$GIN_TRANSPORT"
    exit 77
  fi
  export GIN_TRANSPORT=$LINKFAULT_TRANSPORT
  [ "$GIN_TRANSPORT" = ofi ] && export GIN_OFI_PROVIDER=${GIN_OFI_PROVIDER:-tcp}
fi
# shellcheck source=SCRIPTDIR/../netns_common.sh
. "$(dirname "$0")/../netns_common.sh"
netns_init lc 10.231.8
export GIN_TIMEOUT_MS=${GIN_TIMEOUT_MS:-3000}
scenario=linkcut
[ "$fault" = flap ] && scenario=flap
flap_ms=${FLAP_MS:-$((GIN_TIMEOUT_MS / 5))}

tmp=$(mktemp -d)
stamps=$tmp/stamps
mkdir "$stamps"
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
trap 'netns_kill KILL; netns_del; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
netns_up

now_ns() { date +%s%N; }
t0=$(now_ns)
for r in 0 1 2 3; do
  ns=$ns0
  [ $r -ge 2 ] && ns=$ns1
  ip netns exec "$ns" env RANK=$r WORLD_SIZE=4 LOCAL_RANK=$((r % 2)) \
    LOCAL_WORLD_SIZE=2 MASTER_ADDR=$addr0 MASTER_PORT=29500 \
    GIN_BACKEND=proxy timeout -k 5 120 "$prog" $scenario --stamp "$stamps" \
    > "$tmp/out.$r" 2>&1 &
  pids+=($!)
done

# Every rank's kernel runs, and some rounds went through (a flap: every
# rank's first launch is through, so the transports' connections are up;
# one made while the link is down fails at once, a case of its own).
mark=running
[ "$fault" = flap ] && mark=flowing
running=0
for _ in $(seq 300); do
  running=0
  for r in 0 1 2 3; do [ -s "$stamps/$mark.$r" ] && running=$((running + 1)); done
  [ $running -eq 4 ] && break
  sleep 0.1
done
if [ $running -ne 4 ]; then
  fail "only $running of 4 ranks started"
else
  sleep 0.5
  now_ns > "$stamps/cut.tmp"
  if [ "$fault" = flap ]; then
    mv "$stamps/cut.tmp" "$stamps/cut"
    for k in 1 2 3; do
      ip -n "$ns0" link set "$veth0" down || fail "cannot take the link down"
      sleep "$((flap_ms / 1000)).$(printf %03d $((flap_ms % 1000)))"
      ip -n "$ns0" link set "$veth0" up || fail "cannot bring the link up"
      echo "linkcut: flap $k: link $veth0 down for $flap_ms ms"
      sleep 2
    done
    now_ns > "$stamps/flapped"
    resumed=0
    for _ in $(seq $((GIN_TIMEOUT_MS / 100))); do
      resumed=0
      for r in 0 1 2 3; do [ -s "$stamps/resumed.$r" ] && resumed=$((resumed + 1)); done
      [ $resumed -eq 4 ] && break
      sleep 0.1
    done
    [ $resumed -eq 4 ] ||
      fail "only $resumed of 4 ranks went on within $GIN_TIMEOUT_MS ms of the last flap's end + 2 s"
    now_ns > "$stamps/stop.tmp" && mv "$stamps/stop.tmp" "$stamps/stop"
  elif [ "$fault" = cut ]; then
    ip -n "$ns0" link set "$veth0" down || fail "cannot cut the link"
  else
    bogus=02:00:00:00:00:42 # no interface's: the peer drops the frames
    { ip -n "$ns0" neigh replace "$addr1" lladdr $bogus nud permanent dev "$veth0" &&
      ip -n "$ns1" neigh replace "$addr0" lladdr $bogus nud permanent dev "$veth1"; } ||
      fail "cannot black-hole the link"
  fi
  [ -e "$stamps/cut.tmp" ] && mv "$stamps/cut.tmp" "$stamps/cut"
  what="cut"
  [ "$fault" = blackhole ] && what=black-holed
  [ "$fault" = flap ] && what="flapped from"
  echo "linkcut: link $veth0 $what +$((($(cat "$stamps/cut") - t0) / 1000000)) ms"
fi

# Each rank exits by itself, in time: its pending call within
# 2 x GIN_TIMEOUT_MS + 2 s, then teardown (a few seconds at most); after a
# flap, its last launch and agreement to stop within the same.
limit_ms=$((2 * GIN_TIMEOUT_MS + 2000 + 10000))
from="cut"
[ "$fault" = flap ] && from=stop
for r in 0 1 2 3; do
  wait "${pids[$r]}"
  rc=$?
  t=$((($(now_ns) - $(cat "$stamps/$from" 2> /dev/null || echo "$t0")) / 1000000))
  [ "$rc" -eq 0 ] || fail "rank $r exited with $rc"
  [ "$t" -lt "$limit_ms" ] || fail "rank $r exited $t ms after the $from (limit $limit_ms)"
  grep -q "^netfault: rank $r: OK $scenario" "$tmp/out.$r" ||
    fail "rank $r did not report OK"
  # A flap must have held up some launch (else it missed the traffic),
  # unless the data does not cross the link: libfabric's shm provider
  # between the namespaces (the machine's shared memory).
  if [ "$fault" = flap ] && ! { [ "${GIN_TRANSPORT:-}" = ofi ] && [ "${GIN_OFI_PROVIDER:-}" = shm ]; }; then
    held=$(sed -n 's/.*longest launch \([0-9]*\) ms.*/\1/p' "$tmp/out.$r")
    [ "${held:-0}" -ge $((flap_ms / 2)) ] ||
      fail "rank $r: its longest launch took ${held:-?} ms: no flap held it up"
  fi
  echo "linkcut: rank $r exited with $rc, $t ms after the $from"
done
pids=()
for r in 0 1 2 3; do
  grep -v " INFO " "$tmp/out.$r" | sed "s/^/[$r] /"
done
# Nobody died: no rank may say so, not even in a log line (a death seen
# by one rank is passed on to the others).
died=$(grep -h "died" "$tmp"/out.* | head -3)
[ -z "$died" ] || fail "a rank was said to have died: $died"
left=$( (ip netns pids "$ns0"; ip netns pids "$ns1") 2> /dev/null)
[ -z "$left" ] || fail "processes left in the namespaces: $left"
if ! ip netns del "$ns0" || ! ip netns del "$ns1"; then
  fail "cannot delete the namespaces"
fi
ip netns list | grep -q "gin-lc[01]-$$" && fail "namespaces left: $(ip netns list)"
ip link show 2> /dev/null | grep -q "glc[01]-$$" && fail "veth left in the root namespace"
if [ $fails -ne 0 ]; then
  echo "linkcut: $fails failure(s)"
  exit 1
fi
echo "linkcut: passed"
exit 0
