# Two commands matter: `make run` (try it) and `make test` (the whole test suite). CI (.ci/run) runs
# `make test`, then `make accuracy` (the engine scored on an outside corpus of labelled crash logs).
PYTHON ?= python3.11
VENV ?= .venv
PY := $(VENV)/bin/python
PYTEST_ARGS ?=
# `make accuracy`: the labelled corpus, the naive baseline printed beside the engine (when present),
# and the checker that no labelled case in tests/ comes from a thread reserved for held-out scoring.
CORPUS ?= ../shared/corpus
BASELINE ?= ../shared/tools/naive_baseline
RESERVED ?= ../shared/tools/reserved.py
export PYTHON VENV

.PHONY: venv run test accuracy bench lint sandbox-runtime

venv:
	@scripts/bootstrap-venv.sh

run: venv
	scripts/run.sh

test: venv
	scripts/test-services.sh $(PY) -m pytest $(PYTEST_ARGS)

accuracy: venv
	@[ -d "$(CORPUS)" ] || { echo "make accuracy: no corpus at $(CORPUS): set CORPUS=/path/to/labelled/cases" >&2; exit 2; }
	@[ -f "$(RESERVED)" ] || { echo "make accuracy: no reserved-thread checker at $(RESERVED): set RESERVED=/path/to/reserved.py" >&2; exit 2; }
	$(PY) "$(RESERVED)" --corpus tests/
	$(PY) bench/accuracy.py --corpus "$(CORPUS)" $$([ -d "$(BASELINE)" ] && echo --floor "$(BASELINE)")

bench: venv
	@found=0; for script in bench/*.py; do \
		[ -e "$$script" ] || continue; found=1; echo "== $$script"; $(PY) "$$script" || exit 1; \
	done; [ $$found = 1 ] || echo "no bench/*.py scripts"

lint: venv
	$(PY) -m ruff check .

# Every page at 1440x900 and 390x844 into docs/screenshots/ (a throw-away instance, real Chromium).
.PHONY: screenshots
screenshots: venv
	$(PY) scripts/screenshots.py

# The repro sandbox's runtime (CPU torch + transformers/accelerate/trl/peft) in /opt/triage-sandbox.
sandbox-runtime:
	scripts/sandbox-runtime.sh
