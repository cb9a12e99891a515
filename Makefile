# oac-node-install — build, test, check, bench, diagrams.

GO       ?= go
MODULE   := github.com/openagentcore/oac-node-install
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# The source commit `oac-node-install version` prints when the toolchain did
# not stamp one (GOFLAGS=-buildvcs=false).
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
LDFLAGS  := -s -w -X $(MODULE)/workflow.Version=$(VERSION) -X main.sourceCommit=$(COMMIT)
BIN      := bin
# Fuzz each decoder briefly in the normal test run: a fixed number of inputs
# per target (a count, not a duration, so a loaded machine cannot time out).
FUZZTIME ?= 3000x

.PHONY: all build test fuzz check bench diagrams clean demo

all: check test

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/ ./cmd/...

# The test build compiles the crash failpoints and the test-only --host-root
# flag (-tags crashtest); the shipped binary never has them.
test:
	$(GO) test -tags crashtest -count=1 -timeout 30m ./...
	$(MAKE) --no-print-directory fuzz

fuzz:
	@for spec in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs grep -H '^func Fuzz' | sed -E 's#^\./(.*)/[^/]*_test.go:func (Fuzz[A-Za-z0-9_]*).*#\1:\2#' | sort -u); do \
		pkg=$${spec%%:*}; fn=$${spec##*:}; \
		echo "fuzz $$pkg $$fn ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$fn$$" -fuzztime $(FUZZTIME) ./$$pkg || exit 1; \
	done

check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) vet -tags crashtest ./...
	@cp go.mod /tmp/.oac-go.mod.$$$$ && cp go.sum /tmp/.oac-go.sum.$$$$ && \
	$(GO) mod tidy && if ! git diff --quiet -- go.mod go.sum; then \
		echo "go mod tidy changed go.mod/go.sum:"; git --no-pager diff -- go.mod go.sum; \
		cp /tmp/.oac-go.mod.$$$$ go.mod; cp /tmp/.oac-go.sum.$$$$ go.sum; rm -f /tmp/.oac-go.*.$$$$; exit 1; fi; \
	rm -f /tmp/.oac-go.*.$$$$
	$(GO) test -count=1 -run 'TestCommittedDiagramsAreCurrent' ./diagrams
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o /dev/null ./cmd/oac-node-install

# The command measures run the installer against a host laid out in a
# directory: a build with the test-only --host-root flag (-tags testhost).
bench: build
	CGO_ENABLED=0 $(GO) build -tags testhost -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/testhost/oac-node-install ./cmd/oac-node-install
	$(BIN)/oac-bench -installer $(BIN)/testhost/oac-node-install

diagrams:
	$(GO) generate ./diagrams

clean:
	rm -rf $(BIN)

# The main job: a full node installation against the bundled development
# console. Not there yet: the installation steps and the console's Core
# routes are still to be built. Until then the demo runs what exists: the
# console serves a fixture release over HTTPS with its own CA, and the
# installer is fetched from it and checked against SHA256SUMS, as the
# generated bootstrap command does.
demo: build
	@set -e; d=$$(mktemp -d); trap 'kill $$pid 2>/dev/null; rm -rf "$$d"' EXIT; \
	$(BIN)/oac-devcore --data "$$d/console" --listen 127.0.0.1:0 > "$$d/log" 2>&1 & pid=$$!; \
	for i in $$(seq 50); do grep -q 'serving https' "$$d/log" && break; sleep 0.2; done; \
	url=$$(sed -n 's/^oac-devcore: serving \(https:[^ ]*\) .*/\1/p' "$$d/log"); ca="$$d/console/ca.pem"; \
	echo "==> development console at $$url"; \
	curl -fsS --cacert "$$ca" "$$url/node-install/SHA256SUMS" -o "$$d/SHA256SUMS"; \
	curl -fsS --cacert "$$ca" "$$url/node-install/oac-node-install" -o "$$d/oac-node-install"; \
	want=$$(awk '$$2=="oac-node-install"{print $$1}' "$$d/SHA256SUMS"); \
	echo "$$want  $$d/oac-node-install" | sha256sum -c --status && echo "==> installer downloaded and verified ($$want)"; \
	chmod 700 "$$d/oac-node-install"; "$$d/oac-node-install" version; \
	echo "demo: the node installation itself is not built yet (install steps, Core routes); nothing else to run."
