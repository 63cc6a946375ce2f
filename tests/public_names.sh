#!/bin/sh
# Prints, sorted, the names the public headers under INCLUDE_DIR/gin
# declare with GIN_API (what the shared libraries export).
# usage: public_names.sh INCLUDE_DIR
find "${1:?usage: public_names.sh include_dir}/gin" -name '*.h' -exec cat {} + |
  tr '\n' ' ' | grep -oE 'GIN_API [^;{(#]*' | grep -oE 'gin_[a-z0-9_]+ *$' |
  tr -d ' ' | LC_ALL=C sort -u
