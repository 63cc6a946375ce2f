#!/bin/sh
# hello_check.sh N COMMAND...: runs the hello example (examples/hello.c)
# as a job of N ranks and passes when it exits 0 and every rank r says it
# got "hello from rank r-1" (its left neighbour's words).
n=$1
shift
out=$("$@" 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "hello_check: exit status $rc"; exit 1; }
r=0
while [ $r -lt "$n" ]; do
  l=$(((r + n - 1) % n))
  echo "$out" | grep -q "rank $r of $n got \"hello from rank $l\"" ||
    { echo "hello_check: no line from rank $r of $n with rank $l's words"; exit 1; }
  r=$((r + 1))
done
echo "hello_check: passed: each of $n rank(s) got its left neighbour's words"
