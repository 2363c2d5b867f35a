# Two commands matter: `make run` (try it) and `make test` (everything CI runs).
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
export PYTHON VENV

.PHONY: venv run test bench lint sandbox-runtime

venv:
	@scripts/bootstrap-venv.sh

run: venv
	scripts/run.sh

test: venv
	scripts/test-services.sh $(PY) -m pytest $(PYTEST_ARGS)

bench: venv
	@found=0; for script in bench/*.py; do \
		[ -e "$$script" ] || continue; found=1; echo "== $$script"; $(PY) "$$script" || exit 1; \
	done; [ $$found = 1 ] || echo "no bench/*.py scripts"

lint: venv
	$(PY) -m ruff check .

# The repro sandbox's runtime (CPU torch + transformers/accelerate/trl/peft) in /opt/triage-sandbox.
sandbox-runtime:
	scripts/sandbox-runtime.sh
