# karmadaflow: the two commands are `make run` (local environment + service, shown working)
# and `make test` (every test). Both build what they need into bin/ first.
include hack/tools/versions.mk

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c

# Every Go build of make builds as the images do: static (no cgo) and without local paths
# (-trimpath, which ko also applies). go vet, the tests, the benchmarks, the worker and starter
# the tests run and the images then share one compiled copy of every package: with other flags
# for the images, a cold build compiled the product's whole dependency graph a second time
# (measured: 253 s on 2 cores, 498 s of CPU).
export CGO_ENABLED := 0
export GOFLAGS += -trimpath

# Karmada's own components, built from its source (see KARMADA_SRC).
KARMADA_TOOLS := karmada-controller-manager karmada-scheduler karmada-webhook karmada-aggregated-apiserver \
	karmada-agent karmada-search karmada-descheduler karmada-metrics-adapter
# Binaries of the local environment (see ../shared/spec/local-env.md), and helm, which the
# end-to-end tests lint and render the chart with.
ENV_TOOLS := etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok temporal \
	temporal-server temporal-sql-tool temporal-ui-server helm $(KARMADA_TOOLS)
# apiserver-network-proxy's server and agent, which test/proxye2e runs to reach a member in Pull
# mode through spec.proxyURL, as Karmada does (built by the e2e target, not by make tools).
NETWORK_PROXY_TOOLS := proxy-server proxy-agent
# Where Karmada's source is: a directory holding karmada-src-$(KARMADA_COMMIT).tar.xz and its CRD
# tarball (the default), or a Karmada checkout of that commit.
KARMADA_SRC ?= $(abspath $(CURDIR)/../shared/karmada)
export KARMADA_SRC
# Unit and replay tests need no environment; every other package under test/ does.
GO_PACKAGES = $(shell go list ./... | grep -v '/test/') ./test/replay ./test/docs
E2E_PACKAGES = $(shell go list ./test/... | grep -v -e '/test/replay$$' -e '/test/images$$' -e '/test/docs$$')
# The set a replay recording adds beside the older ones: the date and the commit.
RECORD_SET := $(shell date -u +%Y%m%d)-$(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
# What `--version` prints and the images' tag, stamped into the binaries.
VERSION := $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
VERSION_LDFLAGS := -X github.com/karmadaflow/karmadaflow/internal/version.Version=$(VERSION) \
	-X github.com/karmadaflow/karmadaflow/internal/version.Commit=$(COMMIT)
# The repository of the images: $(IMAGE_REPO)/worker:$(VERSION) and $(IMAGE_REPO)/starter:$(VERSION).
IMAGE_REPO ?= karmadaflow
TEST_TIMEOUT ?= 80m
# An execution count, not a duration: with a duration, Go's fuzz coordinator can fail a target
# with a bare "context deadline exceeded" as the time runs out on a busy machine (go.dev/issue/75804).
FUZZ_TIME ?= 5000x

.PHONY: all
all: build

.PHONY: tools
tools: ## Build the pinned local-environment binaries into bin/ (skips what is there), install PostgreSQL and chromium.
	hack/tools/ensure.sh $(ENV_TOOLS)
	hack/install-postgresql.sh
	hack/install-chromium.sh

.PHONY: network-proxy-tools
network-proxy-tools: ## Build apiserver-network-proxy's proxy-server and proxy-agent into bin/ (test/proxye2e runs them).
	hack/tools/ensure.sh $(NETWORK_PROXY_TOOLS)

.PHONY: generate
generate: ## Regenerate deepcopy code and CRDs from api/.
	hack/tools/ensure.sh controller-gen
	hack/generate.sh

.PHONY: build
build: ## Build the worker and starter binaries into bin/.
	go build -ldflags "$(VERSION_LDFLAGS)" -o bin/worker ./worker
	go build -ldflags "$(VERSION_LDFLAGS)" -o bin/starter ./starter

.PHONY: images
images: ## Build the worker and starter images with ko (no Docker, no registry) into .images/<component>.tar.
	VERSION="$(VERSION)" COMMIT="$(COMMIT)" LDFLAGS="$(VERSION_LDFLAGS)" IMAGE_REPO="$(IMAGE_REPO)" hack/images.sh

.PHONY: images-test
images-test: images ## Open the images: user, entrypoint, labels, CA certificates, and the binary's --version.
	IMAGE_REPO="$(IMAGE_REPO)" go test -count=1 ./test/images/

.PHONY: lint
lint: ## gofmt, go vet, generated code up to date, workflow determinism check.
	@unformatted=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	  if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	go vet ./...
	hack/tools/ensure.sh workflowcheck
	bin/workflowcheck ./workflows/...

MONITORING_DIR := deploy/charts/karmadaflow/monitoring

.PHONY: monitoring-check
monitoring-check: ## Check the alert rules with promtool and run their unit tests.
	hack/tools/ensure.sh promtool
	bin/promtool check rules $(MONITORING_DIR)/alerts.yaml
	cd $(MONITORING_DIR) && $(CURDIR)/bin/promtool test rules alerts.test.yaml

.PHONY: unit
unit: ## Unit and replay tests (no environment needed).
	go test -count=1 $(GO_PACKAGES)

.PHONY: e2e
e2e: tools network-proxy-tools ## End-to-end tests against the real local environment.
	go test -count=1 -p 1 -timeout $(TEST_TIMEOUT) $(E2E_PACKAGES)

# The part of the end-to-end suite that runs again on the Temporal server (PostgreSQL, several
# history shards, mTLS): propagation, dispatch, scaling, deletion, two workers with crashes,
# unhealthy-provider cleanup, and the provisioning happy path; and the rolling upgrade from the
# previous release and back, and the rescue of runs stranded on a version whose workers were
# killed, which need that server (Worker Versioning moves pinned runs at
# continue-as-new from Temporal 1.32 on; the dev server is 1.29). The disruptive cases, which run
# last, are subtests of TestDisruptiveCasesLast (test/e2e/disruptive_test.go): selected here, in
# BESIDE_E2E_RUN and in replay-record as TestDisruptiveCasesLast/<case>. The part after the
# slash filters the subtests of every test the part before it selects: the other tests these
# patterns name have no subtests, and must keep it so (or get a pattern of their own).
SERVER_E2E_RUN := ^(TestWorkerWithoutClientCertificateNamesTLS|TestRollingUpgradeAndRollback|TestStrandedRunsMoveToTheCurrentVersion|TestMCSProviderToConsumer|TestMCSScaleProvider|TestMCSDeleted|TestMCSTwoWorkersOneKeepsCrashing)$$|^TestDisruptiveCasesLast$$/^TestMCSUnhealthyProviderGrace$$

.PHONY: e2e-temporal-server
e2e-temporal-server: tools ## End-to-end subset against the Temporal server on PostgreSQL with mTLS.
	KARMADAFLOW_TEST_TEMPORAL=postgres go test -count=1 -timeout 20m -run '$(SERVER_E2E_RUN)' ./test/e2e/
	KARMADAFLOW_TEST_TEMPORAL=postgres go test -count=1 -timeout 15m -run '^TestNodePortInstall$$' ./test/provisioninge2e/

# The MultiClusterService cases again, beside Karmada's own components (karmada-controller-manager,
# -scheduler, -webhook and -aggregated-apiserver, built from KARMADA_SRC), with karmadaflow in the
# chart's besideKarmada mode: Karmada's execution controller applies the Works.
BESIDE_E2E_RUN := ^(TestMCS.*|TestClusterNameLongerThan48IsRefused)$$|^TestDisruptiveCasesLast$$/^TestMCS.*$$

.PHONY: e2e-beside-karmada
e2e-beside-karmada: tools ## End-to-end MultiClusterService cases beside Karmada's own components.
	KARMADAFLOW_TEST_MODE=besideKarmada go test -count=1 -timeout 30m -run '$(BESIDE_E2E_RUN)' ./test/e2e/

# What make fuzz fuzzes, as <package>:<fuzz target>, each for FUZZ_TIME. FuzzCRDTarballCRDs
# (activities/provisioning) runs its seeds with the unit tests only: FuzzReadCRDTarball builds
# the CRDs of every tarball it accepts too, and the fuzzing engine stalled between its inputs.
FUZZ_TARGETS := \
	./activities/provisioning:FuzzReadCRDTarball \
	./activities/execution:FuzzManifestsOf \
	./activities/mcs:FuzzSliceOfWork \
	./proxy:FuzzTranslateBody \
	./internal/members:FuzzProxyOf \
	./internal/urlprefix:FuzzCheck \
	./internal/kubeconfig:FuzzInlineRESTConfig \
	./proxy:FuzzParsePath \
	./proxy:FuzzDecodeResourceVersion \
	./proxy:FuzzContinueToken \
	./proxy:FuzzWithAnnotation \
	./activities/provisioning:FuzzValidate \
	./activities/provisioning:FuzzValidateName \
	./activities/mcs:FuzzValidate \
	./internal/options:FuzzParse \
	./proxy/searchapi:FuzzRegistryValidate

.PHONY: fuzz
fuzz: ## Fuzz the CRD tarball reader, the Work manifest decoders, the proxy's body translation, path and proxy-URL parsing, the URL allowlists, version decoders and every validation, for a bounded number of inputs each.
	for pair in $(FUZZ_TARGETS); do \
	  pkg=$${pair%%:*}; target=$${pair#*:}; \
	  go test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZ_TIME) $$pkg || exit 1; \
	done

# make test runs in two steps, each two branches side by side:
#   1. the environment's tools (the longest cold step: Kubernetes, Temporal, Karmada) beside the
#      unit and replay tests, which need no environment;
#   2. the end-to-end suites one after another, beside lint, the alert rules, the images and
#      fuzzing at the lowest CPU priority (nice 19): the suites leave part of the machine idle
#      while they wait on their environments, and those checks fill it without slowing them.
# Each branch is a sub-make of its own, serial inside (-j1; make warns that it resets the
# jobserver for it): the branches share nothing but bin/, where each writes other tools. The
# second step's background checks write to .test-logs/ and print it when they end.
TEST_LOGS := .test-logs

.PHONY: test
test: ## Every test: lint, alert rules, unit, replay, images, fuzz, end-to-end (also beside Karmada, and on the Temporal server).
	$(MAKE) --no-print-directory -j2 unit test-tools
	$(MAKE) --no-print-directory -j2 e2e-suites checks-beside-e2e

.PHONY: checks-no-env
checks-no-env: ## The tests that need no environment: lint, alert rules, unit and replay, images, fuzz.
	$(MAKE) --no-print-directory -j1 lint monitoring-check unit images-test fuzz

.PHONY: test-tools
test-tools:
	$(MAKE) --no-print-directory -j1 tools network-proxy-tools

.PHONY: e2e-suites
e2e-suites: ## The three end-to-end targets, one after another.
	$(MAKE) --no-print-directory -j1 e2e e2e-beside-karmada e2e-temporal-server

# The checks of make test's second step that need no environment, niced, their output kept in
# $(TEST_LOGS)/checks-beside-e2e.log until they end.
CHECKS_BESIDE_E2E := lint monitoring-check images-test fuzz

.PHONY: checks-beside-e2e
checks-beside-e2e:
	@echo "$(CHECKS_BESIDE_E2E) run at nice 19 beside the end-to-end suites; output: $(TEST_LOGS)/checks-beside-e2e.log"
	@mkdir -p $(TEST_LOGS); rc=0; nice -n 19 $(MAKE) --no-print-directory -j1 $(CHECKS_BESIDE_E2E) > $(TEST_LOGS)/checks-beside-e2e.log 2>&1 || rc=$$?; \
	  echo "--- $(CHECKS_BESIDE_E2E) (exit $$rc):"; cat $(TEST_LOGS)/checks-beside-e2e.log; exit $$rc

.PHONY: bench
bench: tools ## Benchmarks: MultiClusterService (.bench/report.md), the proxy (.bench/proxy-report.md), provisioning (.bench/provisioning-report.md), the environment at 20 members (.bench/env-report.md), scale (.bench/scale-report.md).
	go run ./test/bench/cmd/mcsbench
	go run ./test/bench/cmd/proxybench
	go run ./test/bench/cmd/provisioningbench
	go run ./test/bench/cmd/besidebench
	go run ./test/bench/cmd/envbench
	$(MAKE) --no-print-directory bench-scale

.PHONY: bench-scale
bench-scale: tools ## 20 members and 2,000 MultiClusterServices: cold start, 10 changes/s for 5 min, a worker restart, member flaps (.bench/scale-report.md).
	go run ./test/bench/cmd/scalebench

.PHONY: replay-record
replay-record: tools ## Record a new set of replay histories from the real end-to-end flow (older sets stay).
	KARMADAFLOW_RECORD_HISTORIES=1 KARMADAFLOW_RECORD_SET=$(RECORD_SET) go test -count=1 -timeout 20m \
	  -run 'TestMCSDeleted|TestMCSScaleProvider|TestMCSProvidersAndConsumersSwap|TestMCSInvalidSpec|TestMCSLoadBalancerOnlyIsUnsupported|TestMCSCreatedBeforeService|TestMCSContinuesAsNewOnRequest|TestMCSWithPullCluster|TestDisruptiveCasesLast/TestMCSUnhealthyProviderGrace' ./test/e2e/
	KARMADAFLOW_RECORD_HISTORIES=1 KARMADAFLOW_RECORD_SET=$(RECORD_SET) go test -count=1 -timeout 10m -run 'TestNodePortInstall' ./test/provisioninge2e/

.PHONY: run
run: tools build ## Bring up the local environment, the worker and the starter; Ctrl-C stops all.
	hack/run.sh

.PHONY: clean
clean:
	rm -rf bin .localenv .images $(TEST_LOGS)
