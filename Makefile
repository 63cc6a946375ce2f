# Thin wrapper over CMake/ctest. The README's two commands:
#   make run   - builds and runs the demo, a round trip and an EP exchange
#                (GPU if present, else host), ending with OK or FAILED
#   make test  - builds and runs the test suite (host target; cuda tests skip
#                without a GPU)
BUILD ?= build
JOBS ?= $(shell nproc)
NRANKS ?= 4
CMAKE_FLAGS ?=
PREFIX ?= /usr/local

.PHONY: all build run test test-tcp test-ofi test-python install asan tsan fuzz format format-check clean deps

all: build

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS)

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The demo, the 8-byte round trip against its floor and an EP
# dispatch/combine against the host-initiated baseline, on the GPU when one
# is visible (and the cuda target was built), on the host target otherwise;
# a summary, then OK or FAILED (scripts/run.sh).
run: build
	@bash scripts/run.sh $(BUILD) $(NRANKS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j 2 --timeout 600

# Headers, libraries, CMake package, pkg-config files and tools into
# $(PREFIX) (README, "Installing").
install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# The same suite with every peer forced through the proxy and tcp (tests
# that set their own backend or transport keep theirs): assumptions that
# hold on one path only show here.
test-tcp: build
	cd $(BUILD) && GIN_BACKEND=proxy GIN_TRANSPORT=tcp \
	  ctest --output-on-failure -j 2 --timeout 600

# The same suite with every peer through the proxy and the ofi transport
# (libfabric), once with each provider that runs without RDMA hardware:
# tcp (tcp;ofi_rxm) and shm.
test-ofi: build
	cd $(BUILD) && GIN_BACKEND=proxy GIN_TRANSPORT=ofi GIN_OFI_PROVIDER=tcp \
	  ctest --output-on-failure -j 2 --timeout 600
	cd $(BUILD) && GIN_BACKEND=proxy GIN_TRANSPORT=ofi GIN_OFI_PROVIDER=shm \
	  ctest --output-on-failure -j 2 --timeout 600

# The Python package: `pip install .` into a fresh virtual environment
# (the host target's library; PY_CONFIG: pip --config-settings) with
# PY_EXTRAS (torch: PyTorch from PyPI, about 3.5 GB with its CUDA
# libraries; the tests of torch tensors and gin_comm.deep_ep skip without
# it), then its tests (tests/python) under the launcher it installs.
PY ?= python3
PY_ENV ?= build-py
PY_CONFIG ?= --config-settings=cmake.define.GIN_CUDA=OFF
PY_EXTRAS ?= test,torch
test-python:
	rm -rf $(PY_ENV) && $(PY) -m venv $(PY_ENV)
	$(PY_ENV)/bin/pip install -q $(PY_CONFIG) --config-settings=build-dir=$(PY_ENV)/cmake ".[$(PY_EXTRAS)]"
	cd tests/python && ../../$(PY_ENV)/bin/python -m pytest -q

# The suite again under AddressSanitizer + UndefinedBehaviorSanitizer.
asan:
	$(MAKE) BUILD=build-asan CMAKE_FLAGS="-DGIN_CUDA=OFF -DGIN_SANITIZE=address,undefined" test

# ThreadSanitizer over the proxy, ring and transport tests and the suite
# (tcp_peer forks after starting threads, which TSan does not support; the
# EP tests (low-latency ep_ and normal-mode epn_) reuse buffers once a round
# trip through other processes says they are free, a happens-before TSan
# cannot see across processes; so do
# the ofi_shm rows: a peer's put lands in a window this rank's main thread
# cleared before a barrier, ordered only through the other processes).
tsan:
	$(MAKE) BUILD=build-tsan CMAKE_FLAGS="-DGIN_CUDA=OFF -DGIN_SANITIZE=thread" build
	cd build-tsan && TSAN_OPTIONS=die_after_fork=0 ctest --output-on-failure -j 2 --timeout 600 -R "proxy|tcp|ofi|conformance_host_([0-9]|nochecks)|^fault_|bootstrap|api_badargs|soak_host|badinput_host|watch_msg|ginrun" -E "tcp_peer|^ep_|^epn_|gin_epn_bench|_cuda_|ofi_shm"

# libFuzzer harnesses of the wire decoders (clang), each run for 15 s on
# its committed corpus (tests/fuzz; docs/RELIABILITY.md for long runs).
fuzz:
	$(MAKE) BUILD=build-fuzz CMAKE_FLAGS="-DGIN_CUDA=OFF -DGIN_FUZZ=ON -DCMAKE_C_COMPILER=clang" build
	cd build-fuzz && ctest -R fuzz --output-on-failure

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

format-check:
	clang-format --dry-run --Werror $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-asan build-tsan build-fuzz build-py
