# rdmalab — `make run` serves the lab, `make test` tests it (fresh Debian 12 is fine).
SHELL := /bin/bash
GO    ?= go
BIN   := bin/labserver
# The experiment agent alone (no web, no Markdown): the Soft-RoCE guest runs it.
AGENT := bin/labagent

# What the lab needs at run time: the Soft-RoCE guest is built from these.
APT_RUN  := gcc libc6-dev rdma-core ibverbs-providers ibverbs-utils libibverbs-dev librdmacm-dev tcc perftest qperf \
            rdmacm-utils qemu-system-x86 linux-image-amd64 busybox-static libcap2-bin iproute2 \
            kmod cpio xz-utils strace tcpdump nvme-cli
# Lesson 08's libraries in the guest: UCX (ucx_info, ucx_perftest), libfabric
# (fi_info, fi_pingpong), Open MPI (mpirun) and mpi.h for the program the
# guest compiles with tcc. They go onto the guest's on-demand disk, a
# squashfs that mksquashfs (squashfs-tools) packs.
APT_RUN  += ucx-utils libfabric-bin openmpi-bin libopenmpi-dev squashfs-tools
# Tests also drive a real headless browser.
APT_TEST := $(APT_RUN) chromium tshark

.PHONY: all build run test lint bench fuzz load deps-run deps-test generate clean vm-image

# Fuzz time per target: short in `make test`, long in `make fuzz`.
FUZZTIME_TEST ?= 5s
FUZZTIME      ?= 60s

all: build

deps-run:
	@./scripts/ensure-apt.sh $(APT_RUN)

deps-test:
	@./scripts/ensure-apt.sh $(APT_TEST)

generate:
	$(GO) tool templ generate -path . >/dev/null

# -buildvcs=auto: `labserver version` names the commit even where the go
# environment turns stamping off (GOFLAGS=-buildvcs=false).
build:
	$(GO) build -buildvcs=auto -o $(BIN) ./cmd/labserver
	$(GO) build -o $(AGENT) ./cmd/labagent

run: deps-run build
	./$(BIN) vm build --if-needed
	./$(BIN) serve

# The Soft-RoCE guest image (kernel + initramfs in $LAB_VM_DIR, else
# $XDG_CACHE_HOME/rdmalab, else .cache/vm); rebuilt only when its inputs change.
vm-image: deps-run build
	./$(BIN) vm build

# The guest tests and benchmarks use this labserver, and put the labagent
# beside it in their guest image, instead of linking their own.
test bench: export LAB_TEST_LABSERVER = $(CURDIR)/$(BIN)

# go test runs two packages at a time here (-p is the CPU count) and
# starts them in the order given: the long ones (each minutes, most of it
# QEMU under TCG) go first, so the short ones fill in beside them instead
# of the longest starting last and running alone at the end. ./... adds
# the rest (a package named twice runs once). bin/testtimes prints go
# test's usual output from -json and then where the time went; pipefail
# keeps go test's exit code. -timeout is per package and only catches a
# hang: the guest package takes ~14 min on a quiet machine but 39 min at
# load 12-19 (stress-ng --cpu 2 beside other guest tests), so 40m cut
# honest runs; 60m still ends a hung package inside CI's 90 minutes.
TEST_FIRST := ./terminals/lessonprograms ./sandbox/rdmaexp ./e2e ./terminals/terminal ./web ./machines/vm ./faults ./runs/fleet

test: deps-test lint build
	$(GO) build -o bin/testtimes ./cmd/testtimes
	set -o pipefail; $(GO) test -race -count=1 -timeout 60m -json $(TEST_FIRST) ./... | bin/testtimes -echo -trim github.com/rdmalab/rdmalab
	GO=$(GO) ./scripts/fuzz.sh $(FUZZTIME_TEST)

lint: generate
	@git diff --exit-code -- '*_templ.go' || { echo "generated templ files are out of date: run make generate and commit"; exit 1; }
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

# One table of ratios against baselines measured in the same run
# (cmd/benchreport); the raw benchmark output goes to bin/bench.txt.
bench: deps-test build
	$(GO) run ./cmd/benchreport -raw bin/bench.txt

# The load test at full length: 200 learners and 100 SSE watchers for
# 60 s against a real labserver, after 5 s of the same load reported
# apart (make test runs it for 5 s).
load: export LAB_TEST_LABSERVER = $(CURDIR)/$(BIN)
load: build
	$(GO) test -count=1 -run '^TestLoad$$' -v -timeout 20m ./loadtest -args -load.warmup=5s -load.duration=60s

fuzz:
	GO=$(GO) ./scripts/fuzz.sh $(FUZZTIME)

clean:
	rm -rf bin
