# orch: the two set-up commands are `make demo` and `make test`.
GO      ?= go
BIN     ?= bin/orch
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build install test fuzz race demo bench bench-land bench-fleet bench-cache gobench walk walk-ran lint docs clean

all: build

# CGO_ENABLED=0: a static binary. Only pflag's net and os/user would use
# cgo, for nothing orch needs, and loading libc cost every command 0.8 ms.
build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/orch

install:
	CGO_ENABLED=0 $(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/orch

# Every test: unit, package tests on real repositories, the testscript
# scripts, the multi-process concurrency tests, and a few seconds of each
# fuzz target, and the race detector on the packages that run goroutines.
# CGO_ENABLED=0 as in build: the orch the scripts run (the test binary
# under the name orch) is then static like the one that ships, and starts
# about 0.5 ms sooner, which is 7 % of the scripts' time. -race needs cgo.
test: lint
	ORCH_E2E_FULL=1 CGO_ENABLED=0 $(GO) test -count=1 -timeout 30m ./...
	$(MAKE) race
	$(MAKE) fuzz

# A count, not a duration: Go 1.26's time-limited fuzzing can end in a spurious
# "context deadline exceeded" on a loaded machine (golang/go#75804).
# Each target runs from its seed corpus in testdata/fuzz/<Name>/ plus
# FUZZTIME new inputs: about 2-5 s per target on a 2-core machine.
FUZZTIME ?= 20000x
FUZZ_TARGETS = \
	./taskfile:FuzzParse ./taskfile:FuzzEdit ./taskfile:FuzzMergeText \
	./workflow:FuzzReview ./refusal:FuzzRefusal \
	./ghreview:FuzzParseReviews ./ghreview:FuzzParseComments ./taskfile:FuzzFeedbackText \
	./answer:FuzzJSONString ./internal/text:FuzzVisible ./coordinator/harness:FuzzReader ./cmd/orch:FuzzSessionHook ./gitstore/statecache:FuzzCacheDecode
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($${t%%:*})"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) $${t%%:*}; \
	done

# The race detector over every package and test, except two that start no
# goroutines and are slow under it: the testscript scripts (every orch a
# script runs is the race-instrumented test binary, and the scripts alone
# then pass the default 10-minute timeout on a 2-core machine) and the
# hostile-input sizes of taskfile (a minute of single-threaded parsing). The
# goroutines (the view scan, the background reconcile, board --watch,
# progress) run under -race in the package tests, and the e2e tests drive
# real processes.
race:
	$(GO) test -race -count=1 -timeout 30m -skip '^(TestScripts|TestHostileFiles)$$' ./...

# Go benchmarks of the parser, the surgical editor, the tree-surgery commit,
# claim selection and the web board of 10,000 tasks: a fixed count, to
# compare runs (benchstat).
gobench:
	$(GO) test -run '^$$' -bench . -benchtime 100x ./taskfile ./gitstore ./workflow ./web ./answer

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@# The bench tools that are modules of their own (their dependencies
	@# stay out of orch's go.mod) are built against orch's packages too, so
	@# that a change there cannot leave make bench broken unseen.
	cd bench/walk && $(GO) vet ./...
	cd bench/cachestore && $(GO) vet ./...

demo: build
	./scripts/demo.sh $(BIN)

bench: build
	./bench/run.sh $(BIN)
	$(MAKE) --no-print-directory bench-land
	$(MAKE) --no-print-directory bench-cache

# The state cache against an embedded store (issue 45): bench/cachestore, a
# module of its own so that bbolt stays out of orch's go.mod, on the cache
# bin/orch builds for a generated repository of CACHE_TASKS tasks. Each
# read and write in a fresh process, CACHE_RUNS times, against bbolt
# holding the same records; then CACHE_READERS reader processes against one
# writer for CACHE_SECONDS each (about two minutes); see bench/README.md.
CACHE_TASKS   ?= 10000
CACHE_RUNS    ?= 20
CACHE_READERS ?= 1,4,16
CACHE_SECONDS ?= 5
bench-cache: build
	cd bench/cachestore && $(GO) run . -orch $(abspath $(BIN)) -tasks $(CACHE_TASKS) -runs $(CACHE_RUNS) -readers $(CACHE_READERS) -seconds $(CACHE_SECONDS)

# Landing (issue 43): orch land of one approved task against git merge
# --no-ff (and git push) by hand, with land.check: "true", without and with
# a local bare remote; then LAND_TASKS approved tasks through orch land
# --all with a check of a fixed 2 s at each land.batch of LAND_BATCHES
# (about 80 s at batch 1); see bench/README.md.
LAND_RUNS    ?= 20
LAND_TASKS   ?= 40
LAND_BATCHES ?= 1,4
bench-land: build
	$(GO) run ./bench/land -orch $(BIN) -runs $(LAND_RUNS) -throughput $(LAND_TASKS) -batches $(LAND_BATCHES) -check 'sleep 2'

# Claims across clones (issue 21): FLEET_CLONES clones of one bare remote on
# the local disk, one agent each looping `orch claim --sync`, git's fetch
# and push delayed by each of FLEET_LATENCY; see bench/README.md.
FLEET_CLONES  ?= 1,2,4,8
FLEET_LATENCY ?= 0,150ms
FLEET_TASKS   ?= 120
# "default": what orch init writes (format 2: claim_ref, one round trip per
# uncontended claim); state_branch: a repository from before claim refs.
FLEET_ARBITERS ?= default state_branch
bench-fleet: build
	@set -e; for a in $(FLEET_ARBITERS); do \
		echo "claim_arbiter: $$a"; \
		arb=$$a; [ "$$a" = default ] && arb=; \
		$(GO) run ./bench/fleet -orch $(BIN) -clones $(FLEET_CLONES) -latency $(FLEET_LATENCY) -tasks $(FLEET_TASKS) -arbiter "$$arb"; \
	done

# The claim's walk (bench/README.md): the coordinator's claim followed
# through the static call graph, each function once, and how often it
# returns to a file it had left. bench/walk is a module of its own (orch's
# go.mod does not gain golang.org/x/tools). WALK_FLAGS passes the walker's
# flags: -merge a.go,b.go=c.go and -move pkg.f=file.go show a move's effect
# before it is made, -funcs N the calls behind the first N pairs, -stops
# every stop, -variants the figures of the definition's variants.
WALK_FLAGS ?=
walk:
	cd bench/walk && $(GO) run . -root ../.. $(WALK_FLAGS)

# The same walk over the calls that ran in one real claim (a slot of
# coordinator.NewQueue claiming the one task of a new repository):
# bench/walk/claim built with -cover gives the coverage profile.
walk-ran: build
	@set -e; d=$$(mktemp -d); trap 'rm -rf "$$d"' EXIT; \
	cd bench/walk; \
	$(GO) build -cover -covermode=atomic -coverpkg=github.com/orch-tool/orch/... -o "$$d/claim" ./claim; \
	mkdir "$$d/cov"; GOCOVERDIR="$$d/cov" "$$d/claim" -orch $(abspath $(BIN)); \
	$(GO) tool covdata textfmt -i="$$d/cov" -o "$$d/claim.cov"; \
	$(GO) run . -root ../.. -cover "$$d/claim.cov" $(WALK_FLAGS)

docs:
	$(GO) test ./cmd/orch -run '^TestDocsUpToDate$$' -count=1 -update-docs

clean:
	rm -rf bin
