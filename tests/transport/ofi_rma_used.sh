#!/bin/sh
# The ofi transport's RMA writes are taken where asked for and only then:
# the conformance suite over ofi with provider PROV, once with
# GIN_OFI_RMA=1 and GIN_OFI_RMA_MIN=1 (every put as writes; the suite's
# puts are smaller than the default threshold), once with GIN_OFI_RMA=0.
# Each rank logs at close how many
# puts went as RMA writes; with writes every rank counts some, without
# none does, and the suite passes both times.
# usage: ofi_rma_used.sh GINRUN CONFORMANCE PROV. Exit 0 pass, 1 fail.
set -u
GINRUN=${1:?usage: ofi_rma_used.sh ginrun conformance prov}
PROG=${2:?}
PROV=${3:?}
fails=0
fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}
for rma in 1 0; do
  out=$(GIN_DEBUG=INFO GIN_BACKEND=proxy GIN_TRANSPORT=ofi \
    GIN_OFI_PROVIDER="$PROV" GIN_OFI_RMA=$rma GIN_OFI_RMA_MIN=1 \
    "$GINRUN" -n 2 --timeout 100 "$PROG" 2>&1) ||
    fail "GIN_OFI_RMA=$rma: the suite failed: $(echo "$out" | grep -i fail | head -3)"
  counts=$(echo "$out" | sed -n 's/.*ofi: rank [0-9]*: \([0-9]*\) puts as [0-9]* RMA writes.*/\1/p')
  [ "$(echo "$counts" | grep -c .)" -eq 2 ] ||
    fail "GIN_OFI_RMA=$rma: want a count from each of 2 ranks, got: $counts"
  for c in $counts; do
    if [ $rma = 1 ] && [ "$c" -eq 0 ]; then
      fail "GIN_OFI_RMA=1: a rank sent no put as RMA writes"
    elif [ $rma = 0 ] && [ "$c" -ne 0 ]; then
      fail "GIN_OFI_RMA=0: a rank sent $c puts as RMA writes"
    fi
  done
  echo "ofi_rma_used: $PROV, GIN_OFI_RMA=$rma: puts as RMA writes per rank: $(echo $counts)"
done
[ $fails -eq 0 ] && echo "ofi_rma_used: $PROV: OK"
[ $fails -eq 0 ]
