# Two entry points, both self-contained on a fresh clone:
#   make sim    set up, then run the controller on the embedded simulated cluster
#   make test   set up, then run lint, type checks, layering checks and the whole test suite
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
SIM_ARGS ?=

.PHONY: sim test lint setup clean

$(STAMP): pyproject.toml dsctl-api/pyproject.toml dsctl-sim/pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ./dsctl-api -e ./dsctl-sim -e '.[test,bench]'
	touch $(STAMP)

setup: $(STAMP)

sim: $(STAMP)
	$(VENV)/bin/dsctl sim $(SIM_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check dsctl dsctl-api dsctl-sim tests benchmarks manifests
	$(VENV)/bin/mypy dsctl dsctl-api/dsctl_api dsctl-sim/dsctl_sim dsctl-sim/examples tests benchmarks manifests/crd/generate.py
	$(VENV)/bin/lint-imports

test: lint
	bash .ci/ensure-promtool
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m pytest -q -p no:cacheprovider -n 3

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
