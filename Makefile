# kubectl fleet — build, test, bench, lint, dist.
# Needs only Go (GOTOOLCHAIN=local); everything else is built from the Go
# module proxy.

GO        ?= go
BIN       := bin
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT    ?= $(shell git rev-parse --short HEAD 2>/dev/null)
PKG       := github.com/kubectl-fleet/kubectl-fleet
LDFLAGS   := -s -w -X $(PKG)/pkg/version.Version=$(VERSION) -X $(PKG)/pkg/version.Commit=$(COMMIT)
PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64

export GOTOOLCHAIN := local

.PHONY: soak-delivered all build run demo up test test-unit e2e hunt fuzz mutants bench bench-scale soak lint tidy-check dist clean controlplane demo-tools flux docs schema

all: build

## build: the plugin binary, bin/kubectl-fleet
build:
	$(GO) build -trimpath -ldflags "$(LDFLAGS)" -o $(BIN)/kubectl-fleet ./cmd/kubectl-fleet

## demo: build the plugin and (if missing) what the demo runs (the control plane
## and Flux, not the tests' tools), start four local clusters, a registry and Flux,
## run kubectl fleet on the example fleet and its edge, stop them
demo: build demo-tools
	$(GO) run ./hack/demo "$$(hack/controlplane/build.sh --print-dir)" "$$(hack/controlplane/build.sh --print-stages-dir)" "$$(hack/controlplane/build.sh --print-flux-crds-dir)" "$(CURDIR)/$(BIN)"

## up: the same four clusters, registry and Flux kept running until Ctrl-C, for trying by hand
up: build demo-tools
	$(GO) run ./hack/demo -up "$$(hack/controlplane/build.sh --print-dir)" "$$(hack/controlplane/build.sh --print-stages-dir)" "$$(hack/controlplane/build.sh --print-flux-crds-dir)" "$(CURDIR)/$(BIN)"

## run: the plugin on the example fleet, offline (no clusters); its one
## SOPS-encrypted file is decrypted with the demo key committed beside it
run: build
	SOPS_AGE_KEY_FILE=$(CURDIR)/examples/demo-age-key.txt $(BIN)/kubectl-fleet vet --no-kubeconfig -F examples/fleet.yaml
	SOPS_AGE_KEY_FILE=$(CURDIR)/examples/demo-age-key.txt $(BIN)/kubectl-fleet render -F examples/fleet.yaml --group production --app web

## test: every test: lint, unit (fuzz seeds included), then e2e on real clusters
test: lint test-unit e2e

## test-unit: the unit, golden and fuzz-seed tests (no clusters), with the
## race detector
test-unit:
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v /test/e2e)

## e2e: kubectl fleet through a real kubectl against real API servers on
## loopback (builds the control plane first if missing)
e2e: controlplane
	$(GO) test -count=1 -timeout 45m ./test/e2e $(E2E_FLAGS)

## hunt: the data-loss hunt of make e2e (TestHunt: random steps on a real
## API server, invariants checked after each) with random seeds, one after
## the other, for HUNT_DURATION (60m); a violation prints its seed and the
## shortest sequence of steps found. HUNT_STEPS per seed (200).
## HUNT_PLUGIN_DIR=<dir> hunts in another build of the plugin.
HUNT_DURATION ?= 60m
HUNT_STEPS    ?= 200
hunt: controlplane
	HUNT_SEED=random HUNT_DURATION=$(HUNT_DURATION) HUNT_STEPS=$(HUNT_STEPS) $(GO) test -count=1 -timeout 0 -run '^TestHunt$$' -v ./test/e2e

## mutants: plant each regression the safety tests guard against (a
## guard that fails open, a check skipped), one at a time, and show the
## tests kill it (hack/mutants; about 3 minutes). MUTANTS_FLAGS=-e2e adds
## the hunt on real API servers to the ownership mutants.
mutants:
	$(GO) run ./hack/mutants $(MUTANTS_FLAGS)

