# spindle: `make demo` and `make test` work on a fresh Debian machine.
SCHEME ?= scheme
SPINDLE = bin/spindle
# make install PREFIX=... [DESTDIR=...]: libraries with their compiled objects
# in PREFIX/lib/spindle, PREFIX/bin/spindle, docs in PREFIX/share/doc/spindle;
# make uninstall removes what the install's manifest lists (tools/install.sh).
PREFIX ?= /usr/local
DESTDIR ?=

.PHONY: all demo test test-safe test-chez10 chez10 browser mpi bench bench-deps check clean deps install uninstall

all: test

# Installs Chez Scheme (Debian's chezscheme) when `scheme` is missing.
deps:
	@command -v $(SCHEME) >/dev/null 2>&1 || { \
	  echo "installing chezscheme with apt-get"; \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chezscheme >/dev/null; }

demo: deps
	SCHEME="$(SCHEME)" $(SPINDLE) run examples/sqrt-demo.ss

# Chez Scheme 10.0.0, built once from Debian 13's source package into
# ~/.cache/spindle/chez-10.0.0 (tools/chez10.sh; about 5 minutes); make
# test-chez10 runs the tests on it (CI runs make test, then this).
chez10:
	@tools/chez10.sh

test-chez10:
	s=$$(tools/chez10.sh) && $(MAKE) test SCHEME="$$s"

test: deps browser mpi
	SCHEME="$(SCHEME)" SAFE_TESTS="$(SAFE_TESTS)" tests/run.sh

# make test runs these once more with SPINDLE_SAFE=1: the libraries compiled
# at optimize-level 0, with every assert-atomic check in (see
# lib/spindle/private/core/atomic.sls); make test-safe runs only them.
SAFE_TESTS = tests/test-threads.ss tests/test-events.ss tests/test-stress.ss tests/test-scheduler.ss \
  tests/test-futures.ss tests/test-owner-lock.ss tests/test-custodian.ss tests/test-srfi-18.ss \
  tests/test-io.ss tests/test-io-writes.ss tests/test-shared-reads.ss tests/test-console.ss \
  tests/test-sharing.ss tests/test-subprocess.ss tests/test-scope.ss \
  tests/test-places.ss tests/test-place-rings.ss tests/test-fork-join.ss tests/test-mpi.ss tests/test-mpi-edges.ss \
  tests/test-unarmed.ss
test-safe: deps
	SCHEME="$(SCHEME)" SAFE_TESTS="$(SAFE_TESTS)" tests/run.sh --safe-only

# Headless chromium loads the trace viewer's page in tests/test-trace.ss; if it
# cannot be installed, that part of the test is skipped (with a message).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium with apt-get (for tests/test-trace.ss)"; \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  { $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "could not install chromium: the browser check of tests/test-trace.ss will be skipped"; }

# Open MPI for tests/test-mpi.ss ((spindle mpi), spindle mpirun); if it
# cannot be installed, that test says so and is skipped.
mpi:
	@{ command -v mpirun >/dev/null 2>&1 && [ -e /usr/lib/x86_64-linux-gnu/libmpi.so.40 ]; } || { \
	  echo "installing openmpi-bin and libopenmpi-dev with apt-get (for tests/test-mpi.ss)"; \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  { $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openmpi-bin libopenmpi-dev >/dev/null; } || \
	  echo "could not install Open MPI: tests/test-mpi.ss will be skipped"; }

bench: deps bench-deps
	$(SPINDLE) bench micro scale

# The load generator and the peers of `spindle bench io` (never needed by make test).
BENCH_PACKAGES = wrk golang-go racket ruby python3
bench-deps:
	@missing=""; for c in wrk go racket ruby python3; do command -v $$c >/dev/null 2>&1 || missing=1; done; \
	[ -z "$$missing" ] || { \
	  echo "installing $(BENCH_PACKAGES) with apt-get"; \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(BENCH_PACKAGES) >/dev/null; }

check: deps
	$(SCHEME) --libdirs lib --program tests/support/check-libraries.ss

install: deps
	SCHEME="$(SCHEME)" tools/install.sh install "$(DESTDIR)$(PREFIX)"

uninstall:
	tools/install.sh uninstall "$(DESTDIR)$(PREFIX)"

clean:
	find . -name '*.so' -o -name '*.wpo' -o -name '*.dep' | xargs rm -f
