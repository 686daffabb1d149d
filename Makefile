# Two entry points for a new machine (Python >= 3.11 and Java 17 assumed):
#   make run    set up .venv and run the main job on its embedded default
#   make test   set up .venv and run the test suite (what .ci/run does)
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: setup run test bench lint

$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(VENV)/bin/kafka-rebalance lab --out lab-out

test: setup
	$(VENV)/bin/ruff check src tests benchmarks
	$(PY) -m mypy
	$(PY) -m pytest -q -n 2 --dist loadgroup --durations=25

bench: setup
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/assignors.py

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks
	$(PY) -m mypy
