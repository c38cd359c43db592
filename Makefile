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

# make setup ACCEL=cuda|metal -> llama-cpp-python rebuilt with that GPU backend (ACCEL=cpu: back)
# make setup ACCEL=cpu-noamx   -> the CPU build without llama.cpp's AMX kernels, for Xeons whose
#                                AMX path crashes (phase then turns every extra CPU buffer off,
#                                repacked weights too, and decodes several times slower)
ACCEL ?=
LLAMA_VERSION := $(shell sed -n 's/.*"llama-cpp-python==\([^"]*\)".*/\1/p' pyproject.toml)
ACCEL_CMAKE_cuda := -DGGML_CUDA=on
ACCEL_CMAKE_metal := -DGGML_METAL=on
ACCEL_CMAKE_cpu :=
NO_AMX := -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
ACCEL_CMAKE_cpu-noamx := -DCMAKE_C_FLAGS='$(NO_AMX)' -DCMAKE_CXX_FLAGS='$(NO_AMX)'
# make measure EXPERIMENT=NAME -> the campaign of experiments/NAME.py (memory_bound, ...)
EXPERIMENT ?= speculative
# make measure QUICK=1  -> a smoke campaign of a few minutes on the small test model
QUICK ?=
MEASURE_ARGS ?=
PORT ?= 8000

.PHONY: help setup measure site serve test test-fast bytecode bench lint clean screenshots

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-11s %s\n", $$1, $$2}'

setup: $(STAMP) $(if $(ACCEL),$(VENV)/.phase-accel-$(ACCEL)) ## create .venv with uv (ACCEL=cuda|metal: GPU build)

$(STAMP): pyproject.toml uv.lock
	@command -v uv >/dev/null 2>&1 || $(PYTHON) -m uv --version >/dev/null 2>&1 || { \
	  echo "uv not found: installing it with pip"; \
	  $(PYTHON) -m pip install --user --quiet uv || \
	  $(PYTHON) -m pip install --user --quiet --break-system-packages uv; }
	@echo "syncing $(VENV) (first time: llama-cpp-python compiles, ~5 min on 2 cores)"
	$(UV) sync --frozen --extra test --compile-bytecode
	@touch $@

# The locked llama-cpp-python, compiled again from source with the backend's CMake flag (uv
# would otherwise reuse its cached CPU build). Needs that backend's toolkit (CUDA: nvcc).
$(VENV)/.phase-accel-%: $(STAMP)
	@case "$*" in cuda|metal|cpu|cpu-noamx) ;; *) echo "ACCEL=$* is not one of: cuda metal cpu cpu-noamx"; exit 2;; esac
	CMAKE_ARGS="$(ACCEL_CMAKE_$*)" FORCE_CMAKE=1 $(UV) pip install --python $(PY) \
	  --reinstall-package llama-cpp-python --no-binary llama-cpp-python --no-cache \
	  "llama-cpp-python==$(LLAMA_VERSION)"
	@rm -f $(VENV)/.phase-accel-*
	@touch $@

measure: setup ## run an experiment (EXPERIMENT=speculative) -> results/$(EXPERIMENT)-<host>-<date>.json
	$(PHASE) measure $(EXPERIMENT) $(if $(QUICK),--quick) $(MEASURE_ARGS)

site: setup ## validate results, render notes, build site/ (QUICK=1: preview results/quick/ too)
	$(PHASE) site $(if $(QUICK),--include-quick)

serve: site ## browse the built site on http://127.0.0.1:$(PORT)
	$(PHASE) serve --port $(PORT)

screenshots: site ## full-page PNGs of the home page and each note at 1280 px -> docs/screenshots/
	$(PY) tests/screenshots.py --site-dir site --out docs/screenshots

# Both run in pytest-xdist workers: `test` one per core (each pinned to its core, for
# llama.cpp's threads: tests/conftest.py); `test-fast` one more than the cores, unpinned: it
# loads no model, and about a fifth of its workers' time went to tests waiting on a clock
# (sensor replays, sampled windows), which a spare worker fills (on 2 cores, 2026-12-07: 43-44 s
# against 50 s). tests/conftest.py keeps a module's shared fixtures on one worker and the
# `serial` tests one after another (tests/xdist_groups.py hands out the groups, heaviest
# first). PYTEST_ARGS adds options (make test PYTEST_ARGS="-k site -x"; PYTEST_ARGS=--cpu-times:
# each test's CPU seconds); pytest's exit status is make's (5: no tests ran).
# The suite starts `phase` as a process some hundreds of times: each start reads compiled
# bytecode rather than compiling every module again (uv installs without it, and
# PYTHONDONTWRITEBYTECODE=1, set on some machines, keeps Python from writing it): about half of
# a start's CPU. `bytecode` compiles the venv once (`uv sync --compile-bytecode` does it for a new
# one) and phase's own modules when they changed.
# PYTHONDONTWRITEBYTECODE emptied for the tests as well: pytest keeps each test module with its
# asserts rewritten as bytecode beside it, and without that cache every worker rewrote all of
# them on every run (collection: 9 s of CPU per process, 3.6 s with it).
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest --dist loadgroup
PYTEST_ARGS ?=
FAST := not (model or browser or slurm or slow)
FAST_WORKERS = $(shell $(PYTHON) -c "import os; print(1 + (len(os.sched_getaffinity(0)) \
  if hasattr(os, 'sched_getaffinity') else os.cpu_count() or 1))")

test: setup bytecode ## the whole suite, in parallel (fetches the small test model on first run)
	$(PYTEST) -n auto $(PYTEST_ARGS)

test-fast: setup bytecode ## the edit-run loop: no model, browser, Slurm nor full site build (< 1 min)
	$(PYTEST) -n $(FAST_WORKERS) -m "$(FAST)" $(PYTEST_ARGS)

bytecode: $(VENV)/.phase-bytecode
	@$(PY) -m compileall -q phase tests bench

$(VENV)/.phase-bytecode: $(STAMP)
	@$(PY) -m compileall -q -j 0 $(VENV)/lib >/dev/null || true  # a few vendored files fail
	@touch $@

bench: setup ## performance benchmarks (not tests) -> bench/results/
	$(PY) -m bench.run

lint: setup ## ruff, the import layers (lint-imports) and the types (mypy); settings in pyproject.toml
	$(VENV)/bin/ruff check phase tests bench experiments
	$(VENV)/bin/lint-imports
	$(VENV)/bin/mypy

clean: ## remove generated pages and the built site (never results/ nor published/)
	rm -rf site docs/notes docs/raw docs/bench docs/hosts docs/assets/vendor .pytest_cache .ruff_cache
	rm -rf .phase-tmp-* docs/.phase-tmp-* docs/assets/.phase-tmp-*  # left by a killed build
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
