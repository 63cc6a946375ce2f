#!/bin/sh
# gin installed into a fresh prefix and used from outside its tree:
#  1. cmake --install puts headers, libraries, the CMake package,
#     pkg-config files and tools in the prefix;
#  2. the shared libraries export exactly the names the public headers
#     declare with GIN_API, and carry the SONAME the version rule gives;
#  3. consumer.c built three ways, each run with 2 ranks by the installed
#     ginrun on the host target: find_package(gin) + gin_device_program,
#     pkg-config gin-host (shared library), and the plain line
#     `cc -I PREFIX/include consumer.c PREFIX/lib/libgin_host.a -lpthread`;
#  4. with the cuda target and nvcc here, the same source built as CUDA
#     against libgin_cuda (not run: that needs a GPU).
# usage: install_check.sh BUILD_DIR SOURCE_DIR
# Exit 0 pass, 1 fail, 77 skip (no pkg-config, unless GIN_REQUIRE_PKGCONFIG=1).
set -u
B=$(cd "${1:?usage: install_check.sh build_dir source_dir}" && pwd)
S=$(cd "${2:?usage: install_check.sh build_dir source_dir}" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
P=$W/prefix
CC=${CC:-cc}
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
run() { # what, command...: runs it, its output to W/log, shown on failure
  what=$1
  shift
  if ! "$@" >"$W/log" 2>&1; then
    fail "$what"
    tail -20 "$W/log"
    return 1
  fi
}

run "cmake --install" cmake --install "$B" --prefix "$P" || exit 1
L=$P/$(sed -n 's/^CMAKE_INSTALL_LIBDIR:[A-Z]*=//p' "$B/CMakeCache.txt")
for f in include/gin/gin.h include/gin/device/gin_device.h bin/ginrun; do
  [ -e "$P/$f" ] || fail "not installed: $f"
done
for f in libgin_host.a libgin_host.so cmake/gin/ginConfig.cmake \
  cmake/gin/GinDeviceProgram.cmake pkgconfig/gin-host.pc; do
  [ -e "$L/$f" ] || fail "not installed: $(basename "$L")/$f"
done

# Exports: the GIN_API names of the public headers, no more, no fewer.
sh "$S/tests/public_names.sh" "$P/include" >"$W/public"
[ "$(wc -l <"$W/public")" -ge 30 ] || fail "only $(wc -l <"$W/public") GIN_API names found"
for lib in "$L"/libgin_*.so; do
  nm -D --defined-only "$lib" | awk '{print $3}' | LC_ALL=C sort -u >"$W/exported"
  if ! diff "$W/public" "$W/exported" >"$W/diff"; then
    fail "$(basename "$lib") exports other names than the public headers' (< public only, > exported only):"
    cat "$W/diff"
  fi
  soname=$(readelf -d "$lib" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
  case $soname in
  libgin_*.so.[0-9]*) ;;
  *) fail "$(basename "$lib"): SONAME '$soname'" ;;
  esac
done

R="$P/bin/ginrun -n 2 --timeout 60"
check_run() { # what, program
  if $R "$2" >"$W/out" 2>&1 && [ "$(grep -c 'ring ok; bad put reported' "$W/out")" -eq 2 ]; then
    echo "ok: $1"
  else
    fail "$1: the consumer did not pass"
    cat "$W/out"
  fi
}

# 1. find_package(gin) and gin_device_program.
if run "consumer: configure with find_package(gin)" cmake -S "$S/tests/install/consumer" \
  -B "$W/cm" -DCMAKE_PREFIX_PATH="$P" -DCMAKE_C_COMPILER="$CC" &&
  run "consumer: build" cmake --build "$W/cm"; then
  check_run "find_package(gin), gin_device_program" "$W/cm/consumer_host"
  if "$W/cm/consumer_ep" >"$W/out" 2>&1; then
    echo "ok: gin::ep_host ($(cat "$W/out"))"
  else
    fail "gin::ep_host: consumer_ep failed"
    cat "$W/out"
  fi
fi

# 2. pkg-config, shared library.
pkgconfig_skipped=0
if command -v pkg-config >/dev/null 2>&1; then
  if flags=$(PKG_CONFIG_PATH=$L/pkgconfig pkg-config --cflags --libs gin-host) &&
    run "consumer: pkg-config build" $CC "$S/tests/install/consumer/consumer.c" \
      $flags -Wl,-rpath,"$L" -o "$W/pc"; then
    check_run "pkg-config gin-host ($flags)" "$W/pc"
    ldd "$W/pc" 2>/dev/null | grep -q "libgin_host.so.*$L" ||
      fail "the pkg-config build does not load $L/libgin_host.so"
  fi
elif [ "${GIN_REQUIRE_PKGCONFIG:-0}" = 1 ]; then
  fail "no pkg-config (GIN_REQUIRE_PKGCONFIG=1)"
else
  echo "SKIP (this step): no pkg-config"
  pkgconfig_skipped=1
fi

# 3. The plain line: the include folder and the static library, no define,
#    and the libraries gin-host.pc names as private (-ldl where the build
#    has the ofi transport: it loads libfabric when ofi opens).
private=$(sed -n 's/^Libs.private: //p' "$L/pkgconfig/gin-host.pc")
run "consumer: plain compile line" $CC -I"$P/include" \
  "$S/tests/install/consumer/consumer.c" "$L/libgin_host.a" $private \
  -o "$W/plain" && check_run "plain line (-I include, libgin_host.a $private)" "$W/plain"

# 4. Where the cuda target was installed and nvcc is here: the same source
#    compiled as CUDA against the installed headers and libgin_cuda (built
#    and linked only: running it needs a GPU).
if [ -e "$L/libgin_cuda.so" ] && command -v nvcc >/dev/null 2>&1; then
  run "consumer: nvcc build against libgin_cuda" nvcc -x cu -arch=sm_90 \
    -I"$P/include" "$S/tests/install/consumer/consumer.c" -L"$L" -lgin_cuda \
    -Xlinker -rpath,"$L" -o "$W/cuda" && echo "ok: nvcc -x cu ... -lgin_cuda (built)"
fi

[ $fails -eq 0 ] || exit 1
[ $pkgconfig_skipped -eq 0 ] || { echo "SKIP: no pkg-config (the rest passed)"; exit 77; }
echo "install_check: passed"
