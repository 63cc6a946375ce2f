#!/usr/bin/env bash
# Copies the tree in the current directory, build directories left out,
# to DEST (replaced), and applies the PATCHes (files, relative to the
# current directory or absolute) there in turn, reversed with -R (a tree
# before a change): the second tree of an A/B (device-run.sh's EXP,
# lat-ab.sh, the probes' tcp-ab.sh, ring-ab.sh, tcp-timeline.sh).
# Usage: scripts/copy-tree.sh DEST [-R] [PATCH...]
set -u
dest=${1:?DEST}
shift
rev=()
if [ "${1:-}" = -R ]; then
  rev=(-R)
  shift
fi
rm -rf "$dest" && mkdir -p "$dest" && tar --exclude='./build*' -cf - . | tar -xf - -C "$dest" || exit 1
for p in "$@"; do
  [ -n "$p" ] || continue
  case $p in /*) ;; *) p=$PWD/$p ;; esac
  (cd "$dest" && patch "${rev[@]}" -p1 <"$p" >/dev/null) || exit 1
done