## fuzz: fuzz the fleet parser, the planning of a parsed fleet (windows,
## batches, after: graph, each input within a time budget), the substitution engine, the manifest
## splitter, the reading of kustomize output, the diff formatter and the
## YAML writer,
## FUZZTIME each (FUZZTIME=5m make fuzz)
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./pkg/fleet -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/fleet -run '^$$' -fuzz '^FuzzPlan$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/render -run '^$$' -fuzz '^FuzzSubstitute$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/render -run '^$$' -fuzz '^FuzzParseDocuments$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/render -run '^$$' -fuzz '^FuzzNodeObject$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/diff -run '^$$' -fuzz '^FuzzUnified$$' -fuzztime $(FUZZTIME)
	$(GO) test ./pkg/encode -run '^$$' -fuzz '^FuzzAppendYAML$$' -fuzztime $(FUZZTIME)

## bench: kubectl fleet against what users run instead, on 10 apiserver-only
## clusters 50 ms away (apply create/no-op/rollout and diff vs
## the kustomize | envsubst | kubectl loop, sequential and parallel, and vs a
## minimal apply client, the floor; render of 100 and 1000 clusters vs a
## kustomize loop, with peak RSS); then the scaling run: the same rollout on
## 10, 30, 100, 300 and 1000 clusters (real kube-apiservers up to 30, the
## stand-in of internal/testenv/standin at every size), kubectl fleet's wall time,
## CPU, peak RSS, fds, goroutines and requests per cluster. Medians, spreads
## and ratios on stdout and in bench/RESULTS.md. Tens of minutes;
## BENCH_FLAGS='-reps 3 -render 100 -scale ""' to trim (-scale "" leaves the
## scaling run out). (make test runs it once at a tiny size: TestBench.)
bench: controlplane
	$(GO) run ./bench -out bench/RESULTS.md $(BENCH_FLAGS)

## bench-scale: only the scaling run of make bench, replacing its section of
## bench/RESULTS.md (BENCH_FLAGS='-scale 10,100 -scale-real 10' to trim;
## -cpuprofile DIR for profiles of every run, summed up in the report)
bench-scale: controlplane
	$(GO) run ./bench -compare=false -out bench/RESULTS.md $(BENCH_FLAGS)

## soak: kubectl fleet reconcile against 300 stand-in clusters for an hour,
## with drift injected after every pass, a render change every 10 passes and
## a cluster cut off and back every 5; fails if the plugin's RSS, live heap,
## goroutines, fds or connections grow more than 10% past their level in the
## first ten minutes, or a drift or change goes unapplied; writes its section
## of bench/RESULTS.md. SOAK_FLAGS='-soak 10m -soak-clusters 100' to trim.
## (make test runs it for 75 s on 5 clusters: TestReconcileSoak.)
soak:
	$(GO) run ./bench -compare=false -scale '' -soak 1h -soak-clusters 300 -out bench/RESULTS.md $(SOAK_FLAGS)

## soak-delivered: the soak with 1,000 clusters delivered through a loopback
## registry (no context: published, not observed), reconcile every 30 s for
## an hour: a cluster's tag moved by hand after every pass, a render change
## every 10 passes; fails if the plugin's figures or the registry's requests
## per pass grow past their warm-up level; writes its section of
## bench/RESULTS.md.
soak-delivered:
	$(GO) run ./bench -compare=false -scale '' -soak 1h -soak-delivered -soak-clusters 1000 -soak-interval 30s -soak-flap-every 0 -out bench/RESULTS.md $(SOAK_FLAGS)

## docs: one page per command in docs/commands, generated from the
## commands (TestCommandDocs fails when it is out of date)
docs:
	rm -rf docs/commands
	$(GO) run ./hack/docs docs/commands

## schema: the fleet file's JSON Schema, schema/fleet.schema.json, generated
## from the Go types (TestSchemaIsGenerated fails when it is out of date)
schema:
	$(GO) run ./hack/schema schema/fleet.schema.json

