#!/usr/bin/env bash
# Two "hosts" on one machine: two network namespaces joined by a veth pair
# (10.231.7.1/24 and 10.231.7.2/24, inside the namespaces only; set up by
# tests/netns_common.sh), 2 ranks of a program in each (MULTIHOST_RANKS
# below), started the way
# torchrun presents ranks (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
# MASTER_ADDR, MASTER_PORT).
# Ranks in one namespace count as one host (direct path); ranks across
# namespaces reach each other through the tcp transport. The job runs
# twice: GIN_BACKEND=auto (direct + tcp) and GIN_BACKEND=proxy (ipc + tcp).
# Every rank must pass and must have connected its remote peers over tcp.
# MULTIHOST_TRANSPORT=ofi: the ofi transport (libfabric's tcp provider)
# instead, for every proxied peer (GIN_BACKEND=proxy: those of its own
# namespace too).
#
# MULTIHOST_RANKS=N (even, default 4): N/2 ranks in each namespace.
#
# Usage: [MULTIHOST_TRANSPORT=tcp|ofi] [MULTIHOST_RANKS=N] multihost.sh prog [args...]
#        (as root)
# Exit 0 pass, 1 fail, 77 skip (not root, or no network namespaces).
set -u
transport=${MULTIHOST_TRANSPORT:-tcp}
nranks=${MULTIHOST_RANKS:-4}
half=$((nranks / 2))
prog=("$@")
if [ "$half" -lt 1 ] || [ $((half * 2)) -ne "$nranks" ]; then
  echo "multihost.sh: MULTIHOST_RANKS=$nranks: expected an even number >= 2" >&2
  exit 2
fi
if [ ${#prog[@]} -eq 0 ]; then
  echo "usage: $0 prog [args...]" >&2
  exit 2
fi
# shellcheck source=SCRIPTDIR/../netns_common.sh
. "$(dirname "$0")/../netns_common.sh"
netns_init h 10.231.7
tmp=$(mktemp -d)
trap 'netns_kill TERM; netns_del; rm -rf "$tmp"' EXIT
trap 'exit 130' INT TERM
netns_up

# run_job NAME [VAR=value...]: nranks ranks, half per namespace; 0 if all
# passed.
run_job() {
  local name=$1
  shift
  local start=$SECONDS rc=0
  pids=()
  for r in $(seq 0 $((nranks - 1))); do
    local ns=$ns0
    [ $r -ge $half ] && ns=$ns1
    # GIN_TRANSPORT=auto first (a scenario may override it): what is
    # checked below is auto's choice, ipc within a host and tcp across;
    # or ofi for every proxied peer.
    local want=auto
    [ "$transport" = ofi ] && want="ofi GIN_OFI_PROVIDER=tcp"
    # shellcheck disable=SC2086 # want is two words for ofi
    ip netns exec "$ns" env GIN_TRANSPORT=$want "$@" RANK=$r WORLD_SIZE=$nranks \
      LOCAL_RANK=$((r % half)) LOCAL_WORLD_SIZE=$half MASTER_ADDR=$addr0 MASTER_PORT=29500 \
      GIN_TIMEOUT_MS=30000 GIN_DEBUG=INFO GIN_DEBUG_SUBSYS=INIT,NET \
      timeout 120 "${prog[@]}" > "$tmp/$name.$r.log" 2>&1 &
    pids+=($!)
  done
  for r in $(seq 0 $((nranks - 1))); do
    if ! wait "${pids[$r]}"; then
      echo "FAIL: $name: rank $r failed"
      rc=1
    fi
  done
  pids=()
  for r in $(seq 0 $((nranks - 1))); do
    # The remote peers of each rank (the other namespace's) go through tcp
    # (or ofi), on the veth.
    local lo=$((r < half ? half : 0)) me=$addr0
    [ $r -ge $half ] && me=$addr1
    for p in $(seq $lo $((lo + half - 1))); do
      if ! grep -q "rank $r: peer $p path proxy ($transport)" "$tmp/$name.$r.log"
      then
        echo "FAIL: $name: rank $r does not reach rank $p through $transport"
        rc=1
      fi
    done
    if [ "$transport" = ofi ]; then
      local n=$half
      [ "$name" = proxy ] && n=$((nranks - 1))
      if ! grep -q "ofi: rank $r: provider tcp;ofi_rxm, $n peers" \
          "$tmp/$name.$r.log"; then
        echo "FAIL: $name: rank $r did not set up $n ofi peers"
        rc=1
      fi
    elif ! grep -q "tcp: rank $r on $me:[0-9]*: $half peers connected" \
        "$tmp/$name.$r.log"; then
      echo "FAIL: $name: rank $r did not connect $half tcp peers from $me"
      rc=1
    fi
  done
  for r in $(seq 0 $((nranks - 1))); do
    grep -v " INFO " "$tmp/$name.$r.log" | sed "s/^/[$name $r] /"
  done
  echo "$name: $([ $rc = 0 ] && echo passed || echo FAILED) in" \
    "$((SECONDS - start)) s"
  return $rc
}

rc=0
run_job auto GIN_BACKEND=auto || rc=1
run_job proxy GIN_BACKEND=proxy || rc=1
exit $rc
