# Thin wrapper over CMake. `make demo` and `make test` are the Quick start.
BUILD       ?= build
BUILD_ASAN  ?= build-asan
BUILD_TSAN  ?= build-tsan
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
DEBIAN_PKGS := build-essential cmake pkg-config libhiredis-dev libsodium-dev libcriterion-dev \
               redis-server redis-tools libssl-dev openssl valgrind docker-compose iptables iproute2 \
               python3-prometheus-client libuv1-dev libevent-dev \
               liblua5.1-0-dev abigail-tools debhelper lintian doxygen fakeroot dpkg-dev
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_DIR    := $(CURDIR)/$(BUILD)/demo-cluster

.PHONY: all deps build test test-asan test-tsan valgrind demo clean

all: build

# Installs the Debian packages the project needs, only those missing.
deps:
	@missing=""; for p in $(DEBIAN_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# CTest runs JOBS tests at once: the integration tests are split between
# two fixture clusters (test/CMakeLists.txt), so two of them run side by
# side; the failover experiments run alone (RUN_SERIAL). The fault-injection
# scenarios (label fault) run in a pass of their own after the rest,
# FAULT_JOBS at once (each starts its own cluster and mostly waits on its
# schedule), never beside an integration test:
# run_suite (build directory, then CTest's options) runs both passes and
# fails when either did. CTest's fixtures always stop their nodes;
# stop_test_nodes (build directory as argument) also stops what an
# interrupted run left.
CTEST       = ctest --output-on-failure -j $(JOBS)
FAULT_JOBS ?= 4
run_suite = $(CTEST) --test-dir $(1) --timeout 900 -LE 'valgrind|fault|deb' $(2); rc=$$?; \
	  ctest --output-on-failure -j $(FAULT_JOBS) --test-dir $(1) --timeout 900 -L fault $(2) || rc=1; \
	  $(call stop_test_nodes,$(1)); exit $$rc
stop_test_nodes = for d in $(CURDIR)/$(1)/test/cluster5*/; do \
	  [ ! -d "$$d" ] || deploy/cluster.sh stop -d "$$d" >/dev/null 2>&1; done; \
	  test/tls/tls_nodes.sh stop $(CURDIR)/$(1)/test/tls-nodes >/dev/null 2>&1

# The whole suite: unit tests, then integration tests against real
# 5-master clusters that CTest starts and always stops.
test: build
	$(call run_suite,$(BUILD))

# The same suite built with AddressSanitizer + UndefinedBehaviorSanitizer.
# abort_on_error=1: a leak found when a process exits aborts it, which is
# what fails a Criterion test (its runner ignores a worker's exit status,
# so LeakSanitizer's exit code alone would pass).
test-asan: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_SANITIZE=ON >/dev/null
	cmake --build $(BUILD_ASAN) -j $(JOBS)
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1; \
	  $(call run_suite,$(BUILD_ASAN))

# The threaded tests (label threads) under ThreadSanitizer: only their
# programs are built.
TSAN_TARGETS := stress_threads stress_permits stress_resolve
test-tsan: deps
	cmake -S . -B $(BUILD_TSAN) -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_TSAN=ON >/dev/null
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target $(TSAN_TARGETS)
	TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
	  $(CTEST) --test-dir $(BUILD_TSAN) --timeout 900 -L threads; rc=$$?; \
	  $(call stop_test_nodes,$(BUILD_TSAN)); exit $$rc

# The test binaries under valgrind memcheck (unit and integration), from
# the build `make test` uses.
# JOBS at once, on the two fixture clusters like the plain run.
valgrind: build
	REDLOCK_VALGRIND=1 $(CTEST) --test-dir $(BUILD) --timeout 1800 -L valgrind; rc=$$?; \
	  $(call stop_test_nodes,$(BUILD)); exit $$rc

# The flash sale (examples/flashsale.c): starts a local 5-node cluster in
# $(DEMO_DIR), runs the sale once without a lock and once with libredlock
# while the program kills, pauses and restarts nodes of that cluster through
# deploy/cluster.sh, and always stops the cluster again (also on failure or
# Ctrl-C). Exits with the demo's status.
demo: build
	@dir='$(DEMO_DIR)'; \
	  trap 'deploy/cluster.sh stop -d "$$dir" >/dev/null 2>&1' EXIT; trap 'exit 130' INT TERM HUP; \
	  deploy/cluster.sh start -n 5 -d "$$dir" >/dev/null || exit 1; \
	  REDLOCK_NODES=$$(paste -sd, "$$dir/nodes") REDLOCK_CLUSTER_DIR="$$dir" \
	  REDLOCK_CLUSTER_SH='$(CURDIR)/deploy/cluster.sh' $(BUILD)/examples/flashsale

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_TSAN)

