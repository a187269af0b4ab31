# SPDX-License-Identifier: LGPL-2.1-or-later
# Thin wrapper around meson for the two commands a newcomer needs: `make demo` and `make check`.
BUILD ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
FUZZ_SECONDS ?= 300
FUZZ_TARGETS ?=
MESON_OPTS ?=

.PHONY: all deps build deb rpm check check-unit check-integration check-asan check-vm fuzz demo bench bench-load bench-hardening bench-network bench-languages bench-cluster clean

all: build

deps:
	@tools/install-deps

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS)

build: deps $(BUILD)/build.ninja
	meson compile -C $(BUILD)

# The packages (packaging/README.md), each built from a clean copy of the tree in a scratch
# directory below /var/tmp, into build-pkg/deb and build-pkg/rpm: dpkg-buildpackage + lintian
# (errors and warnings fail), rpmbuild + rpmlint. DEB_BUILD_OPTIONS=nocheck skips the unit tests.
deb: deps
	tools/make-deb

rpm: deps
	tools/make-rpm

check: build
	meson test -C $(BUILD) --print-errorlogs $(TESTS)
	$(MAKE) check-asan

check-unit: build
	meson test -C $(BUILD) --suite unit --suite fuzz --print-errorlogs

check-integration: build
	meson test -C $(BUILD) --suite integration --print-errorlogs

# ASan+UBSan over the unit tests and the daemon under the harness; the tests of suite 'plain-only'
# (the -pg legs, test-cluster-artifacts: see their meson.build) run in the plain build only.
check-asan: deps
	@[ -f $(BUILD_ASAN)/build.ninja ] || meson setup $(BUILD_ASAN) -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debug $(MESON_OPTS)
	meson compile -C $(BUILD_ASAN)
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		SANDBOX_HARNESS_SANITIZERS=1 meson test -C $(BUILD_ASAN) --print-errorlogs \
		$(if $(ASAN_TESTS),$(ASAN_TESTS),--no-suite plain-only)

# The fuzz tier (tests/fuzz/): each libFuzzer target for FUZZ_SECONDS under ASan+UBSan, in its own
# clang build; FUZZ_TARGETS="request conf" for some of them. Crashes land in
# $(BUILD_FUZZ)/fuzz-run/<target>/. (`make check` replays the corpora once: meson test suite 'fuzz'.)
fuzz: deps
	tools/run-fuzz --build $(BUILD_FUZZ) --seconds $(FUZZ_SECONDS) $(FUZZ_TARGETS)

# The VM tier: the integration suite inside a Debian bookworm guest (tests/vm/) where systemd is
# PID 1 on pure cgroup v2 and sandboxd is installed from its .deb (built here, tools/make-deb) with
# apt: upgrade from the previous version's package, the suite, remove, reinstall, purge. The image is
# cached in /var/cache/sandboxd-vm; KVM when the host has it, else TCG (~10 min in all).
check-vm: build
	tests/vm/run --build $(BUILD) $(VM_ARGS)

demo: build
	tests/harness/sandbox-harness --build $(BUILD) -- tools/demo

# The hardening comparison first: the main run ends with the issue-15 targets table (BENCH_ARGS,
# e.g. BENCH_ARGS="--baseline REV" or "--no-baseline").
bench: build
	bench/run --build $(BUILD) --hardening
	bench/run --build $(BUILD) $(BENCH_ARGS)

# systemd's kernel protections on the units: with and without, interleaved (~2 min).
bench-hardening: build
	bench/run --build $(BUILD) --hardening

# The load test (10,000 async submissions at 40/s, 8 slots; stops early if sandboxd falls behind;
# at most ~10 min): not part of `make bench`, which alone takes ~7-9 min.
# LOAD_ARGS, e.g. LOAD_ARGS="--load-count 1000 --load-rate 20" or "--load-rate 20 -- --max-seconds 660".
bench-load: build
	bench/run --build $(BUILD) --load $(LOAD_ARGS)

# The egress proxy (issue 16): 100 MiB and small requests through the proxy vs directly (~1 min).
bench-network: build
	bench/run --build $(BUILD) --network

# Compiled languages end to end vs their bare compile-and-run (issue 17): go, rust, c, java (~5 min).
bench-languages: build
	bench/run --build $(BUILD) --languages

# PostgreSQL store vs SQLite, one node vs three, the shared queue (issue 22): claim latency (one node,
# and claimed by another node), throughput and CPU per execution on tests/cluster's nodes under
# tests/pg/pg-scratch (~6 min).
bench-cluster: build
	bench/run --build $(BUILD) --cluster $(CLUSTER_ARGS)

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
