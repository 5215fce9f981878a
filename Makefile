# Seam's build. `make test` is the one command that tests every module of the
# workspace; `make tools` links the pinned code generators into .tools/bin,
# building each once per version into a cache under $HOME/.cache.

SHELL := bash
TOOLS := $(CURDIR)/.tools/bin
export PATH := $(TOOLS):$(PATH)

# -trimpath keeps the checkout's path out of every build, so the build
# cache serves a fresh clone (each CI run is one) wherever it lies: only
# packages whose sources changed compile again. It reaches the go
# commands the tests run themselves (the seam binary they build).
export GOFLAGS := -trimpath $(filter-out -trimpath,$(GOFLAGS))

# Pinned generator and linter versions. Bump them together and run
# `make generate`; CI fails when the committed code differs from a fresh run.
BUF_VERSION              := v1.75.0
PROTOC_GEN_GO_VERSION    := v1.36.12
PROTOC_GEN_GO_GRPC_VER   := v1.6.0
GRPC_GATEWAY_VERSION     := v2.33.0
# Linters: staticcheck (honnef.co/go/tools) 2026.2, which knows Go 1.26,
# and errcheck.
STATICCHECK_VERSION      := v0.8.2
ERRCHECK_VERSION         := v1.30.0

MODULES = $(shell go list -f '{{.Dir}}' -m)
PACKAGES = $(addsuffix /...,$(MODULES))

.PHONY: all tools generate check-generated lint fmt vet test test-race check-tidy chaos fuzz fuzz-list bench build clean console check-console console-test console-e2e

all: build test

# The generators are built once per set of versions into a cache outside
# the checkout (TOOLS_CACHE, under $HOME/.cache) and linked into
# .tools/bin, so a fresh clone (and every CI run) reuses them instead of
# building buf from source again. A .tools/bin that already holds a tool,
# or a .tools linked to a shared folder, is used as it is.
TOOLS_KEY   := $(shell go env GOVERSION)-buf$(BUF_VERSION)-go$(PROTOC_GEN_GO_VERSION)-grpc$(PROTOC_GEN_GO_GRPC_VER)-gw$(GRPC_GATEWAY_VERSION)
TOOLS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/seam/tools/$(TOOLS_KEY)

# The linters have a cache of their own, so bumping one does not rebuild
# the generators.
LINTERS_KEY   := $(shell go env GOVERSION)-staticcheck$(STATICCHECK_VERSION)-errcheck$(ERRCHECK_VERSION)
LINTERS_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/seam/linters/$(LINTERS_KEY)

tools: $(TOOLS)/buf $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc $(TOOLS)/protoc-gen-grpc-gateway $(TOOLS)/protoc-gen-openapiv2 \
	$(TOOLS)/staticcheck $(TOOLS)/errcheck

# tool installs $(2) into the cache ($(3), TOOLS_CACHE unless given)
# unless it is there, then links it.
define tool
	@mkdir -p $(TOOLS) $(or $(3),$(TOOLS_CACHE))
	@if [ ! -x $(or $(3),$(TOOLS_CACHE))/$(1) ]; then echo "building $(1) into $(or $(3),$(TOOLS_CACHE))"; GOBIN=$(or $(3),$(TOOLS_CACHE)) go install $(2); fi
	@ln -sf $(or $(3),$(TOOLS_CACHE))/$(1) $(TOOLS)/$(1)
endef

$(TOOLS)/buf:
	$(call tool,buf,github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION))
$(TOOLS)/protoc-gen-go:
	$(call tool,protoc-gen-go,google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION))
$(TOOLS)/protoc-gen-go-grpc:
	$(call tool,protoc-gen-go-grpc,google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VER))
$(TOOLS)/protoc-gen-grpc-gateway:
	$(call tool,protoc-gen-grpc-gateway,github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GRPC_GATEWAY_VERSION))
$(TOOLS)/protoc-gen-openapiv2:
	$(call tool,protoc-gen-openapiv2,github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@$(GRPC_GATEWAY_VERSION))
# The linters are linked whatever .tools/bin holds: a link to an older
# version's cache is replaced when the version changes.
.PHONY: $(TOOLS)/staticcheck $(TOOLS)/errcheck
$(TOOLS)/staticcheck:
	$(call tool,staticcheck,honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION),$(LINTERS_CACHE))
