#!/usr/bin/env bash
# Copies the tree in the current directory, build directories left out,
# to DEST (replaced), and applies PATCH (a file, relative to the current
# directory or absolute) there when given: the second tree of a GPU A/B
# (device-run.sh's EXP, lat-ab.sh). Usage: scripts/copy-tree.sh DEST [PATCH]
set -u
dest=${1:?DEST}
p=${2:-}
case $p in "" | /*) ;; *) p=$PWD/$p ;; esac
rm -rf "$dest" && mkdir -p "$dest" && tar --exclude='./build*' -cf - . | tar -xf - -C "$dest" || exit 1
[ -z "$p" ] || (cd "$dest" && patch -p1 <"$p" >/dev/null)
