# One command each: `make run` sets up and opens the app (on ./hosts.toml, your fleet,
# ignored by git; with none, this machine alone); `make demo` sets up with the CPU torch
# the demo's training runs need, then opens the demo; `make test` sets up and runs every
# check CI runs. All work on a fresh machine (system packages need root or sudo).
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TORCH_STAMP := $(VENV)/.installed-torch
DEV_STAMP := $(VENV)/.installed-dev

# torch pinned to the CPU build this machine image carries (pip takes it for exactly this
# version), installed before the [torch] extra so pip never downloads a CUDA build.
TORCH_PIN := torch==2.13.0

.PHONY: setup run demo test lint system-deps bench clean

# The app alone: no torch. Verify loads checkpoints with [fleet] verify_python (the
# training environment's interpreter), or this venv once `pip install 'rgt-tui[torch]'`.
$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q -e .
	touch $(STAMP)

# torch for the tests (real checkpoints) and the demo (its workload trains with torch).
$(TORCH_STAMP): $(STAMP)
	$(PY) -m pip install -q $(TORCH_PIN)
	$(PY) -m pip install -q -e '.[torch]'
	touch $(TORCH_STAMP)

$(DEV_STAMP): $(STAMP)
	$(PY) -m pip install -q -e '.[dev]'
	touch $(DEV_STAMP)

setup: $(STAMP)

run: setup
	$(VENV)/bin/rgt-tui

demo: setup $(TORCH_STAMP)
	$(VENV)/bin/rgt-tui demo

system-deps:
	bash scripts/install_system_deps.sh

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

# The suite on TEST_WORKERS processes (pytest-xdist): most tests wait on loopback boxes,
# sshd and subprocesses, so a third worker still gains on 2 cores. worksteal: a worker
# that runs out takes tests queued on another (the slow ones are uneven). Every test has
# its own tmp folder, state, tmux server and ports. TEST_WORKERS=0: one process.
TEST_WORKERS ?= 3
test: system-deps setup $(TORCH_STAMP) $(DEV_STAMP) lint
	$(VENV)/bin/pytest -n $(TEST_WORKERS) --dist worksteal

bench: setup
	$(PY) scripts/bench_telemetry.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