$(TOOLS)/errcheck:
	$(call tool,errcheck,github.com/kisielk/errcheck@$(ERRCHECK_VERSION),$(LINTERS_CACHE))

generate: tools
	buf lint
	buf generate

# check-generated regenerates and fails if that changed any committed file.
check-generated: generate
	@git add -N proto >/dev/null 2>&1 || true
	@if ! git diff --quiet -- proto; then \
		echo "generated code is stale: run 'make generate' and commit the result"; \
		git diff --stat -- proto; exit 1; fi

# lint runs buf lint, gofmt, go vet, staticcheck (its default checks) and
# errcheck over every module, tests included. errcheck leaves out the calls
# listed in .errcheck-excludes, each with why its error is not wanted.
# The import directions and the one error path are checked by a test
# (cmd/seam/internal/house), which make test runs.
lint: tools
	buf lint
	@out=$$(gofmt -l $(MODULES) .ci); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet $(PACKAGES)
	go vet .ci/strict.go
	staticcheck $(PACKAGES)
	errcheck -exclude .errcheck-excludes $(PACKAGES)

fmt:
	gofmt -w $(MODULES)

# test is the README's test command: every module, without the race
# detector, so a warm run is quick and the assertions that only hold
# without it run (allocation counts, every transport and chunking of the
# scenarios, which the race lane scales down). test-race is the race
# lane: the same tests with the detector on, where cgo can build it. CI
# runs both. A package's tests may take up to TEST_TIMEOUT: under the
# race detector on a loaded two-core machine the gate's scenarios outgrow
# go test's default 10m.
#
# NORACE_PKGS are compiled without the detector's instrumentation inside
# a race build: modernc.org/sqlite/lib is SQLite's C source translated to
# Go, which no Go code of ours shares memory with except through the
# driver (instrumented, as is the libc its locks come from). Instrumented,
# it was over half the CPU of the SQLite tests; a cgo SQLite driver would
# not be instrumented at all.
#
# TEST_P packages test at once: at least four. Many of Seam's tests wait
# on processes (a SIGKILLed service restarting, a replica catching up),
# and at go test's default of one package per core a two-core machine
# sat a third idle; four kept it busy and took make test from 246 s to
# 192 s there.
#
# SEAM_TEST_STRICT=1 (CI sets it) runs go test through .ci/strict.go,
# which fails the run when any test skips: in CI everything a test needs
# is provided, so a skip is a check that passed without looking.
NORACE_PKGS := modernc.org/sqlite/lib
RACE ?= $(if $(filter 1,$(shell go env CGO_ENABLED)),-race $(foreach p,$(NORACE_PKGS),-gcflags=$(p)=-race=false),)
TEST_P ?= $(shell n=$$(nproc 2>/dev/null || echo 1); echo $$(( n < 4 ? 4 : n )))
TEST_TIMEOUT ?= 30m
TEST_FLAGS ?=
GOTEST = $(if $(filter 1,$(SEAM_TEST_STRICT)),go run .ci/strict.go,go test)
define pgnote
	@if [ -z "$$SEAM_TEST_POSTGRES_URL" ]; then \
		echo "note: SEAM_TEST_POSTGRES_URL is not set, so the PostgreSQL tests skip; set it (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run them"; fi
endef
test:
	$(pgnote)
	$(GOTEST) -p $(TEST_P) -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) $(PACKAGES)

test-race:
	@if [ -z "$(RACE)" ]; then echo "the race detector needs cgo (CGO_ENABLED=1 and a C compiler)"; exit 1; fi
	$(pgnote)
	$(GOTEST) $(RACE) -p $(TEST_P) -timeout $(TEST_TIMEOUT) $(TEST_FLAGS) $(PACKAGES)

# check-tidy fails when `go mod tidy` would change a module's go.mod or go.sum.
check-tidy:
	@fail=0; for m in $(MODULES); do \
		if ! out=$$(cd $$m && go mod tidy -diff 2>&1); then \
			echo "go mod tidy would change $$m:"; echo "$$out"; fail=1; fi; \
	done; exit $$fail

