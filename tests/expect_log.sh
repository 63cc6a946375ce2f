#!/bin/sh
# expect_log.sh STATUS PATTERN MIN COMMAND...: runs COMMAND (its output
# shown, and kept to count); passes (0) when its exit status is the one
# wanted (0, or nz: a failure that is not a timeout's 124 or 137) and at
# least MIN lines of its output match PATTERN (grep -e). A command that
# skips (77) skips, and so does one whose output matches EXPECT_SKIP_IF
# (grep -E; where set: the machine lacks what the case needs, said by
# that line). Exit 0 pass, 1 fail, 77 skip.
set -u
want=${1:?usage: expect_log.sh STATUS PATTERN MIN COMMAND...}
pat=${2:?usage}
min=${3:?usage}
shift 3
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$@" >"$log" 2>&1
rc=$?
cat "$log"
[ $rc = 77 ] && exit 77
if [ -n "${EXPECT_SKIP_IF:-}" ] && why=$(grep -m1 -E "$EXPECT_SKIP_IF" "$log"); then
  echo "SKIP: this machine: $why"
  exit 77
fi
n=$(grep -c -e "$pat" "$log")
ok=0
case $want in
0) [ $rc = 0 ] && ok=1 ;;
*) [ $rc != 0 ] && [ $rc != 124 ] && [ $rc != 137 ] && ok=1 ;;
esac
[ "$n" -ge "$min" ] || ok=0
if [ $ok = 1 ]; then
  echo "expect_log: passed (status $rc, $n lines matching '$pat')"
  exit 0
fi
echo "expect_log: wanted status $want and at least $min lines matching '$pat'; got status $rc and $n lines"
exit 1
