# Two entry points, both self-contained on a fresh clone:
#   make sim    set up, then run the controller on the embedded simulated cluster
#   make test   set up, then run lint, type checks, layering checks, the docs build and the whole test suite
# The inner loop: make unit (unit tests, fewer hypothesis examples), make docs (serve the site locally).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
SIM_ARGS ?=
DOCS_ADDRESS ?= 127.0.0.1:8000
# mkdocs-material prints a banner about its successor on every build; the build itself is what we check.
export NO_MKDOCS_2_WARNING := 1

.PHONY: sim test unit lint docs docs-gen docs-check setup clean image

$(STAMP): pyproject.toml dsctl-api/pyproject.toml dsctl-sim/pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ./dsctl-api -e ./dsctl-sim -e '.[test,bench,docs]'
	touch $(STAMP)

setup: $(STAMP)

sim: $(STAMP)
	$(VENV)/bin/dsctl sim $(SIM_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check dsctl dsctl-api dsctl-sim tests benchmarks manifests tools
	$(VENV)/bin/mypy dsctl dsctl-api/dsctl_api dsctl-sim/dsctl_sim dsctl-sim/examples dsctl-sim/tests tests benchmarks tools \
		manifests/crd/generate.py manifests/monitoring/dashboard.py
	$(VENV)/bin/lint-imports

# The generated reference pages must match the code, and the site must build with no broken link.
docs-check: $(STAMP)
	$(PY) -m tools.docgen --check
	$(VENV)/bin/mkdocs build --strict --quiet --site-dir "$(CURDIR)/site"

# Rewrite the generated pages (reference/, adr/index.md) from the code.
docs-gen: $(STAMP)
	$(PY) -m tools.docgen

# Serve the site on the loopback address only, rebuilding on every save.
docs: $(STAMP)
	$(VENV)/bin/mkdocs serve --dev-addr $(DOCS_ADDRESS)

# The unit tests alone, with the development hypothesis profile (a tenth of the examples).
unit: $(STAMP)
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --hypothesis-profile=dev tests/unit

test: lint docs-check
	bash .ci/ensure-promtool
	bash .ci/ensure-buildah
	bash .ci/ensure-chromium
	PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(PY) -m pytest -q -p no:cacheprovider -n 3 --dist worksteal

# The controller image: docker build when a Docker engine answers, else buildah (daemonless);
# the base falls back to one bootstrapped from the Debian archive when no registry is reachable.
# The build uses this machine's pip index configuration. See docs/operations/deploy.md.
IMAGE ?= dsctl:0.1.0
IMAGE_BASE ?= auto
image:
	python3 tools/image_build.py --tag $(IMAGE) --base $(IMAGE_BASE)

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache site