# `make docs`: the reference, include/redlock.h, built with Doxygen
# (doc/Doxyfile) into $(BUILD)/doc/html. Every warning fails it, and a
# public name without documentation is a warning.
.PHONY: docs
docs: deps
	mkdir -p $(BUILD)/doc
	DOCS_OUT=$(CURDIR)/$(BUILD)/doc doxygen doc/Doxyfile

# ------------------------------------------------------------- benchmarks
# `make bench`: every benchmark of bench/ in one sitting at one commit
# (issue 26; bench/all.sh, 30+ minutes on 2 cores): a Release build of all
# the benchmark programs in $(BENCH_BUILD) (CMake target bench_all), then
# each suite below in its full mode, one after another, each with its own
# local redis-server masters (deploy/cluster.sh, always stopped); node-redlock
# is installed with npm into bench/node/node_modules. Writes every suite's
# bench/RESULTS-NAME.md and plots, then bench/RESULTS.md: the summary table
# of every suite's headline workloads and targets (PASS/FAIL) on top, then a
# section per suite. A suite that fails is marked ERROR there and the others
# still run; the exit status is then 1. `make bench-quick`: the same with
# every suite in its quick mode (about 5 minutes), everything written into
# $(BENCH_BUILD)/bench (the report: RESULTS-quick.md), never over bench/*.md.
BENCH_BUILD ?= build-bench
BENCH_PKGS  := gnuplot-nox redis-tools nodejs npm

.PHONY: bench bench-quick bench-core bench-core-quick bench-hosts bench-hosts-quick bench-deps bench-build bench-compile \
        bench-stats bench-async bench-async-quick bench-handoff bench-handoff-quick bench-kinds bench-kinds-quick \
        bench-degraded bench-degraded-quick bench-scale bench-scale-quick bench-cluster bench-cluster-quick \
        bench-fence bench-fence-quick bench-replicated bench-replicated-quick

# Like deps, for the benchmark's extra tools. node and npm count as present
# when the commands exist (e.g. NodeSource's nodejs, which bundles npm); if
# they cannot be installed, the suite still runs and marks node-redlock n/a.
bench-deps: deps
	@missing=""; nodepkgs=""; for p in $(BENCH_PKGS); do \
	  case $$p in \
	    nodejs) command -v node >/dev/null 2>&1 && continue; nodepkgs="$$nodepkgs $$p"; continue ;; \
	    npm) command -v npm >/dev/null 2>&1 && continue; nodepkgs="$$nodepkgs $$p"; continue ;; \
	  esac; \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing$$nodepkgs" ]; then \
	  echo "Installing Debian packages:$$missing$$nodepkgs"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq || exit 1; \
	fi; \
	if [ -n "$$missing" ]; then \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing || exit 1; \
	fi; \
	if [ -n "$$nodepkgs" ]; then \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$nodepkgs || \
	    echo "warning: could not install$$nodepkgs; node-redlock will be n/a"; \
	fi

bench-build: bench-deps bench-compile

bench-compile: deps
	cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_BENCH=ON -DREDLOCK_BUILD_TESTS=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target bench_all

# `make bench-stats`: only the cost of redlock_stats' counters (on / off,
# interleaved; about a minute), printed, no report written.
bench-stats: bench-compile
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/run.sh --stats-only

bench: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/all.sh

bench-quick: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/all.sh --quick

# `make bench-core`: what `make bench` was before issue 26 (bench/run.sh,
# about 13 minutes): floor, libredlock and node-redlock, single caller and
# 1..64 threads, the server limit, the cost of the safety features and of
# the statistics, nodes killed and paused, N = 3..9, memory (the host-name
# run it ended with is now a suite of its own, `make bench-hosts`). Writes
# bench/RESULTS-core.md and bench/latency.png. `make bench-core-quick`: the
# same in about a minute, results in $(BENCH_BUILD)/bench only.
bench-core: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/run.sh

bench-core-quick: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/run.sh --quick

