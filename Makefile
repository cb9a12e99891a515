# oac-node-install — build, test, check, bench, diagrams.

GO       ?= go
MODULE   := github.com/openagentcore/oac-node-install
VERSION  ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# The source commit `oac-node-install version` prints when the toolchain did
# not stamp one (GOFLAGS=-buildvcs=false).
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null)
# The release `oac-node-install version` names: the newest v<semver> tag
# (with -<n>-g<commit> after it, and -dirty), or without a tag a Go-style
# pseudo-version, v0.0.0-<commit time, UTC>-<12 hex digits of the commit>.
RELEASE  ?= $(shell git describe --tags --match 'v[0-9]*' --dirty 2>/dev/null || \
	TZ=UTC git show -s --format='v0.0.0-%cd-%h' --abbrev=12 --date=format-local:%Y%m%d%H%M%S HEAD 2>/dev/null)
LDFLAGS  := -s -w -X $(MODULE)/workflow.Version=$(VERSION) -X main.sourceCommit=$(COMMIT) -X main.releaseName=$(RELEASE)
BIN      := bin
# Fuzz each decoder briefly in the normal test run: a fixed number of inputs
# per target (a count, not a duration, so a loaded machine cannot time out).
FUZZTIME ?= 3000x

.PHONY: all build test fuzz check bench diagrams man clean demo demo-uninstall e2e e2e-crash e2e-crash-part e2e-interleave e2e-powercut e2e-powercut-install e2e-powercut-uninstall e2e-powercut-part e2e-enospc e2e-enospc-part e2e-fleet e2e-distros

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
	$(GO) test -count=1 -run 'TestManPagesAreCurrent|TestHelpCitesNoContract|TestDocsLinksResolve' ./cmd/oac-node-install
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o /dev/null ./cmd/oac-node-install

# The command measures run the installer against a host laid out in a
# directory: a build with the test-only --host-root flag (-tags testhost).
# The installation measures (a first install, a registered node's rerun)
# run in the test host against oac-devcore, as the end-to-end tests do.
bench: build
	CGO_ENABLED=0 $(GO) build -tags testhost -trimpath -ldflags '$(LDFLAGS)' -o $(BIN)/testhost/oac-node-install ./cmd/oac-node-install
	@a=0; $(BIN)/oac-bench -installer $(BIN)/testhost/oac-node-install || a=$$?; \
	$(GO) test -tags e2e -count=1 -run '^$$' -bench 'EndToEndInstall' -benchtime 1x ./cmd/oac-node-install/ || a=1; \
	exit $$a

diagrams:
	$(GO) generate ./diagrams

# The manual pages in docs/man, generated from the command tree with cobra's
# generator (the test that checks them current rewrites them with -update).
man:
	$(GO) test -count=1 -run 'TestManPagesAreCurrent$$' ./cmd/oac-node-install -args -update

clean:
	rm -rf $(BIN)

# The main job: a full node installation against the bundled development
# console. The node is installed in the test host (a private systemd as PID 1
# with private /etc, /var/lib and /run, and this machine's Docker Engine), so
# the machine itself is left untouched: oac-demo up starts oac-devcore and
# the test host, runs the command Web would generate, prints the installer's
# output with its summary, a rerun, and `status`, and leaves both running
# (state in /tmp/oac-demo). demo-uninstall uninstalls the node, ends them and
# checks that the machine is as before; it also cleans up after an
# interrupted demo. Needs root.
demo: build
	$(BIN)/oac-demo up

demo-uninstall:
	$(BIN)/oac-demo down

# The end-to-end tests (the same test host and console); .ci/run runs them.
# They include the crash tests of install and uninstall at a sample of
# their journal points (OAC_E2E_CRASH_EVERY, OAC_E2E_CRASH_MAX) and the
# interleaving tests at a sample of theirs (OAC_E2E_INTERLEAVE_EVERY).
# E2E_SKIP names end-to-end tests to leave out (go test -skip): .ci/run
# leaves out the crash tests' sample, since make e2e-crash runs every point.
E2E_SKIP ?=

# The operator's lifecycle in test hosts booted from Debian rootfs built
# with mmdebstrap (cached in /var/cache/oac-node-install-tests/rootfs):
# OAC_E2E_DISTROS selects them (bullseye,bookworm,trixie,sid by default;
# also forky, trixie-dbus-broker, trixie-no-bus).
e2e-distros:
	$(GO) test -tags e2e -count=1 -timeout 30m -run 'TestDistros$$' -v ./cmd/oac-node-install/

e2e:
	$(GO) test -tags e2e -count=1 -timeout 30m -run 'TestEndToEnd' $(if $(E2E_SKIP),-skip '$(E2E_SKIP)') -v ./cmd/oac-node-install/
	$(GO) test -tags e2e -count=1 -timeout 10m -run 'TestDemo' -v ./cmd/oac-demo/

