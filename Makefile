# Two entry points, both self-contained on a fresh clone:
#   make sim    set up, then run the controller on the embedded simulated cluster
#   make test   set up, then run lint, type checks, layering checks and the whole test suite
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
SIM_ARGS ?=

.PHONY: sim test lint setup clean image

$(STAMP): pyproject.toml dsctl-api/pyproject.toml dsctl-sim/pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ./dsctl-api -e ./dsctl-sim -e '.[test,bench]'
	touch $(STAMP)

setup: $(STAMP)

sim: $(STAMP)
	$(VENV)/bin/dsctl sim $(SIM_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check dsctl dsctl-api dsctl-sim tests benchmarks manifests tools
	$(VENV)/bin/mypy dsctl dsctl-api/dsctl_api dsctl-sim/dsctl_sim dsctl-sim/examples dsctl-sim/tests tests benchmarks tools \
		manifests/crd/generate.py manifests/monitoring/dashboard.py
	$(VENV)/bin/lint-imports

test: lint
	bash .ci/ensure-promtool
	bash .ci/ensure-buildah
	bash .ci/ensure-chromium
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m pytest -q -p no:cacheprovider -n 3 --dist worksteal

# The controller image: docker build when a Docker engine answers, else buildah (daemonless);
# the base falls back to one bootstrapped from the Debian archive when no registry is reachable.
# The build uses this machine's pip index configuration. See README.md, "Container image".
IMAGE ?= dsctl:0.1.0
IMAGE_BASE ?= auto
image:
	python3 tools/image_build.py --tag $(IMAGE) --base $(IMAGE_BASE)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