# `make bench-async`: the non-blocking API's rows (issue 13; bench/async.sh,
# about 8 minutes): one libuv loop thread with 1..512 acquire + release
# cycles in flight, against node-redlock with as many callers and the
# blocking API on as many threads (headline: 256 in flight vs node-redlock's
# 256 callers and 32 blocking threads), bytes per pending acquire, heap calls
# per cycle. Writes bench/RESULTS-async.md and bench/async.png.
# `make bench-async-quick`: the same in about 1.5 minutes, results in
# $(BENCH_BUILD)/bench. bench_async needs libuv and include/redlock/libuv.h.
bench-async: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/async.sh

bench-async-quick: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/async.sh --quick

# `make bench-handoff`: waiting for a taken lock (issue 14, item 7;
# bench/handoff.sh, about 1.5 minutes, its own 5-node cluster): 8 threads on
# one resource with default options, against node-redlock's defaults --
# handoff latency from a release to the next grant, lock busy time, grants
# per thread -- and the commands 64 idle waiters cost the nodes. Writes its
# section of bench/RESULTS-handoff.md (named by HANDOFF_LABEL, default
# "latest"; other sections are kept; HANDOFF_ARGS='--note "..."' adds a
# paragraph to it) and bench/handoff.png (the CDFs of every section).
# `make bench-handoff-quick`: about 20 s, results in $(BENCH_BUILD)/bench
# only.
HANDOFF_LABEL ?= latest
bench-handoff: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/handoff.sh --label "$(HANDOFF_LABEL)" $(HANDOFF_ARGS)

bench-handoff-quick: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/handoff.sh --quick

# `make bench-degraded`: lock availability while a minority of the 5 nodes
# fails (issue 23, item 6; bench/degraded.sh, about 5 minutes, its own
# 5-node cluster): healthy, one node paused (SIGSTOP), one killed (SIGKILL),
# two paused, each applied a few seconds into the run and undone before the
# next, for 1 process x 8 threads on one redlock_t, 2 processes x 4 threads
# (overlaps counted across them) and node-redlock with 8 callers; 5 ms hold,
# 5 ms work, a 3 s wait bound, default options. Grants/s and their % of
# healthy, handoff p50/p99, busy %, overlaps, the targets with PASS/FAIL in
# bench/RESULTS-degraded.md (DEGRADED_NOTE: a paragraph for it) and grants/s
# over time in bench/degraded.png. `make bench-degraded-quick`: about a
# minute, results in $(BENCH_BUILD)/bench only.
DEGRADED_NOTE ?=
bench-degraded: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/degraded.sh --note "$(DEGRADED_NOTE)"

bench-degraded-quick: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/degraded.sh --quick

# `make bench-kinds`: a permit of a semaphore (limits 1, 8, 64; free and
# with most slots taken) and a reader's lock against a plain mutex (issue 15,
# item 6; bench/kinds.sh, under a minute, its own 5-node cluster), the
# variants interleaved in rounds. Writes bench/RESULTS-kinds.md (KINDS_NOTE:
# a paragraph for it). `make bench-kinds-quick`: a few seconds, results in
# $(BENCH_BUILD)/bench/RESULTS-kinds-quick.md.
KINDS_NOTE ?=
bench-kinds: bench-compile
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/kinds.sh --note "$(KINDS_NOTE)"

bench-kinds-quick: bench-compile
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/kinds.sh --quick

# `make bench-scale`: cost in the number of locks and waiters (issue 24,
# item 6; doc/design.md, "Cost flat in locks and waiters"; bench/scale.sh,
# about 5 to 8 minutes, its own 5-node cluster, default options): acquire +
# release of one resource with 0 / 1 000 / 10 000 / 100 000 locks held and
# the time per lock of each 10 000 slice; handoff p50 with 1 .. 10 000
# waiters (async on libuv; blocking threads up to 1 000); CPU and lateness
# of 10 000 auto-extended locks against 1; heap per held lock and per
# pending acquire, and after releasing them all. Each step
# is bounded and reported "> bound" past it. Writes bench/RESULTS-scale.md
# (SCALE_NOTE: a paragraph for it) and bench/scale.png, with the targets
# PASS/FAIL. `make bench-scale-quick`: about a minute (up to 10 000 held,
# 1 000 waiters), results in $(BENCH_BUILD)/bench only. Needs libuv.
SCALE_NOTE ?=
bench-scale: bench-compile
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/scale.sh --note "$(SCALE_NOTE)"

bench-scale-quick: bench-compile
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/scale.sh --quick

