#!/usr/bin/env bash
# Prints a digest of the source tree's contents (include, src, tools,
# tests, CMake files), the same on any copy of the same files. The GPU
# machine's copy of the tree may carry stale git metadata, so its runs
# log this digest; compare it with `scripts/tree-digest.sh` here to know
# which code ran. Usage: scripts/tree-digest.sh [root]
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
# Only the paths this tree has: a missing one made find, and with
# pipefail the script, fail after printing the digest.
paths=()
for p in include src tools tests CMakeLists.txt cmake; do
  [ -e "$p" ] && paths+=("$p")
done
find "${paths[@]}" -type f \
  \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.txt' -o -name '*.cmake' \) \
  2>/dev/null | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16
