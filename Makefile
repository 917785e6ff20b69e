# The lanes and checks CI runs (.ci/run), one target each. `make help` lists them.
PY ?= .venv/bin/python
VENV_BIN := $(dir $(PY))

.PHONY: help venv install test slow all heavy browser shared lint types docs wheel check clean

help:  ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

venv:  ## a fresh .venv with the default lane, lint and docs tools (editable install)
	python3 -m venv .venv && $(PY) -m pip install -q -e '.[test,lint,docs]'

test:  ## the default lane (the README's test command): in this process; no ../shared, no network
	$(PY) -m pytest -n 2

slow:  ## tests that start processes (subprocess CLI, MLflow's helper, shard workers) or wait on the clock
	$(PY) -m pytest -n 2 -m "slow and not heavy and not browser and not shared_data"

all: test slow  ## the two lanes that need only '.[test]': what CI runs first

heavy:  ## the heavy lane: torch, Ray, Optuna, Chroma, PostgreSQL (pip install -e '.[test-heavy]')
	$(PY) -m pytest -m heavy

browser:  ## report.html in headless Chromium (apt chromium chromium-driver; '.[test-browser]')
	$(PY) -m pytest -m browser

shared:  ## tests on the full public data sets in ../shared/data (or $$HARNESS_SHARED_DATA)
	$(PY) -m pytest -n 2 -m "shared_data and not heavy and not browser"

lint:  ## ruff
	$(VENV_BIN)ruff check harness tests benchmarks

types:  ## mypy --strict on harness/
	$(VENV_BIN)mypy

docs:  ## the documentation site, strictly (broken links fail); output in site/ (adds the docs extra to the venv if missing)
	@test -x $(PY) || { echo "error: no $(PY): set up the venv first (README: python3 -m venv .venv && . .venv/bin/activate && pip install -e .)" >&2; exit 2; }
	@test -x $(VENV_BIN)mkdocs || { echo "installing the docs extra into $(VENV_BIN:/=): pip install -e '.[docs]'"; $(PY) -m pip install -q -e '.[docs]'; }
	$(VENV_BIN)mkdocs build --strict

wheel:  ## build the wheel into dist/
	$(PY) -m pip wheel --no-deps -w dist .

check: lint types test  ## what to run before a commit (CI also runs slow, shared, heavy, browser)

clean:  ## build outputs
	rm -rf build dist site *.egg-info
