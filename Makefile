# Two commands matter: `make demo` and `make test`. Everything else is a helper.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test lint typecheck unit catalog-test eval docs clean venv bench bytecode

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[fast,zstd,service,dev]'
	touch $(STAMP)

# Byte-code for the editable install: where PYTHONDONTWRITEBYTECODE is set, every run would
# otherwise compile the modules it imports (a third of a small diagnosis's time).
bytecode: $(STAMP)
	@$(BIN)/python -m compileall -q src/denpex

venv: $(STAMP) bytecode

# Build the environment, then diagnose the bundled sample job (exit 1 = failure found, as expected).
demo: venv
	@echo "== denpex diagnose examples/demo-job (4 ranks, 1 node's kernel log)"
	@$(BIN)/denpex diagnose examples/demo-job --format text; rc=$$?; [ $$rc -le 1 ]
	@echo "== the same incident as JSON: .venv/bin/denpex diagnose examples/demo-job --format json"

test: venv lint typecheck catalog-test unit

lint:
	$(BIN)/ruff check src tests tools

typecheck:
	$(BIN)/mypy

catalog-test:
	$(BIN)/denpex signatures test

# pytest-xdist: one worker per core (CI has two); the corpus-wide tests are most of the time.
# The wrapper's process-and-signal tests share one xdist worker (tests/wrapper/conftest.py).
unit:
	$(BIN)/pytest -q -n auto --dist loadgroup

eval: venv
	$(BIN)/python tools/eval_corpus.py tests/corpus

# Benchmarks (not part of make test): scanning vs ripgrep/grep, and the run wrapper vs script.
BENCH_SIZE ?= 1GiB
bench: venv
	$(BIN)/python tools/bench_scan.py --size $(BENCH_SIZE)
	$(BIN)/python tools/bench_wrapper.py --mb 200 --repeat 3
	$(BIN)/python tools/bench_masking.py

docs: venv
	$(BIN)/python tools/gen_signature_docs.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache .mypy_cache .ruff_cache
