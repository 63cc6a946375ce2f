# shellcheck shell=bash
# Two "hosts" on one machine for the multi-host tests: two network
# namespaces joined by a veth pair, with addresses inside the namespaces
# only. Sourced by bash scripts (tests/transport/multihost.sh,
# tests/fault/linkcut.sh):
#
#   netns_init TAG SUBNET  exits 77 (skip) unless root with `ip`; names
#                          the namespaces ns0/ns1 (gin-TAG0-PID, ...), the
#                          veth ends veth0/veth1 (gTAG0-PID, ...) and their
#                          addresses addr0/addr1 (SUBNET.1, SUBNET.2, /24).
#                          Each end also has a second address, in a
#                          network the other end has no route to (as a
#                          host's other networks): ranks must pick the
#                          address their peers reach.
#                          Creates nothing: set the EXIT trap, then
#   netns_up               creates both namespaces and the veth pair, up,
#                          and waits (bounded) for a carrier on both ends;
#                          exits 77 if the machine cannot
#   netns_kill SIG         sends SIG to every pid in the array `pids`,
#                          reaps them, empties it
#   netns_del              deletes both namespaces (quietly)

# Where the machine cannot make namespaces the tests skip (exit 77), or
# fail when GIN_REQUIRE_NETNS=1 (CI sets it: a skip would pass unseen).

# Skips with the reason given, or fails if namespaces are required.
netns_skip() {
  if [ "${GIN_REQUIRE_NETNS:-0}" = 1 ]; then
    echo "FAIL: $* (GIN_REQUIRE_NETNS=1)"
    exit 1
  fi
  echo "SKIP: $*"
  exit 77
}

netns_init() {
  if [ "$(id -u)" != 0 ]; then
    netns_skip "needs root for ip netns"
  fi
  if ! command -v ip > /dev/null; then
    netns_skip "no ip command"
  fi
  ns0=gin-${1}0-$$ ns1=gin-${1}1-$$
  veth0=g${1}0-$$ veth1=g${1}1-$$
  addr0=$2.1 addr1=$2.2
  pids=()
}

netns_up() {
  local err
  if ! err=$(ip netns add "$ns0" 2>&1 && ip netns add "$ns1" 2>&1); then
    netns_skip "ip netns add failed: $err"
  fi
  if ! err=$( (ip link add "$veth0" netns "$ns0" type veth peer name "$veth1" \
    netns "$ns1" &&
    ip -n "$ns0" addr add "$addr0/24" dev "$veth0" &&
    ip -n "$ns1" addr add "$addr1/24" dev "$veth1" &&
    ip -n "$ns0" addr add 198.51.100.1/24 dev "$veth0" &&
    ip -n "$ns1" addr add 203.0.113.2/24 dev "$veth1" &&
    ip -n "$ns0" link set lo up && ip -n "$ns1" link set lo up &&
    ip -n "$ns0" link set "$veth0" up &&
    ip -n "$ns1" link set "$veth1" up) 2>&1); then
    netns_skip "cannot set up the veth pair: $err"
  fi
  # Both ends must have a carrier before a job starts (bounded; the
  # bootstrap retries its connections anyway).
  for _ in $(seq 50); do
    ip -n "$ns0" link show "$veth0" | grep -q LOWER_UP &&
      ip -n "$ns1" link show "$veth1" | grep -q LOWER_UP && break
    sleep 0.1
  done
}

netns_kill() {
  local p
  for p in "${pids[@]}"; do kill -"$1" "$p" 2> /dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2> /dev/null; done
  pids=()
}

netns_del() {
  ip netns del "$ns0" 2> /dev/null
  ip netns del "$ns1" 2> /dev/null
}