# chaos runs the reliability suite (chaos/): kill -9 loops, a long outage,
# hung peers and a corpus of bad inputs against real seam processes. The
# long form, by default, gives the figures of docs/reliability.md;
# CHAOS_FLAGS=-short is the form CI runs.
CHAOS_FLAGS ?=
chaos:
	go run ./chaos $(CHAOS_FLAGS)

# fuzz runs every fuzz target briefly; the corpus lives in testdata/fuzz.
# Targets are found by grepping the test files, not by compiling every
# package for `go test -list`. Minimizing a new input is capped at
# FUZZMINIMIZE executions: uncapped, minimizing an input grown from a
# large seed (a whole contract) takes the worker up to a minute, during
# which the target reports no progress. Go 1.26's fuzz coordinator can
# fail a target with "context deadline exceeded" at the end of -fuzztime
# on a busy machine (golang/go#75804, fixed in Go 1.27); such a run wrote
# no failing input and is reported, not failed. Any other failure, or one
# that wrote an input to testdata/fuzz, fails.
FUZZTIME ?= 10s
FUZZMINIMIZE ?= 100x
# FUZZ_LIMIT bounds one target's run, its build included, in seconds: a
# target that hangs (a TestMain waiting on something) fails the run
# instead of eating CI's whole budget.
FUZZ_LIMIT ?= 300
fuzz:
	@grep -rl --include='*_test.go' '^func Fuzz' $(MODULES) | sort | while read -r file; do \
		dir=$$(dirname "$$file"); \
		for target in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' "$$file"); do \
			echo "fuzz $$dir $$target"; \
			corpus="$$dir/testdata/fuzz/$$target"; before=$$(ls "$$corpus" 2>/dev/null | wc -l); \
			log=$$(mktemp); \
			(cd "$$dir" && timeout -k 10 $(FUZZ_LIMIT) go test -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINIMIZE) .) >"$$log" 2>&1; code=$$?; \
			if [ "$$code" -ne 0 ]; then \
				cat "$$log"; \
				if [ "$$code" -eq 124 ] || [ "$$code" -eq 137 ]; then rm -f "$$log"; echo "fuzz $$dir $$target: not done within $(FUZZ_LIMIT)s, build included; stopped as a hang" >&2; exit 1; fi; \
				after=$$(ls "$$corpus" 2>/dev/null | wc -l); \
				if [ "$$after" -gt "$$before" ] || ! grep -q '^    context deadline exceeded$$' "$$log"; then rm -f "$$log"; exit 1; fi; \
				echo "fuzz $$target: stopped by the fuzz coordinator's deadline race (golang/go#75804), no failing input written"; \
			else cat "$$log"; fi; \
			rm -f "$$log"; \
		done; \
	done

# fuzz-list prints every fuzz target, as make fuzz finds them.
fuzz-list:
	@grep -r --include='*_test.go' -H '^func Fuzz' $(MODULES) | sed 's#^$(CURDIR)/##; s/:func \(Fuzz[A-Za-z0-9_]*\)(.*/ \1/' | sort

bench:
	go test -run '^$$' -bench . -benchmem $(PACKAGES)

build:
	go build -o bin/seam ./cmd/seam

# The web console (web/) is built into platform/console/dist, which the seam
# binary embeds; the built files are committed so building Seam needs no
# Node.js. Rebuild them after changing web/ and commit the result.
console:
	cd web && npm ci --no-audit --no-fund && npm run build

# check-console rebuilds the console and fails if that changed any
# committed file: the build is reproducible, so a difference means the
# committed assets are stale.
check-console: console
	@git add -N platform/console/dist >/dev/null 2>&1 || true
	@if ! git diff --quiet -- platform/console/dist; then \
		echo "console assets are stale: run 'make console' and commit platform/console/dist"; \
		git diff --stat -- platform/console/dist; exit 1; fi

# console-test runs the console's unit tests (the numbers behind its plots
# and graphs).
console-test:
	cd web && npm run test

# console-e2e drives the console in headless Chromium against a real
# `seam up` loaded by the incident drill. It needs Debian's chromium at
# /usr/bin/chromium (or CHROMIUM=path) and `npm ci` run in web/.
console-e2e:
	go build -o web/.e2e/seam ./cmd/seam
	cd web && SEAM_BIN=$$PWD/.e2e/seam npm run e2e

clean:
	rm -rf bin