# The power cuts of install and of uninstall at every journal point (on
# demand; .ci/run runs one third of them, make e2e-powercut-part).
e2e-powercut-install:
	OAC_E2E_CRASH_EVERY=1 OAC_E2E_CRASH_MAX=0 $(GO) test -tags e2e,crashtest -count=1 -timeout 60m -run 'TestEndToEndPowerCutInstall$$' -v ./cmd/oac-node-install/

e2e-powercut-uninstall:
	OAC_E2E_CRASH_EVERY=1 OAC_E2E_CRASH_MAX=0 $(GO) test -tags e2e,crashtest -count=1 -timeout 40m -run 'TestEndToEndPowerCutUninstall$$' -v ./cmd/oac-node-install/

# One of five disjoint parts of every journal point of install and of
# uninstall, cut by power: PART=0 to 4 (five runs with the five parts
# cover every point). .ci/run picks the part from the commit it tests.
PART ?= 0
e2e-powercut-part:
	OAC_E2E_CRASH_EVERY=1 OAC_E2E_CRASH_MAX=0 OAC_E2E_CRASH_PART=$(PART)/5 $(GO) test -tags e2e,crashtest -count=1 -timeout 40m -run 'TestEndToEndPowerCut(Install|Uninstall)$$' -v ./cmd/oac-node-install/

# Install and uninstall with a full disk from every operation that needs
# space, on /etc and on root's journal directory (the disk-full file system,
# journal/diskfull), each rerun with the space back; e2e-enospc-part runs
# the PART-th of 12 disjoint parts (CI rotates them by commit).
e2e-enospc:
	$(GO) test -tags e2e,crashtest -count=1 -timeout 60m -run 'TestEndToEndDiskFull(Install|Uninstall)$$' -v ./cmd/oac-node-install/

e2e-enospc-part:
	OAC_E2E_ENOSPC_PART=$(PART)/12 $(GO) test -tags e2e,crashtest -count=1 -timeout 30m -run 'TestEndToEndDiskFull(Install|Uninstall)$$' -v ./cmd/oac-node-install/

# Install and uninstall paused at every point (each journal point of root's
# process and each point between its decisions, before and after the host
# lock), with each second command of the fixed list run meanwhile (make e2e
# runs a sample).
e2e-interleave:
	OAC_E2E_INTERLEAVE_ALL=1 $(GO) test -tags e2e -count=1 -timeout 90m -run 'TestEndToEndInterleave' -v ./cmd/oac-node-install/

# Every journal point of install and uninstall, SIGKILLed in the test host.
e2e-crash:
	OAC_E2E_CRASH_EVERY=1 OAC_E2E_CRASH_MAX=0 $(GO) test -tags e2e -count=1 -timeout 60m -run 'TestEndToEndCrash' -v ./cmd/oac-node-install/

# make e2e-crash with the install killed then uninstalled at the PART-th of
# two disjoint halves of its points (PART=0 or 1), the other tests at every
# point: what .ci/run runs, the half by the commit it tests.
e2e-crash-part:
	OAC_E2E_CRASH_EVERY=1 OAC_E2E_CRASH_MAX=0 $(GO) test -tags e2e -count=1 -timeout 60m -run 'TestEndToEndCrash(Install|Uninstall|Takeover)$$' -v ./cmd/oac-node-install/
	OAC_E2E_CRASH_EVERY=1 OAC_E2E_CRASH_MAX=0 OAC_E2E_CRASH_PART=$(PART)/2 $(GO) test -tags e2e -count=1 -timeout 60m -run 'TestEndToEndCrashInstallThenUninstall$$' -v ./cmd/oac-node-install/

# The crash tests in power-cut mode: the test host's /etc and /var/lib on the
# power-cut file system, a reboot after each cut (needs FUSE). CI runs the
# install's and the uninstall's (above); this adds install then uninstall.
e2e-powercut:
	$(GO) test -tags e2e,crashtest -count=1 -timeout 120m -run 'TestEndToEndPowerCut' -v ./cmd/oac-node-install/

# The repository's Ansible role (deploy/ansible) as a fleet rollout: five
# test hosts, each with a Docker Engine of its own (a private dockerd), nodes
# of one oac-devcore, in batches; one host's engine stopped, reruns with
# changed=0, check mode, a forged identity and the uninstall play. Needs
# root, dockerd, Ansible and sudo (apt-get install ansible sudo; this target
# installs nothing).
e2e-fleet:
	$(GO) test -tags e2e -count=1 -timeout 20m -run 'TestEndToEndFleet$$' -v ./cmd/oac-node-install/
