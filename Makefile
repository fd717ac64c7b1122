# trainyard — developer entry points. `make run` starts everything; `make test`
# is what CI runs (.ci/run). Both find or start PostgreSQL with
# scripts/ensure-postgres.sh.

SHELL := /bin/bash
.SHELLFLAGS := -euo pipefail -c
export GOTOOLCHAIN := local
export PATH := $(PATH):/usr/local/go/bin

GO          ?= go
BIN         := bin/trainyard
# Per test binary; the slowest packages (end-to-end, devstack) take a few
# minutes on a 2-core machine.
TEST_TIMEOUT ?= 10m
# `make bench BENCH=Sgemm PKG=./engine/...` narrows the run.
BENCH       ?= .
PKG         ?= ./...
BENCHTIME   ?= 1s
# OpenBLAS picks its kernels from the CPU model and falls back to SSE3 ("Prescott", ~5x slower) on
# virtual CPUs it does not recognise, such as "Intel Xeon Processor"; name the core from the CPU flags unless
# the caller already did, so the ceiling the engine is compared with is OpenBLAS at its best.
OPENBLAS_CORETYPE ?= $(shell if grep -qw avx512f /proc/cpuinfo 2>/dev/null; then echo SkylakeX; \
	elif grep -qw avx2 /proc/cpuinfo 2>/dev/null; then echo Haswell; fi)
# Exported only when known: OpenBLAS treats a set but empty variable as a core it cannot find.
OPENBLAS_ENV = $(if $(OPENBLAS_CORETYPE),export OPENBLAS_CORETYPE=$(OPENBLAS_CORETYPE);)

.PHONY: all run build test fmt-check test-scripts vet lint bench bench-openblas pretrain clean fuzz

all: build

## build: compile bin/trainyard
build:
	$(GO) build -o $(BIN) ./cmd/trainyard

## run: PostgreSQL (found or started) → build → trainyard serve
run: build
	DATABASE_URL="$$(scripts/ensure-postgres.sh)"; export DATABASE_URL; exec ./$(BIN) serve

## test: gofmt, scripts, go vet and go test against a real PostgreSQL
test: fmt-check test-scripts
	if [[ -z "$${TRAINYARD_TEST_DATABASE_URL:-}" ]]; then \
		TRAINYARD_TEST_DATABASE_URL="$$(env -u DATABASE_URL TRAINYARD_PG_DATABASE=trainyard_test scripts/ensure-postgres.sh)"; \
	fi; \
	export TRAINYARD_TEST_DATABASE_URL; \
	$(GO) vet ./...; \
	$(GO) test -timeout $(TEST_TIMEOUT) ./...; \
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)

# The fuzz targets of the request decoders, as package:target. `make fuzz`
# runs each for FUZZTIME; `make test` runs each briefly (their seeds also
# run in every `go test`).
FUZZ_TARGETS := .:FuzzParseS3URL ./jobspec:FuzzParseArtifactURL ./activities:FuzzSFTLine \
	./serving:FuzzParseModelRef ./api:FuzzChatRequest ./api:FuzzTrainingJobRequest
FUZZTIME ?= 30s
TEST_FUZZTIME ?= 3s

## fuzz: run every fuzz target for FUZZTIME (needs PostgreSQL, as make test does)
fuzz:
	if [[ -z "$${TRAINYARD_TEST_DATABASE_URL:-}" ]]; then \
		TRAINYARD_TEST_DATABASE_URL="$$(env -u DATABASE_URL TRAINYARD_PG_DATABASE=trainyard_test scripts/ensure-postgres.sh)"; \
	fi; \
	export TRAINYARD_TEST_DATABASE_URL; \
	for t in $(FUZZ_TARGETS); do \
		echo "fuzz $${t#*:} ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$${t#*:}$$" -fuzztime $(FUZZTIME) "$${t%%:*}" | tail -n 1; \
	done

## test-scripts: the real fallback path of scripts/ensure-postgres.sh
test-scripts:
	bash scripts/ensure-postgres-test.sh

## fmt-check: gofmt must have nothing to say about the tracked Go files
fmt-check:
	unformatted="$$(gofmt -l $$(git ls-files '*.go'))"; \
	if [[ -n "$$unformatted" ]]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi

vet:
	$(GO) vet ./...

## lint: gofmt must have nothing to say; go vet must pass
lint: fmt-check vet

## bench: go test benchmarks (BENCH, PKG, BENCHTIME narrow them)
bench:
	if [[ -z "$${TRAINYARD_TEST_DATABASE_URL:-}" ]]; then \
		TRAINYARD_TEST_DATABASE_URL="$$(env -u DATABASE_URL TRAINYARD_PG_DATABASE=trainyard_test scripts/ensure-postgres.sh)"; \
	fi; \
	export TRAINYARD_TEST_DATABASE_URL; \
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem -benchtime $(BENCHTIME) -timeout 60m $(PKG)

## bench-openblas: install OpenBLAS, then the benchmarks that compare the
## engine's kernels with it (linalg: ceiling, Sgemm, training step; engine: RL step)
bench-openblas:
	sh engine/linalg/install-openblas.sh
	$(OPENBLAS_ENV) \
	$(GO) test -tags openblas -run '^$$' -bench 'OpenBLASCeiling|Sgemm|TrainingStep' -benchmem -benchtime $(BENCHTIME) -timeout 60m ./engine/linalg/
	$(OPENBLAS_ENV) \
	$(GO) test -tags openblas -run '^$$' -bench RLStep -benchmem -benchtime $(BENCHTIME) -timeout 60m ./engine/

## pretrain: pretrain the built-in base model (engine/pretrain) into engine/zoo/tinychat
pretrain: build
	if [[ ! -d /usr/share/games/fortunes && "$$(id -u)" == 0 ]]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fortunes-min fortunes; \
	fi
	./$(BIN) pretrain

## clean: stop the throwaway PostgreSQL, remove the binary and ./.data
clean:
	scripts/ensure-postgres.sh --clean
	rm -rf bin .data