# `make bench-cluster`: Redlock nodes that are whole Redis Clusters against
# plain masters (issue 25, item 8; bench/cluster.sh, about 5 minutes): 3
# plain masters and 3 clusters of 3 primaries of its own, acquire + release
# of fresh resources, serial and from 8 threads, the two handles
# interleaved in rounds, once with the keys spread over the shards and once
# all in one slot (the routing's own cost); the calls each shard served
# (INFO commandstats) and its share of its cluster's; two targets of its
# own PASS/FAIL (the routing's cost in one slot, the spread over the
# shards). Writes bench/RESULTS-cluster.md (CLUSTER_NOTE: a paragraph for
# it); a suite of `make bench` (cluster).
# `make bench-cluster-quick`: under a minute, results in
# $(BENCH_BUILD)/bench/RESULTS-cluster-quick.md. Needs Redis 7.
CLUSTER_NOTE ?=
bench-cluster: bench-compile
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/cluster.sh --note "$(CLUSTER_NOTE)"

bench-cluster-quick: bench-compile
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/cluster.sh --quick

# `make bench-fence`: what a fencing token costs next to a plain lock
# (issue 26, item 2; bench/fence.sh, a few minutes, its own 5-node cluster,
# default options): one caller's acquire and acquire + release latency of a
# plain and a fenced handle interleaved in rounds, with a floor of raw round
# trips of the same commands over hiredis (where the time goes), and 32
# threads' throughput in alternating blocks; three runs, their spread, the
# targets (fenced serial p50 <= 2.0x plain, throughput >= 0.6x) PASS/FAIL in
# bench/RESULTS-fence.md (FENCE_NOTE: a paragraph for it). `make
# bench-fence-quick`: one short run (about 20 s), results in
# $(BENCH_BUILD)/bench only.
FENCE_NOTE ?=
bench-fence: bench-compile
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target bench_fence
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/fence.sh --note "$(FENCE_NOTE)"

bench-fence-quick: bench-compile
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target bench_fence
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/fence.sh --quick

# `make bench-replicated`: what counting votes after replication costs
# (issue 32, item 6; bench/replicated.sh, a few minutes, 3 Sentinel groups of
# its own): serial acquire p50 and 32-thread cycles/s with min_replicas 1
# against 0, interleaved, and the time from a master's death to the first
# grant on its promoted replica. Writes bench/RESULTS-replicated.md (targets
# <= 1.6x serial, >= 0.6x throughput). `make bench-replicated-quick`: under a
# minute, results in $(BENCH_BUILD)/bench.
REPLICATED_NOTE ?=
bench-replicated: bench-compile
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/replicated.sh --note "$(REPLICATED_NOTE)"

bench-replicated-quick: bench-compile
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/replicated.sh --quick

# `make bench-hosts`: acquire latency with one node's name unresolvable
# (bench/hosts.sh, in a private network namespace; writes bench/RESULTS-hosts.md).
# `make bench-hosts-quick`: a few seconds, results in $(BENCH_BUILD)/bench.
bench-hosts: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/hosts.sh

bench-hosts-quick: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/hosts.sh --quick

# ------------------------------------------------------------- fuzzing
# `make fuzz`: the libFuzzer targets of test/fuzz/ (node URIs, a node's
# reply stream through the arena reader and the vote classifiers, a round's
# vote counting, the CLI's argument parser), built with clang, ASan and
# UBSan in $(BUILD_FUZZ), each run for FUZZ_SECONDS on a scratch copy of
# its seed corpus (test/fuzz/run.sh), FUZZ_JOBS targets at once (one per
# CPU). Fails if any target crashes.
BUILD_FUZZ   ?= build-fuzz
FUZZ_SECONDS ?= 30
FUZZ_JOBS    ?= $(JOBS)
FUZZ_PKGS    := clang libclang-rt-14-dev llvm

.PHONY: fuzz fuzz-deps fuzz-build

# Like deps, for clang, its libFuzzer / sanitizer runtimes and llvm-symbolizer.
fuzz-deps: deps
	@missing=""; for p in $(FUZZ_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

fuzz-build: fuzz-deps
	cmake -S . -B $(BUILD_FUZZ) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DREDLOCK_FUZZ=ON -DREDLOCK_BUILD_TESTS=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD_FUZZ) -j $(JOBS) --target fuzzers

fuzz: fuzz-build
	FUZZ_JOBS=$(FUZZ_JOBS) test/fuzz/run.sh $(BUILD_FUZZ) $(FUZZ_SECONDS)

