# etcd operator suite. Every target has a `## description`; `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

ROOT := $(shell pwd)
BIN := $(ROOT)/bin
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null)
# The commit date, not the time of the build: the same commit builds the same binaries.
BUILD_DATE ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null)
export VERSION COMMIT BUILD_DATE

CONTROLLER_GEN_VERSION := v0.19.0
CONTROLLER_GEN := $(BIN)/controller-gen-$(CONTROLLER_GEN_VERSION)

VERSION_PKG := github.com/etcd-operator/etcd-operator/internal/version
GO_LDFLAGS := -s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Commit=$(COMMIT) -X $(VERSION_PKG).Date=$(BUILD_DATE)

##@ General
.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"; printf "Usage: make <target>\n"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  \033[36m%-18s\033[0m %s\n", $$1, $$2 } /^##@/ { printf "\n\033[1m%s\033[0m\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development
.PHONY: generate
# gotypesalias=0: controller-gen's deepcopy generator fails on the type alias LabelValue
# (map[string]LabelValue, "invalid map value type"); with aliases resolved it sees
# map[string]string and writes the same code. The CRD generator needs the alias (its markers
# are the schema of the map values), so only this call sets it.
generate: $(CONTROLLER_GEN) ## Generate deepcopy code.
	GODEBUG=gotypesalias=0 $(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./pkg/apis/...

.PHONY: manifests
manifests: $(CONTROLLER_GEN) ## Generate CRDs and RBAC into manifests/ (and the copy embedded in the binaries).
	hack/gen-manifests.sh $(CONTROLLER_GEN)

# What `make generate manifests` writes: deepcopy code, the CRDs (also embedded in the binaries
# from manifests/crd), the ClusterRoles, and the chart's copies of both. docs/api-reference.md
# is checked by verify-api-docs.
GENERATED := ':(glob)pkg/apis/**/zz_generated.*.go' manifests/crd manifests/rbac charts/etcd-operator/files/crds charts/etcd-operator/files/rbac charts/etcd-operator/files/monitoring manifests/monitoring/etcd-operator-dashboard.json

.PHONY: verify-gen
verify-gen: generate manifests verify-api-docs verify-chart ## Regenerate and fail if generated files are not committed as generated.
	@git diff --exit-code -- $(GENERATED) || { echo "generated files are stale: run 'make generate manifests' and commit"; exit 1; }
	@test -z "$$(git status --porcelain -- $(GENERATED))" || { git status --porcelain -- $(GENERATED); echo "untracked generated files"; exit 1; }

.PHONY: fmt
fmt: ## Run gofmt on the tree.
	gofmt -w $$(git ls-files '*.go')

.PHONY: vet
vet: ## Run go vet (all build tags).
	go vet ./...
	go vet -tags e2e ./test/...

.PHONY: lint
lint: ## Static checks: gofmt, go vet, golangci-lint (.golangci.yml; also -tags e2e), shellcheck on hack/ and .ci/.
	hack/lint.sh

.PHONY: vulncheck
vulncheck: ## govulncheck ./... (needs the Go vulnerability database: GOVULNDB, default https://vuln.go.dev; not in CI).
	hack/lint.sh vulncheck

##@ Docs and Helm chart
.PHONY: api-docs
api-docs: ## Generate docs/api-reference.md from the Go types (hack/tools/apidocs, offline).
	go run ./hack/tools/apidocs -out docs/api-reference.md

.PHONY: verify-api-docs
verify-api-docs: ## Fail if docs/api-reference.md is stale or the Grafana dashboard uses a metric the code does not export.
	go run ./hack/tools/apidocs -out docs/api-reference.md -verify -dashboard docs/grafana/etcd-operator-dashboard.json

.PHONY: helm-gen
helm-gen: ## Copy the generated CRDs and ClusterRoles of manifests/ into charts/etcd-operator (run after `make manifests`).
	hack/helm.sh gen

.PHONY: verify-chart
verify-chart: ## Fail if the chart's CRDs or RBAC rules differ from manifests/ (offline, no helm needed).
	hack/helm.sh verify

.PHONY: helm-lint
helm-lint: ## helm lint + helm template renders of charts/etcd-operator (builds the pinned helm into bin/ once).
	hack/helm.sh lint

##@ Build
.PHONY: build
build: ## Build the three operator binaries and the kubectl-etcd plugin into bin/.
	CGO_ENABLED=0 go build -trimpath -ldflags "$(GO_LDFLAGS)" -o $(BIN)/ ./cmd/etcd-operator ./cmd/backup-operator ./cmd/restore-operator ./cmd/kubectl-etcd

.PHONY: images
images: ## Build the operator (host platform; PLATFORMS="linux/amd64 linux/arm64" for more), etcd and pause images and import them into the local containerd.
	hack/images.sh

.PHONY: push
push: ## Build the multi-arch operator image index and push it: make push IMG=<registry>/<repo>:<tag>.
	hack/images.sh push

.PHONY: release
release: ## Write dist/ (install.yaml, Helm chart, SBOM, the kubectl plugin and its krew manifest, SHA256SUMS): make release VERSION=x.y.z IMG=<registry>/<repo>:<tag>.
	hack/release.sh

##@ Test
.PHONY: test
test: ## Run every test: unit, envtest integration, backends against real servers, e2e, chaos, upgrade and bench smokes on the local cluster, every fuzz target briefly.
	hack/test.sh

.PHONY: test-unit
test-unit: ## Run unit and envtest tests only (no object stores, no local cluster).
	hack/test.sh unit

FUZZTIME ?= 10s
# package:FuzzTarget for every fuzz target (their seed corpora also run as tests in test-unit).
# internal/controller/etcdbackupschedule:FuzzSchedule is not listed: its package's TestMain
# starts envtest in every fuzz worker and the fuzzer stalls there; its seeds run as tests.
FUZZ_TARGETS := internal/kvhash:FuzzUserKey pkg/snapshot:FuzzClusterKey pkg/snapshot:FuzzSplitKey pkg/snapshot:FuzzVerifyingReader \
	pkg/backend/s3:FuzzParseAWSSecret pkg/backend/s3:FuzzAWSSecretNotInError \
	pkg/backend/abs:FuzzParseABSSecret pkg/backend/gcs:FuzzParseGCPSecret \
	internal/storage:FuzzLocationRoundTrip internal/storage:FuzzDecode \
	internal/restoreseed:FuzzParseResult internal/restoreseed:FuzzResultEncode \
	internal/restoreseed:FuzzRestoreArgs internal/restoreseed:FuzzParseRestoreArgs \
	pkg/capture:FuzzSegmentKey pkg/capture:FuzzParseSegmentKey pkg/capture:FuzzReader

.PHONY: fuzz
fuzz: ## Run every fuzz target for FUZZTIME each (default 10s)
	hack/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

.PHONY: test-chaos
test-chaos: ## Run the chaos suite on the local cluster: every fault kind, 5 times under load (CHAOS_RUNS, CHAOS_SEED); report in .cache/chaos/report.md.
	CHAOS_RUNS=$${CHAOS_RUNS:-5} CHAOS_ALL=$${CHAOS_ALL:-1} hack/chaos.sh

.PHONY: test-chaos-smoke
test-chaos-smoke: ## One run of each smoke chaos fault kind (what CI runs).
	CHAOS_RUNS=1 hack/chaos.sh -parallel 3

.PHONY: test-upgrade
test-upgrade: ## Upgrade e2e on the local cluster: the previous release (hack/previous-release, built from git) with restores in flight, upgraded to the working tree's.
	hack/upgrade-test.sh

.PHONY: test-multinode
test-multinode: ## Spread, drain, node-loss and restore-after-node-loss e2e on a three-node local cluster (make local-up-3; `make local-down` first if one node runs).
	LC_NODES=3 hack/local-cluster.sh up
	E2E_PKGS=./test/e2e/etcdcluster/ hack/e2e.sh -run '^(TestSpreadOverNodes|TestDrainMovesOneMemberAtATime|TestNodeLostMemberReplaced|TestNodeLostVolumeMemberReplaced)$$'
	E2E_PKGS=./test/e2e/restore/ hack/e2e.sh -run '^TestInPlaceRestoreWithMemberOnLostNode$$'

.PHONY: test-e2e
test-e2e: ## Run the e2e suite against the local cluster (brings it up and deploys if needed), without the long tier.
	hack/e2e.sh

.PHONY: test-e2e-long
test-e2e-long: ## Run the e2e tests CI leaves out (the long tier, test/e2e/framework/tier.go) against the local cluster.
	E2E_TIER=long hack/e2e.sh

.PHONY: bench
bench: ## Run the benchmarks against real servers; results go to bench/results/.
	hack/bench.sh

.PHONY: bench-cluster
bench-cluster: ## End-to-end bench on the local cluster: restore RTO and backup against the manual chain, create -> Available (BENCH_SIZES, BENCH_RUNS); results in bench/results/latest.md.
	hack/bench-cluster.sh

.PHONY: bench-cluster-3
bench-cluster-3: ## The end-to-end bench on a three-node local cluster (`make local-down` first if one node runs): every figure spread over three nodes, plus a member replaced after its node is lost; results in bench/results/three-nodes.md.
	LC_NODES=3 hack/local-cluster.sh up
	BENCH_OUT=$${BENCH_OUT:-$(CURDIR)/bench/results/three-nodes.md} hack/bench-cluster.sh

.PHONY: bench-scale
bench-scale: ## End-to-end scale bench on the local cluster: operators' peak RSS and reconcile p50/p99 with 50 EtcdClusters and 200 EtcdBackupSchedules (BENCH_SCALE_CLUSTERS, BENCH_SCALE_SCHEDULES, BENCH_SCALE_HOLD); results in bench/results/latest-scale.md.
	hack/bench-scale.sh

.PHONY: envtest-assets
envtest-assets: ## Build kube-apiserver and etcd for envtest (cached) and print KUBEBUILDER_ASSETS.
	@hack/envtest-assets.sh

##@ Local cluster
.PHONY: local-up
local-up: ## Build (cached) and start a single-node Kubernetes on this machine.
	hack/local-cluster.sh up

.PHONY: local-up-3
local-up-3: ## Build (cached) and start a three-node local Kubernetes (zones a-c; docs/local-cluster.md).
	LC_NODES=3 hack/local-cluster.sh up

.PHONY: local-down
local-down: ## Stop the local cluster and remove everything it created.
	hack/local-cluster.sh down

.PHONY: local-selftest
local-selftest: ## Check, in throwaway namespaces, that local-down removes only what the cluster created (root; safe while it runs).
	hack/local-cluster/selftest.sh

.PHONY: local-status
local-status: ## Show the state of the local cluster.
	hack/local-cluster.sh status

.PHONY: objstores-up
objstores-up: ## Install (cached) and start MinIO, fake-gcs-server and Azurite on loopback.
	hack/objstores.sh up

.PHONY: objstores-down
objstores-down: ## Stop the object-store servers.
	hack/objstores.sh down

.PHONY: cert-manager-up
cert-manager-up: ## Build (cached) cert-manager's controllers from its Go module and run them against the local cluster (TLS.auto.issuerRef tests).
	hack/cert-manager.sh up

.PHONY: cert-manager-down
cert-manager-down: ## Stop the cert-manager controllers started by cert-manager-up.
	hack/cert-manager.sh down

.PHONY: deploy
deploy: ## Install CRDs, RBAC and the operators (image IMG) into the kubeconfig's cluster, with KUBECTL (default: kubectl on PATH).
	hack/deploy.sh apply

.PHONY: undeploy
undeploy: ## Remove the operators from the kubeconfig's cluster; keeps CRDs and custom resources unless DELETE_CRDS=yes.
	hack/deploy.sh delete

.PHONY: demo
demo: ## The disaster-recovery drill on the local cluster: backup, lose every member, restore, verify, report (docs/demo.md).
	hack/demo.sh

.PHONY: demo-continuous
demo-continuous: ## The drill with continuous capture: the restore goes to the newest point captured, and the report counts the writes after the backup that came back (docs/demo.md).
	DEMO_CONTINUOUS=1 hack/demo.sh

##@ Tools
$(CONTROLLER_GEN):
	@mkdir -p $(BIN)
	GOBIN=$(BIN) go install sigs.k8s.io/controller-tools/cmd/controller-gen@$(CONTROLLER_GEN_VERSION)
	mv $(BIN)/controller-gen $(CONTROLLER_GEN)
