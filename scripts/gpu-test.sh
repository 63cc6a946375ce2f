#!/usr/bin/env bash
# The GPU test run: the README's test command on a GPU machine, then what
# only a GPU machine runs. From the repository root of a machine with an
# NVIDIA GPU and the CUDA toolkit:
#
#   OUT=DIR scripts/gpu-test.sh            (default DIR: ./gpu-test-out)
#
# 1. Builds build-gpu (the default build, cuda target for sm_90) and runs
#    its test matrix: `ctest`, every row of both targets (ONLY=cuda: `ctest
#    -L cuda`, the rows that need the cuda target). Rows of ranks sharing
#    the GPU run one at a time, each job under an MPS daemon ginrun starts
#    for it (tests/CMakeLists.txt says how rows are named and labelled).
# 2. The Python package's tests on the cuda target: `pip install .` into
#    build-gpu-py (a virtual environment over the machine's own packages:
#    its PyTorch, pytest, scikit-build-core; nothing is downloaded), then
#    tests/python with GIN_COMM_TARGET=cuda.
# 3. Where DEEPEP names a DeepEP checkout (v1.2.1): DeepEP's low-latency
#    test through gin_comm.deep_ep (scripts/deepep-test.sh, with its own
#    settings: RUNS, PRESSURE).
#
# Output in $OUT: summary.txt (a line per part, then the verdict),
# meta.txt, logs.tgz (ctest's output, the Python and DeepEP logs); the
# last line printed is one summary line. Exit status 0 when every part
# passed and no cuda row skipped.
# Settings (environment): NO_BUILD=1, JOBS (nproc), ONLY=cuda, CTEST_ARGS
# (more ctest arguments, e.g. "-R ^ep_"), RACECHECK=1 (adds the
# compute-sanitizer racecheck rows: ctest -L racecheck), PYTHON (python3),
# NO_PYTHON=1, DEEPEP, LIMIT (seconds a part, 3600), GIN_COMMIT (the
# commit meta.txt names where the tree has no git history).
set -u
LIMIT=${LIMIT:-3600}
PYTHON=${PYTHON:-python3}
case ${DEEPEP:-} in /* | '') ;; *) DEEPEP=$PWD/$DEEPEP ;; esac
# shellcheck source=gpu-lib.sh
. "$(dirname "$0")/gpu-lib.sh"
gpu_begin gpu-test-out
gpu_meta "OUT=$OUT ONLY=${ONLY:-} CTEST_ARGS=${CTEST_ARGS:-} scripts/gpu-test.sh" >"$OUT/meta.txt"
if ! nvidia-smi -L >/dev/null 2>&1; then
  say "no GPU (nvidia-smi -L): nothing to run"
  fails=1
  finish
  exit 1
fi

B=build-gpu
if [ "${NO_BUILD:-0}" != 1 ]; then
  t0=$SECONDS
  rc_opt=()
  [ -n "${RACECHECK:-}" ] && rc_opt=(-DGIN_RACECHECK=ON)
  configure_build $B "$LOGS/build.log" all -- -DCMAKE_CUDA_FLAGS=-lineinfo ${rc_opt[@]+"${rc_opt[@]}"}
  rc=$?
  say "build: $B rc=$rc ($((SECONDS - t0)) s)"
  builds_ok $rc
fi

# ------------------------------------------------------ 1. the matrix
labels=()
[ "${ONLY:-}" = cuda ] && labels=(-L "cuda${RACECHECK:+|racecheck}")
unset GIN_BACKEND GIN_TRANSPORT CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
# shellcheck disable=SC2086 # CTEST_ARGS is a list of arguments
bounded ctest ctest --test-dir $B --output-on-failure -j "$JOBS" --timeout 600 \
  ${labels[@]+"${labels[@]}"} ${CTEST_ARGS:-}
rc=$?
log=$LOGS/ctest.log
line=$(grep -E '^[0-9]+% tests passed' "$log" | tail -1)
nskip=$(grep -c '(Skipped)' "$log")
cskip=$(grep '(Skipped)' "$log" | grep -c cuda)
ctest_line="ctest: ${line:-no result (status $rc)}, $nskip skipped"
judge ctest $rc
say "$ctest_line"
if [ "$cskip" -gt 0 ]; then # on a GPU machine every cuda row must run
  say "cuda rows skipped on this GPU machine: $cskip"
  grep '(Skipped)' "$log" | grep cuda | sed 's/^/    /' | tee -a "$SUMMARY"
  skipped=$((skipped + 1))
fi

# ------------------------------------------------------ 2. Python, cuda target
py_line="python: not run (NO_PYTHON=1)"
if [ "${NO_PYTHON:-0}" != 1 ]; then
  V=build-gpu-py
  py_install() {
    rm -rf "$V" && "$PYTHON" -m venv --system-site-packages "$V" &&
      "$V/bin/pip" install -q --no-build-isolation --no-deps \
        --config-settings=cmake.define.GIN_CUDA=ON \
        --config-settings=cmake.define.GIN_CUDA_ARCH=90 \
        --config-settings=build-dir="$V/cmake" .
  }
  bounded python_install py_install
  rc=$?
  judge python_install $rc
  if [ $rc = 0 ]; then
    bounded python_cuda sh -c 'cd tests/python && GIN_COMM_TARGET=cuda "$0" -m pytest -q -rs' \
      "$PWD/$V/bin/python"
    rc=$?
    judge python_cuda $rc
    py_line="python: $(grep -E '(passed|failed|error)' "$LOGS/python_cuda.log" | tail -1)"
  else
    py_line="python: the package did not install"
  fi
  say "$py_line"
fi

# ------------------------------------------------------ 3. DeepEP's test
dep_line="deepep: not run (no DEEPEP)"
if [ -n "${DEEPEP:-}" ]; then
  if [ -x build-gpu-py/bin/python ]; then
    bounded deepep env PATH="$PWD/build-gpu-py/bin:$PATH" DEEPEP="$DEEPEP" \
      OUT="$OUT/deepep" bash scripts/deepep-test.sh
    rc=$?
    judge deepep $rc
    dep_line="deepep: $(tail -1 "$OUT/deepep/summary.txt" 2>/dev/null || echo "status $rc")"
  else
    say "deepep: needs the Python package (part 2)"
    skipped=$((skipped + 1))
    dep_line="deepep: skipped (no Python package)"
  fi
  say "$dep_line"
fi

finish
rc=$?
echo "gpu-test: $ctest_line; $py_line; $dep_line; $(tail -1 "$SUMMARY")"
exit $rc
