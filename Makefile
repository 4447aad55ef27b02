# titanium-gateway developer entry points. `make demo` and `make test` work on a fresh machine.
PYTHON ?= python3
PIP ?= $(PYTHON) -m pip
IMAGE ?= ghcr.io/justcoding121/titanium-gateway
TAG ?= dev
CHART := charts/titanium-gateway

.PHONY: install demo test test-fast lint fmt golden bench image chart manifests manifests-check e2e conformance conformance-local fuzz clean \
	kube-build cluster-up cluster-down cluster-test dev promtool bench-propagation

install:  ## install the package and its test dependencies (editable)
	$(PIP) install -q -e '.[test]'

demo: install  ## render examples/ offline and show the result
	@echo "== titanium-gateway render -f examples/quickstart (HTTP quick start) =="
	titanium-gateway render -f examples/quickstart --assume-programmed
	@echo
	@echo "== titanium-gateway render -f examples/https --out out/https (HTTPS Gateway) =="
	titanium-gateway render -f examples/https --assume-programmed --out out/https
	@echo "-- out/https/gateways/apps/web-tls/twp.yaml (the Gateway's own data plane)"; cat out/https/gateways/apps/web-tls/twp.yaml
	@echo "-- out/https/status.yaml"; cat out/https/status.yaml
	@echo "-- out/https/gateways/apps/web-tls/certificates.yaml"; cat out/https/gateways/apps/web-tls/certificates.yaml

test:  ## the whole suite (unit, golden, property, integration, chart, and the cluster tier where root + Go are present)
	$(PYTHON) -m pytest -q

test-fast:
	$(PYTHON) -m pytest -q -x tests/render

lint:
	$(PYTHON) -m ruff check .

fmt:
	$(PYTHON) -m ruff check --fix .

golden:  ## regenerate tests/render/testdata/*/ expected files (review the diff by eye!)
	UPDATE_GOLDEN=1 $(PYTHON) -m pytest -q tests/render/test_golden.py

bench:  ## print the performance figures (see docs/performance.md)
	$(PYTHON) benchmarks/run.py

bench-propagation:  ## route propagation through make dev's Gateway, 1000 and 3000 routes attached (root; ~15 min)
	$(PYTHON) benchmarks/bench_propagation.py

fuzz:  ## the long bad-input campaign (docs/reliability.md)
	FUZZ_EXAMPLES=10000 $(PYTHON) -m pytest -q -m slow tests/reliability

image:
	docker build -t $(IMAGE):$(TAG) .

chart:
	hack/helm.sh lint $(CHART)

promtool:  ## build promtool into .cache/promtool/bin (needs Go; the chart's alert tests use it)
	hack/promtool.sh

manifests:  ## regenerate manifests/ from the chart
	hack/generate-manifests.sh

manifests-check:
	$(PYTHON) -m pytest -q tests/chart/test_manifests.py

e2e:  ## kind + pytest-kind; skips with a message without Docker/kind
	hack/e2e.sh

conformance:  ## upstream Gateway API v1.6.3 suite on kind; skips with a message without Docker/kind
	conformance/run.sh

conformance-local:  ## upstream Gateway API v1.6.3 suite on the local control plane, no Docker (root; conformance/README.md)
	conformance/local.sh

# The local control plane (docs/development.md): kube-apiserver + etcd, kube-controller-manager,
# kube-scheduler built from the k8s.io/kubernetes Go modules, run in a network namespace.
# The cluster directory: KUBE_DIR=..., else $TITANIUM_KUBE_DIR (as hack/kube/*.sh), else the default.
KUBE_DIR ?= $(or $(TITANIUM_KUBE_DIR),.cache/kube/cluster)

kube-build:  ## build the local control plane into .cache/kube/bin (needs Go; seconds when built)
	hack/kube/build.sh

cluster-up: kube-build  ## start the local cluster in $(KUBE_DIR); then: hack/kube/exec.sh kubectl get ns
	hack/kube/up.sh $(KUBE_DIR)

cluster-down:  ## stop the local cluster in $(KUBE_DIR)
	hack/kube/down.sh $(KUBE_DIR)

cluster-test:  ## the cluster tier (tests/cluster) on a cluster of its own; fails where it cannot run
	TITANIUM_CLUSTER_TESTS=require $(PYTHON) -m pytest -q -m cluster tests/cluster

dev:  ## cluster up, chart installed, this tree's controller, the reference data plane and echo backends as pods, quick start applied
	PYTHON="$(PYTHON)" DEV_VALUES="$(DEV_VALUES)" hack/kube/dev.sh $(KUBE_DIR)

clean:
	rm -rf out artifacts .pytest_cache build dist *.egg-info