# ------------------------------------------------------------- soak
# `make soak [SOAK_SECONDS=300]`: test/fault/soak.sh, a randomised schedule of
# the fault-injection suite's faults (pauses, kill -9 + restarts, iptables
# partitions in network namespaces, slow and clock-jumped nodes) for
# SOAK_SECONDS against a 5-node cluster it starts and always stops, while
# worker processes contend for one lock; prints acquisitions, faults by kind,
# overlaps and lost updates, and fails on any violation. Needs root and
# iptables (the partitions). The short scenarios run in `make test` (label fault).
SOAK_SECONDS ?= 300

.PHONY: soak
soak: build
	FAULT_WORKER=$(CURDIR)/$(BUILD)/test/fault_worker FAULT_CHECK=$(CURDIR)/$(BUILD)/test/fault_check \
	  REDLOCK_CLUSTER_SH=$(CURDIR)/deploy/cluster.sh bash test/fault/soak.sh $(SOAK_SECONDS)

# ------------------------------------------------------------- ABI
# `make abi-check`: the shared library of $(BUILD) against the committed
# baseline abi/SONAME.abi (abi/abi.sh check; abigail-tools' abidw and
# abidiff): passes when the ABI is unchanged or functions were only added,
# fails on a removed function or a changed public type or signature. CI
# runs it after the build. `make abi-update`: writes the baseline again from
# $(BUILD), on purpose only -- after adding API, or with a new SONAME for
# an incompatible change (doc/abi.md) -- and adds the new functions to the
# Debian symbols file as new in the project's version; commit abi/ and
# debian/ with the change.
ABI_SONAME = $$(objdump -p $(BUILD)/libredlock.so | awk '$$1 == "SONAME" { print $$2 }')
ABI_VERSION = $$(sed -n 's/^project(libredlock VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)

.PHONY: abi-check
abi-check: build
	@soname=$(ABI_SONAME); abi/abi.sh check $(BUILD)/$$soname abi/$$soname.abi

.PHONY: abi-update
abi-update: build
	@soname=$(ABI_SONAME); abi/abi.sh dump $(BUILD)/$$soname abi/$$soname.abi && \
	  abi/abi.sh symbols $(BUILD)/$$soname debian/$$(echo $$soname | sed 's/\.so\.//').symbols $(ABI_VERSION) && \
	  echo "abi/$$soname.abi rewritten: commit it with the change it records"

# ------------------------------------------------------------- packages
# `make deb`: the Debian packages libredlock0, libredlock-dev and
# redlock-tools (and their -dbgsym) built from this checkout with debhelper
# and the CMake build (debian/; deploy/deb.sh, about a minute), left in
# dist/ with the .changes file; fails when lintian reports an error.
# doc/packaging.md. `make test-deb`: the packages' tests (label deb, not
# part of `make test`): they build the packages themselves into
# $(BUILD)/test/deb, run lintian, and build and run examples/basic.c against the
# unpacked libredlock0 and libredlock-dev alone, with pkg-config and with
# CMake's find_package.
BUILD_DEB ?= build-deb

.PHONY: deb
deb: deps
	JOBS=$(JOBS) deploy/deb.sh $(CURDIR)/dist $(CURDIR)/$(BUILD_DEB)

.PHONY: test-deb
test-deb: build
	$(CTEST) --test-dir $(BUILD) --no-tests=error --timeout 900 -L deb

# ---------------------------------------------------------------- sim
# `make sim`: the deterministic simulator (test/sim/README.md) on a longer
# budget than the one `make test` runs: SIM_SEEDS seeds of every scenario
# (safe, wan and pause-with-fencing must show no violation, the three
# breaking scenarios at least one), then wan on several sets of node round
# trips (SIM_RTTS), each acquire p50 within 1.10 quorum round trips. Fails
# when any of them does.
SIM_SEEDS ?= 2000
SIM_RTTS  ?= 0.2,1,2,5,10 1,1,1,1,1 0.2,0.2,0.2,50,100 10,20,30,40,50 0.5,1,2 1,2,5,10,20,50,100
SIM       = $(BUILD)/test/sim/redlock-sim

.PHONY: sim
sim: build
	@rc=0; \
	for s in safe restart-no-quarantine drift-beyond-bound pause-without-fencing pause-with-fencing; do \
	  echo "== $$s ($(SIM_SEEDS) seeds)"; $(SIM) --scenario $$s --seeds $(SIM_SEEDS) --quiet --json || rc=1; \
	done; \
	for r in $(SIM_RTTS); do \
	  echo "== wan, round trips $$r ms"; $(SIM) --scenario wan --seeds 20 --rtts $$r --max-p50-ratio 1.10 --json || rc=1; \
	done; exit $$rc
