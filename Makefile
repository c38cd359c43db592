# phase — everyday commands. On a fresh machine with Python 3.11+, make and a C compiler,
# every target below bootstraps what it needs (uv, the virtual environment, llama-cpp-python
# compiled once and cached by uv under ~/.cache/uv).

SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON ?= python3
UV := $(shell command -v uv 2>/dev/null || echo "$(PYTHON) -m uv")
VENV := .venv
PHASE := $(VENV)/bin/phase
PY := $(VENV)/bin/python
STAMP := $(VENV)/.phase-synced

# make measure QUICK=1  -> a smoke campaign of a few minutes on the small test model
QUICK ?=
MEASURE_ARGS ?=
PORT ?= 8000

.PHONY: help setup measure site serve test bench lint clean screenshots

help: ## list the targets
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-8s %s\n", $$1, $$2}'

setup: $(STAMP) ## create .venv with uv (installs uv first when missing)

$(STAMP): pyproject.toml uv.lock
	@command -v uv >/dev/null 2>&1 || $(PYTHON) -m uv --version >/dev/null 2>&1 || { \
	  echo "uv not found: installing it with pip"; \
	  $(PYTHON) -m pip install --user --quiet uv || \
	  $(PYTHON) -m pip install --user --quiet --break-system-packages uv; }
	@echo "syncing $(VENV) (first time: llama-cpp-python compiles, ~5 min on 2 cores)"
	$(UV) sync --frozen --extra test
	@touch $@

measure: setup ## run the speculative-decoding campaign -> results/speculative-<host>-<date>.json
	$(PHASE) measure speculative $(if $(QUICK),--quick) $(MEASURE_ARGS)

site: setup ## validate results, render notes, build the static site into site/
	$(PHASE) site

serve: site ## browse the built site on http://127.0.0.1:$(PORT)
	$(PHASE) serve --port $(PORT)

screenshots: site ## full-page PNGs of the home page and each note at 1280 px -> docs/screenshots/
	$(PY) tests/screenshots.py --site-dir site --out docs/screenshots

test: setup ## run the test suite (fetches the small test model on first run)
	$(PY) -m pytest

bench: setup ## performance benchmarks (not tests) -> bench/results/
	$(PY) bench/run.py

lint: setup ## ruff, and the import layers (lint-imports; contracts in pyproject.toml)
	$(VENV)/bin/ruff check phase tests bench experiments
	$(VENV)/bin/lint-imports

clean: ## remove generated pages and the built site (never results/)
	rm -rf site docs/notes docs/raw docs/bench docs/assets/vendor .pytest_cache .ruff_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
