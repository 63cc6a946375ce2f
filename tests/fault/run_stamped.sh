#!/bin/sh
# Runs a command with a fresh directory for time stamps (the fault tests'
# --stamp DIR) in place of each argument "@DIR@", then removes it.
# usage: run_stamped.sh CMD [ARGS...]; exits with the command's status.
set -u
DIR=$(mktemp -d) || exit 1
trap 'rm -rf "$DIR"' EXIT
n=$#
i=0
while [ $i -lt $n ]; do
  a=$1
  shift
  [ "$a" = "@DIR@" ] && a=$DIR
  set -- "$@" "$a"
  i=$((i + 1))
done
"$@"
