#!/bin/sh
# The library's layers point one way (docs/DESIGN-NOTES.md, "Layers"),
# bottom up: base, arch, transport, proxy, comm, ep. A file may include
# the headers of its own layer and those below it, and the public headers
# (gin/); EP, a client of the public API, may use only base/, gin/ and the
# public functions (GIN_API, and no device internal) besides its own. Checked twice: by the includes in the sources, and by
# the symbols each compiled object takes from the others (so that a call
# declared by hand, without its header, shows too).
# usage: layers_check.sh SOURCE_DIR OBJECT_DIR (the library's objects:
# BUILD/CMakeFiles/gin_host_obj.dir). Exit 0 pass, 1 fail.
set -u
export LC_ALL=C # sort and join agree on the order
S=${1:?usage: layers_check.sh source_dir object_dir}
O=${2:?usage: layers_check.sh source_dir object_dir}
LAYERS="base arch transport proxy comm ep"
rank() { # layer -> its place, bottom 0; -1 if not a layer
  i=0
  for l in $LAYERS; do
    [ "$l" = "$1" ] && { echo $i; return; }
    i=$((i + 1))
  done
  echo -1
}
# may USER LAYER use USED LAYER?
may() {
  [ "$1" = "$2" ] && return 0
  if [ "$1" = ep ]; then [ "$2" = base ]; return; fi
  [ "$(rank "$2")" -le "$(rank "$1")" ]
}
fails=0

# 1. Includes.
for f in $(cd "$S/src" && find . -name '*.[ch]' | sed 's|^\./||' | sort); do
  own=${f%%/*}
  for inc in $(sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([a-z_]*\)\/.*".*/\1/p' "$S/src/$f" | sort -u); do
    [ "$inc" = gin ] && continue
    if [ "$(rank "$inc")" -lt 0 ]; then
      echo "FAIL: src/$f includes from $inc/, which is not a layer"
      fails=$((fails + 1))
    elif ! may "$own" "$inc"; then
      echo "FAIL: src/$f ($own) includes from $inc/: $(grep -n "include \"$inc/" "$S/src/$f" | head -3 | tr '\n' ' ')"
      fails=$((fails + 1))
    fi
  done
done

# EP is a client of the public device API: no device internal (gin_*_,
# the trailing underscore that marks them in include/gin/device/) in its
# sources, kernels included.
for f in $(cd "$S/src/ep" && ls ./*.[ch] | sed 's|^\./||'); do
  bad=$(grep -noE '\bgin_[a-z0-9_]+_\b' "$S/src/ep/$f" | head -3 | tr '\n' ' ')
  if [ -n "$bad" ]; then
    echo "FAIL: src/ep/$f calls device internals: $bad"
    fails=$((fails + 1))
  fi
done

# The tools (gin-perf, gin-ep-bench, ginrun) are clients of the installed
# headers: they include gin/ and their own files, nothing of src/ or
# tests/.
for f in $(cd "$S/tools" && find . -name '*.[ch]' -o -name '*.cu' | sed 's|^\./||' | sort); do
  for inc in $(sed -n 's/^[ \t]*#[ \t]*include[ \t]*"\([^"]*\)".*/\1/p' "$S/tools/$f"); do
    case $inc in gin/*) continue ;; esac
    { [ -e "$S/tools/$inc" ] || [ -e "$S/tools/$(dirname "$f")/$inc" ]; } && continue
    echo "FAIL: tools/$f includes $inc, which is not an installed header nor a tool's"
    fails=$((fails + 1))
  done
done

# 2. Symbols: which layer defines each global the objects define, then
#    every undefined reference of an object against it.
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# The objects of the sources there are now (a build folder may hold
# others, of files since moved), and the cuda target's EP kernels, built
# from a generated wrapper of src/ep/ep_kernels.c.
{
  find "$O/src" -name '*.o' | sort | while read -r o; do
    src=${o#"$O"/}
    [ -e "$S/${src%.o}" ] && echo "$o"
  done
  find "$O" -path '*cuda_wrap/gin_ep_kernels.cu.o'
} >"$T/objs"
sh "$(dirname "$0")/public_names.sh" "$S/include" >"$T/public"
[ -s "$T/objs" ] || { echo "FAIL: no objects under $O/src"; exit 1; }
layer_of() { # object -> its layer (the folder under src/; ep for the wrapper)
  case $1 in
  */cuda_wrap/gin_ep_kernels.cu.o) echo ep ;;
  *) echo "${1#"$O"/src/}" | cut -d/ -f1 ;;
  esac
}
while read -r o; do
  nm --defined-only -g "$o" | awk -v l="$(layer_of "$o")" '$2 ~ /[TDBRVW]/ {print $3, l}'
done <"$T/objs" | sort -u >"$T/defs"
while read -r o; do
  rel=${o#"$O"/}
  layer=$(layer_of "$o")
  nm -u "$o" | awk '{print $2}' | sort -u | join - "$T/defs" | while read -r sym def; do
    [ "$layer" = ep ] && grep -qx "$sym" "$T/public" && continue
    if ! may "$layer" "$def"; then
      echo "FAIL: ${rel%.o} ($layer) calls $sym of the $def layer"
    fi
  done
done <"$T/objs" >"$T/calls"
if [ -s "$T/calls" ]; then
  cat "$T/calls"
  fails=$((fails + $(wc -l <"$T/calls")))
fi

[ $fails -eq 0 ] || { echo "layers_check: $fails upward use(s)"; exit 1; }
echo "layers_check: passed ($(wc -l <"$T/objs") objects, layers $LAYERS)"
