# Seam's build. `make test` is the one command that tests every module of the
# workspace; `make tools` installs the pinned code generators into .tools/bin.

SHELL := bash
TOOLS := $(CURDIR)/.tools/bin
export PATH := $(TOOLS):$(PATH)

# Pinned generator and linter versions. Bump them together and run
# `make generate`; CI fails when the committed code differs from a fresh run.
BUF_VERSION              := v1.75.0
PROTOC_GEN_GO_VERSION    := v1.36.12
PROTOC_GEN_GO_GRPC_VER   := v1.6.0
GRPC_GATEWAY_VERSION     := v2.33.0

MODULES = $(shell go list -f '{{.Dir}}' -m)
PACKAGES = $(addsuffix /...,$(MODULES))

.PHONY: all tools generate check-generated lint fmt vet test test-race fuzz bench build clean console check-console console-test console-e2e

all: build test

tools: $(TOOLS)/buf $(TOOLS)/protoc-gen-go $(TOOLS)/protoc-gen-go-grpc $(TOOLS)/protoc-gen-grpc-gateway $(TOOLS)/protoc-gen-openapiv2

$(TOOLS)/buf:
	GOBIN=$(TOOLS) go install github.com/bufbuild/buf/cmd/buf@$(BUF_VERSION)
$(TOOLS)/protoc-gen-go:
	GOBIN=$(TOOLS) go install google.golang.org/protobuf/cmd/protoc-gen-go@$(PROTOC_GEN_GO_VERSION)
$(TOOLS)/protoc-gen-go-grpc:
	GOBIN=$(TOOLS) go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@$(PROTOC_GEN_GO_GRPC_VER)
$(TOOLS)/protoc-gen-grpc-gateway:
	GOBIN=$(TOOLS) go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-grpc-gateway@$(GRPC_GATEWAY_VERSION)
$(TOOLS)/protoc-gen-openapiv2:
	GOBIN=$(TOOLS) go install github.com/grpc-ecosystem/grpc-gateway/v2/protoc-gen-openapiv2@$(GRPC_GATEWAY_VERSION)

generate: tools
	buf lint
	buf generate

# check-generated regenerates and fails if that changed any committed file.
check-generated: generate
	@git add -N proto >/dev/null 2>&1 || true
	@if ! git diff --quiet -- proto; then \
		echo "generated code is stale: run 'make generate' and commit the result"; \
		git diff --stat -- proto; exit 1; fi

lint: tools
	buf lint
	@out=$$(gofmt -l $(MODULES)); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	go vet $(PACKAGES)

fmt:
	gofmt -w $(MODULES)

test:
	go test $(PACKAGES)

test-race:
	go test -race $(PACKAGES)

# fuzz runs every fuzz target briefly; the corpus lives in testdata/fuzz.
FUZZTIME ?= 10s
fuzz:
	@for m in $(MODULES); do \
		for pkg in $$(cd $$m && go list ./...); do \
			for f in $$(cd $$m && go test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
				echo "fuzz $$pkg $$f"; (cd $$m && go test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg) || exit 1; \
			done; done; done

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
