# One command each: `make run` sets up and opens the app; `make test` sets up and runs
# every check CI runs. Both work on a fresh machine (system packages need root or sudo).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: setup run demo test lint system-deps bench clean

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	# The CPU build of torch first, pinned: the [torch] extra is then already satisfied
	# and pip never downloads the multi-gigabyte CUDA build.
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[dev,torch]'
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(VENV)/bin/rgt-tui

demo: setup
	$(VENV)/bin/rgt-tui demo

system-deps:
	bash scripts/install_system_deps.sh

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

test: system-deps setup lint
	$(VENV)/bin/pytest

bench: setup
	$(PY) scripts/bench_telemetry.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
