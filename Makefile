# Two entry points for a new machine (Python >= 3.11 and Java 17 assumed):
#   make run    set up .venv and run the main job on its embedded default
#   make test   set up .venv and run the test suite (what .ci/run does)
# and the inner loop on that .venv:
#   make test-fast   the tests that need no JVM, S3 server, cluster or broker, and none marked slow
VENV  := .venv
PY    := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

# Every test that starts a JVM, moto's S3 server, a standalone cluster or a broker carries the marker
# of it (tests/conftest.py sets it from the fixture it uses); "slow" marks the seconds-long rest.
FAST  := not spark and not s3 and not cluster and not broker and not slow

.PHONY: setup run test test-fast bench lint

# Bytecode is compiled at set-up, on every core: pip compiles what it installs one file at a time
# (36 of the install's 78 s; on two cores 21 s), and an editable install's own package is otherwise
# compiled at its first import, or never where PYTHONDONTWRITEBYTECODE is set (each run, and each
# Spark worker daemon, then compiles ~45 modules: ~0.15 CPU-s).
$(STAMP): pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -e '.[dev]'
	$(PY) -m compileall -q -j 0 src $(VENV)/lib/python3*/site-packages
	touch $(STAMP)

setup: $(STAMP)

run: setup
	$(VENV)/bin/kafka-rebalance lab --out lab-out

# Four pytest workers on two cores: the tests spend much of their time waiting (on brokers, session
# timeouts, JVMs starting), and on two workers the cores were busy 43% of the suite's time (7 min
# 50 s; 5 min 51 s on four). mypy runs beside them; its verdict is printed and counted once they end.
test: setup
	$(VENV)/bin/ruff check src tests benchmarks
	@$(PY) -m mypy > .mypy.out 2>&1 & mypy=$$!; \
	$(PY) -m pytest -q -n 4 --dist loadfile --no-loadscope-reorder --durations=25; tests=$$?; \
	wait $$mypy; typed=$$?; cat .mypy.out; rm -f .mypy.out; \
	exit $$(( tests || typed ))

test-fast: setup
	$(PY) -m pytest -q -n 2 --dist loadfile --no-loadscope-reorder -m "$(FAST)" --durations=10

bench: setup
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) benchmarks/assignors.py

lint: setup
	$(VENV)/bin/ruff check src tests benchmarks
	$(PY) -m mypy