## lint: gofmt, go vet, and go.mod tidiness
lint:
	@out=$$(gofmt -l $$(find . \( -path ./.cache -o -path ./.git \) -prune -o -name '*.go' -print)); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@$(MAKE) --no-print-directory tidy-check
	@out=$$($(GO) list -f '{{.ImportPath}}: {{join .Imports " "}}' ./cmd/... ./pkg/... | grep '/internal/'); if [ -n "$$out" ]; then echo "production code imports internal/ (test doubles only):"; echo "$$out"; exit 1; fi

tidy-check:
	@cp go.mod /tmp/kubectl-fleet.go.mod.bak; cp go.sum /tmp/kubectl-fleet.go.sum.bak; \
	$(GO) mod tidy; \
	if ! cmp -s go.mod /tmp/kubectl-fleet.go.mod.bak || ! cmp -s go.sum /tmp/kubectl-fleet.go.sum.bak; then \
		echo "go mod tidy changes go.mod/go.sum: run it and commit"; \
		cp /tmp/kubectl-fleet.go.mod.bak go.mod; cp /tmp/kubectl-fleet.go.sum.bak go.sum; exit 1; fi

## dist: release archives for every platform krew serves, checksums, and the
## krew manifest (dist/krew/fleet.yaml). PLATFORMS=linux/amd64 builds one.
DIST_VERSION ?= v0.1.0
KREW_URI     ?= https://github.com/kubectl-fleet/kubectl-fleet/releases/download/$(DIST_VERSION)
dist:
	@rm -rf dist && mkdir -p dist/man
	@$(GO) run ./hack/docs -man dist/man
	@set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ $$os = windows ] && ext=.exe; \
		d=dist/kubectl-fleet_$${os}_$${arch}; mkdir -p $$d; \
		CGO_ENABLED=0 GOOS=$$os GOARCH=$$arch $(GO) build -trimpath \
			-ldflags "-s -w -X $(PKG)/pkg/version.Version=$(DIST_VERSION) -X $(PKG)/pkg/version.Commit=$(COMMIT)" \
			-o $$d/kubectl-fleet$$ext ./cmd/kubectl-fleet; \
		cp LICENSE README.md $$d/; cp -r dist/man $$d/man; cp -r docs $$d/docs; \
		if [ $$os = windows ]; then (cd $$d && zip -q -r ../kubectl-fleet_$${os}_$${arch}.zip .); \
		else tar -C $$d -czf $$d.tar.gz .; fi; \
		rm -rf $$d; echo "dist: $$p"; \
	done
	@rm -rf dist/man
	@cd dist && sha256sum kubectl-fleet_* > checksums.txt && cat checksums.txt
	$(GO) run ./hack/krew -template .krew.yaml -checksums dist/checksums.txt -version $(DIST_VERSION) -uri $(KREW_URI) -out dist/krew/fleet.yaml

## controlplane: build kube-apiserver, etcd, kubectl, controllers, kwok, krew,
## kustomize, envsubst, helm and sops from the Go module proxy into
## .cache/k8s/<version>/bin (only what is missing; 14 minutes cold on 2 cores,
## 0.02 s warm)
controlplane:
	hack/controlplane/build.sh

## demo-tools: only what make demo and make up run: the control plane's
## binaries and kwok, and Flux's two controllers. helm, sops, krew, kustomize
## and envsubst are the tests' references (the plugin renders Helm and
## decrypts SOPS in process): make test builds them.
DEMO_TOOLS := etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kwok source-controller kustomize-controller
demo-tools:
	hack/controlplane/build.sh $(DEMO_TOOLS)

## flux: build Flux's source-controller and kustomize-controller (the
## edge of make demo, and the e2e test bed's Flux)
flux:
	hack/controlplane/build.sh source-controller kustomize-controller

clean:
	rm -rf $(BIN) dist
