# Thin wrapper over CMake. `make demo` and `make test` are the Quick start.
BUILD       ?= build
BUILD_ASAN  ?= build-asan
BUILD_TSAN  ?= build-tsan
JOBS        ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_FLAGS ?=
DEBIAN_PKGS := build-essential cmake pkg-config libhiredis-dev libsodium-dev libcriterion-dev \
               redis-server redis-tools libssl-dev openssl valgrind docker.io docker-compose busybox-static \
               iptables iproute2 \
               python3 python3-prometheus-client libuv1-dev libevent-dev \
               liblua5.1-0-dev abigail-tools debhelper lintian doxygen fakeroot dpkg-dev \
               g++ python3-pytest python3-venv dh-python
SUDO        := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_DIR    := $(CURDIR)/$(BUILD)/demo-cluster

.PHONY: all deps build test test-asan test-tsan valgrind demo clean

all: build

# $(call apt_install,WORD...): the shell commands that install, with
# apt-get, the Debian packages of the list that are missing, and fail when
# that fails. A WORD is a package, present when dpkg lists it installed, or
# PACKAGE=COMMAND, present when COMMAND is on the PATH (whatever installed it).
# No package's service (docker.io's dockerd, redis-server's) is started by
# the install: where the machine has no policy-rc.d, one that refuses every
# start stands while apt-get runs (the tests start their own servers).
apt_install = missing=""; for w in $(1); do p=$${w%%=*}; c=$${w\#*=}; \
	  if [ "$$c" != "$$w" ]; then command -v "$$c" >/dev/null 2>&1 && continue; \
	  else dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "install ok installed" && continue; fi; \
	  missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:$$missing"; \
	  policy=""; [ -e /usr/sbin/policy-rc.d ] || policy=/usr/sbin/policy-rc.d; \
	  [ -z "$$policy" ] || printf '\043!/bin/sh\nexit 101\n' | $(SUDO) install -m 755 /dev/stdin $$policy; \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	  rc=$$?; [ -z "$$policy" ] || $(SUDO) rm -f $$policy; [ $$rc = 0 ]; \
	fi

# Installs the Debian packages the project needs, only those missing.
deps:
	@$(call apt_install,$(DEBIAN_PKGS))

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

# CTest runs TEST_JOBS tests at once (default: one per core; most tests
# wait on their nodes, TTLs and timeouts, and TEST_JOBS=4 on two cores
# makes the suite CPU-bound and about a quarter shorter, but some tests'
# timing does not yet hold there): the integration tests are spread over
# four fixture clusters (test/CMakeLists.txt), the longest started first. The fault-injection scenarios and the failover
# experiments (label fault) run in a pass of their own after the rest,
# FAULT_JOBS at once (each starts its own cluster and mostly waits on its
# schedule), never beside an integration test:
# run_suite (build directory, then CTest's options, then more labels to
# leave out, each after a |) runs both passes and fails when either did.
# CTest's fixtures always stop their nodes; stop_test_nodes (build
# directory as argument) also stops what an interrupted run left.
CTEST       = ctest --output-on-failure -j $(JOBS)
TEST_JOBS  ?= $(JOBS)
FAULT_JOBS ?= 4
run_suite = ctest --output-on-failure -j $(TEST_JOBS) --test-dir $(1) --timeout 900 -LE 'valgrind|fault|deb$(3)' $(2); rc=$$?; \
	  ctest --output-on-failure -j $(FAULT_JOBS) --test-dir $(1) --timeout 900 -L fault $(2) || rc=1; \
	  $(call stop_test_nodes,$(1)); exit $$rc
stop_test_nodes = for d in $(CURDIR)/$(1)/test/cluster5*/; do \
	  [ ! -d "$$d" ] || deploy/cluster.sh stop -d "$$d" >/dev/null 2>&1; done; \
	  test/tls/tls_nodes.sh stop $(CURDIR)/$(1)/test/tls-nodes >/dev/null 2>&1

# The whole suite: unit tests, then integration tests against real
# 5-master clusters that CTest starts and always stops.
test: build
	$(call run_suite,$(BUILD))

# The same suite built with AddressSanitizer + UndefinedBehaviorSanitizer,
# at -O1 (SANITIZE_OPT): what the sanitizers' authors advise, and the
# CPU-bound tests (the simulator's seeds) run about three times faster
# than at -O0, with the same reports.
SANITIZE_OPT ?= -g -O1
# abort_on_error=1: a leak found when a process exits aborts it, which is
# what fails a Criterion test (its runner ignores a worker's exit status,
# so LeakSanitizer's exit code alone would pass). Left out: the tests that
# run no code of the library but the tool's --help (labels abi: the
# exported symbols; deploy: the compose files; docs: the documentation's
# programs compiled, the tool's usage text), which `make test` runs alike.
# build-asan: that build alone.
build-asan: deps
	cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Debug "-DCMAKE_C_FLAGS_DEBUG=$(SANITIZE_OPT)" \
	  "-DCMAKE_CXX_FLAGS_DEBUG=$(SANITIZE_OPT)" -DREDLOCK_SANITIZE=ON >/dev/null
	cmake --build $(BUILD_ASAN) -j $(JOBS)

test-asan: build-asan
	export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1; \
	  $(call run_suite,$(BUILD_ASAN),,|abi|deploy|docs)

# The threaded tests (label threads) under ThreadSanitizer: only their
# programs are built.
TSAN_TARGETS := stress_threads stress_permits stress_resolve
build-tsan: deps
	cmake -S . -B $(BUILD_TSAN) -DCMAKE_BUILD_TYPE=Debug -DREDLOCK_TSAN=ON >/dev/null
	cmake --build $(BUILD_TSAN) -j $(JOBS) --target $(TSAN_TARGETS)

test-tsan: build-tsan
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

# `make compose-test`: the three compose files of deploy/ brought up for real
# and checked with the tool of $(BUILD) (test/deploy/compose_test.sh: the
# failover experiments on the five masters, a lock through a Sentinel
# failover, a lock over three Redis Clusters with a primary killed). Uses
# the running Docker engine, else starts Debian's dockerd in a private
# network and mount namespace (root), and a stand-in redis:7 image made from
# this machine's redis-server when none can be pulled; takes every project
# down and stops what it started, also on failure or Ctrl-C.
.PHONY: compose-test
compose-test: build
	test/deploy/compose_test.sh --cli $(CURDIR)/$(BUILD)/src/cli/redlock

# `make docs`: the reference, include/redlock.h, built with Doxygen
# (doc/Doxyfile) into $(BUILD)/doc/html. Every warning fails it, and a
# public name without documentation is a warning.
.PHONY: docs
docs: deps
	mkdir -p $(BUILD)/doc
	DOCS_OUT=$(CURDIR)/$(BUILD)/doc doxygen doc/Doxyfile

# ------------------------------------------------------------- benchmarks
# `make bench`: every benchmark of bench/ in one sitting at one commit
# (bench/all.sh, 30+ minutes on 2 cores): a Release build of all
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
BENCH_PKGS  := gnuplot-nox redis-tools
BENCH_NODE_PKGS := nodejs=node npm=npm

.PHONY: bench bench-quick bench-deps bench-build bench-compile bench-stats

# Like deps, for the benchmark's extra tools. node and npm count as present
# when the commands exist (e.g. NodeSource's nodejs, which bundles npm); if
# they cannot be installed, the suite still runs and marks node-redlock n/a.
bench-deps: deps
	@$(call apt_install,$(BENCH_PKGS))
	@{ $(call apt_install,$(BENCH_NODE_PKGS)); } || echo "warning: could not install nodejs or npm; node-redlock will be n/a"

bench-build: bench-deps bench-compile

bench-compile: deps
	cmake -S . -B $(BENCH_BUILD) -DCMAKE_BUILD_TYPE=Release -DREDLOCK_BUILD_BENCH=ON -DREDLOCK_BUILD_TESTS=OFF $(CMAKE_FLAGS) >/dev/null
	cmake --build $(BENCH_BUILD) -j $(JOBS) --target bench_all

# `make bench-stats`: only the cost of redlock_stats' counters (on / off,
# interleaved; about a minute), printed, no report written.
bench-stats: bench-compile
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/core.sh --stats-only

bench: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/all.sh

bench-quick: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/all.sh --quick

# `make bench-NAME`: the suite NAME of bench/all.sh's list (SUITES) alone,
# in its full mode, with its own local redis-server masters, always stopped
# (bench/NAME.sh --help says what it measures and how long it takes): core
# (the floor, libredlock and node-redlock; the server limit, the safety
# features, nodes killed and paused, N = 3..9, memory), async (one libuv
# loop thread against node-redlock and the blocking API), handoff (waiting
# for a taken lock), degraded (a minority of the nodes failing), kinds
# (semaphores and read-write locks against a mutex), scale (many locks and
# waiters), cluster (Redis Cluster nodes), fence (fencing tokens),
# replicated (votes counted after replication, Sentinel groups), hosts (one
# node's name unresolvable, in a private network namespace). Each writes
# bench/RESULTS-NAME.md (and its plots), its targets judged against
# bench/targets.tsv. `make bench-NAME-quick`: the same in its quick mode,
# results in $(BENCH_BUILD)/bench only. NAME_NOTE (NAME in capitals, e.g.
# KINDS_NOTE): a paragraph for its report; NAME_ARGS: more arguments for
# its script (HANDOFF_LABEL: the section of RESULTS-handoff.md it writes).
# The rules come from the suite list: a suite added there has them.
BENCH_SUITES := $(shell sed -n 's/^  "\([a-z]*\)|.*/\1/p' bench/all.sh)
BENCH_SUITE_RULES := $(addprefix bench-,$(BENCH_SUITES))
bench_var = $($(shell echo '$(1)' | tr a-z A-Z)_$(2))
HANDOFF_LABEL ?= latest
override HANDOFF_ARGS := --label "$(HANDOFF_LABEL)" $(HANDOFF_ARGS)

.PHONY: $(BENCH_SUITE_RULES) $(BENCH_SUITE_RULES:=-quick)
$(BENCH_SUITE_RULES): bench-%: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/all.sh --one $* -- --note "$(call bench_var,$*,NOTE)" $(call bench_var,$*,ARGS)

$(BENCH_SUITE_RULES:=-quick): bench-%-quick: bench-build
	BENCH_BUILD=$(CURDIR)/$(BENCH_BUILD) bench/all.sh --one $* --quick -- $(call bench_var,$*,ARGS)

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
	@$(call apt_install,$(FUZZ_PKGS))

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
# `make deb`: the Debian packages libredlock0, libredlock-dev,
# redlock-tools (and their -dbgsym) and python3-libredlock, built from this
# checkout with debhelper and the CMake build (debian/; deploy/deb.sh, about a minute), left in
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
# (safe, wan, pause-with-fencing, replicated and membership must show no
# violation and meet their floors of activity, the six breaking scenarios
# the kind of violation each exists to show; replicated with --min-replicas 0 must be
# caught as two holders, but not in Sentinel groups alone, whose promotion
# quarantine holds it, and lagging-promotion there without the quarantine
# must be), then wan on several sets of node round trips
# (SIM_RTTS), each acquire p50 within 1.10 quorum round trips. Fails when
# any of them does.
SIM_SEEDS ?= 2000
SIM_RTTS  ?= 0.2,1,2,5,10 1,1,1,1,1 0.2,0.2,0.2,50,100 10,20,30,40,50 0.5,1,2 1,2,5,10,20,50,100
SIM       = $(BUILD)/test/sim/redlock-sim

.PHONY: sim
sim: build
	@rc=0; \
	for s in safe restart-no-quarantine drift-beyond-bound pause-without-fencing pause-with-fencing \
	  replicated lagging-promotion membership membership-no-record membership-no-wait cluster; do \
	  echo "== $$s ($(SIM_SEEDS) seeds)"; $(SIM) --scenario $$s --seeds $(SIM_SEEDS) --floors --quiet --json || rc=1; \
	done; \
	echo "== replicated, min_replicas 0 ($(SIM_SEEDS) seeds)"; \
	$(SIM) --scenario replicated --min-replicas 0 --expect two-holders --seeds $(SIM_SEEDS) --quiet --json || rc=1; \
	echo "== replicated, Sentinel groups, min_replicas 0 ($(SIM_SEEDS) seeds)"; \
	$(SIM) --scenario replicated --sentinel yes --min-replicas 0 --expect none --seeds $(SIM_SEEDS) --quiet --json || rc=1; \
	echo "== lagging-promotion, Sentinel groups ($(SIM_SEEDS) seeds)"; \
	$(SIM) --scenario lagging-promotion --sentinel yes --seeds $(SIM_SEEDS) --quiet --json || rc=1; \
	for r in $(SIM_RTTS); do \
	  echo "== wan, round trips $$r ms"; $(SIM) --scenario wan --seeds 20 --rtts $$r --max-p50-ratio 1.10 --floors --json || rc=1; \
	done; exit $$rc
