# orch: the two set-up commands are `make demo` and `make test`.
GO      ?= go
BIN     ?= bin/orch
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X main.version=$(VERSION)

.PHONY: all build install test test-short fuzz race demo bench lint docs clean

all: build

build:
	$(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN) ./cmd/orch

install:
	$(GO) install -trimpath -ldflags '$(LDFLAGS)' ./cmd/orch

# Every test: unit, package tests on real repositories, the testscript
# scripts, the multi-process concurrency tests, and a few seconds of each
# fuzz target.
test: lint
	$(GO) test -count=1 ./...
	$(MAKE) fuzz

# A count, not a duration: Go 1.26's time-limited fuzzing can end in a spurious
# "context deadline exceeded" on a loaded machine (golang/go#75804).
FUZZTIME ?= 3000x
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME) ./taskfile
	$(GO) test -run '^$$' -fuzz '^FuzzEdit$$' -fuzztime $(FUZZTIME) ./taskfile
	$(GO) test -run '^$$' -fuzz '^FuzzMergeText$$' -fuzztime $(FUZZTIME) ./taskfile

race:
	$(GO) test -race -count=1 ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

demo: build
	./scripts/demo.sh $(BIN)

bench: build
	./bench/run.sh $(BIN)

docs:
	$(GO) test ./cmd/orch -run '^TestDocsUpToDate$$' -count=1 -update-docs

clean:
	rm -rf bin
