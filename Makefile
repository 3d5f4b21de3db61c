# Each target builds its own virtual environment in .venv on first use.
# torch is pinned here (not in pyproject) to the tested CPU build: an unpinned
# install would pull several GB of CUDA packages.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
TORCH  ?= torch==2.13.0

.PHONY: demo test pytest test-gpu lint bench docs clean

# Bytecode is written as Python writes it, on a module's first import, and never twice:
# PYTHONDONTWRITEBYTECODE, where a machine sets it, is not passed on, or each of the tests'
# few hundred processes would compile torch again (8 CPU-s each). Not compiled at install
# (pip compiles one file at a time, 58 s of 115 here) nor all at once (compileall: 31 s of two
# cores for 10,600 files, most of them Ray's, sympy's and pip's that nothing imports): while
# pip installs the rest, one process imports torch and its compiler, and then one imports the
# TUI, Ray and the test tools, what the first processes of `make test` or `make demo` import
# at once (each would otherwise compile the same modules side by side).
unexport PYTHONDONTWRITEBYTECODE
PIP := $(BIN)/python -m pip install --quiet --disable-pip-version-check --no-compile
# torch comes through pip, which reads the machine's pip configuration (where a local CPU wheel
# may be found); the rest through uv, which installs them side by side: 5 s here where pip took
# 37 s (and 35 CPU-s) for the same packages.
UV  := $(BIN)/uv pip install --quiet --python $(BIN)/python

$(BIN)/warmscope: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) "$(TORCH)" numpy uv
	$(BIN)/python -c "import torch._inductor.compile_fx, torch.export" & \
	$(UV) -e '.[dev]' \
	  && $(BIN)/python -c "import warmscope.tui.app, warmscope.cli, ray, pytest, xdist, hypothesis, textual.pilot" \
	  && wait $$!
	@touch $@

demo: $(BIN)/warmscope
	$(BIN)/warmscope sample:speech

# mypy and import-linter read the packages from folders named as they import: warmscope's,
# linked in build/. (Checked as core/, cli/, tui/, each module's imports of the others would
# be unknown, and every type across modules Any.)
IMPORT_GRAPH := build/import-graph

lint: $(BIN)/warmscope
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	rm -rf $(IMPORT_GRAPH) && mkdir -p $(IMPORT_GRAPH)/warmscope
	for p in core cli tui sample_models; do ln -s $(CURDIR)/$$p $(IMPORT_GRAPH)/warmscope/$$p; done
	cd $(IMPORT_GRAPH) && $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml \
	  --cache-dir $(CURDIR)/.mypy_cache -p warmscope.core -p warmscope.cli -p warmscope.tui
	cd $(IMPORT_GRAPH) && PYTHONPATH=$(CURDIR)/$(IMPORT_GRAPH) $(CURDIR)/$(BIN)/lint-imports $(CURDIR)/pyproject.toml

# The lint and the tests at once: mypy's minute runs beside the tests, and a lint failure
# still fails the target (after the tests end).
test: $(BIN)/warmscope
	$(MAKE) --no-print-directory -j2 lint pytest

# Tests in parallel, a file to a worker (its module fixtures, an SSH server or a Ray cluster,
# start once): most tests wait on real children, so two workers halve the time on two cores.
# warmscope's own modules are compiled first, once, not by both workers as they collect.
pytest: $(BIN)/warmscope
	$(BIN)/python -m compileall -q core cli tui sample_models
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4 --dist loadfile --no-loadscope-reorder --durations=25

# On a GPU machine: the real CUDA and NVML paths (skipped, with the reason, without a GPU).
test-gpu: $(BIN)/warmscope
	$(BIN)/python -m pytest -q -m gpu tests/gpu

bench: $(BIN)/warmscope
	$(BIN)/python benchmarks/observer_overhead.py

# The pages under docs/ as a site in site/ (open site/index.html: it works from files, offline).
# --strict: a broken link or anchor, or a page left out of mkdocs.yml's nav, fails the build.
# (NO_MKDOCS_2_WARNING: quiets a banner on every build; mkdocs-material's end of life is 5 May 2027.)
docs: $(BIN)/mkdocs
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

$(BIN)/mkdocs: $(BIN)/warmscope
	$(UV) -e '.[docs]'
	@touch $@

clean:
	rm -rf $(VENV) build *.egg-info site
