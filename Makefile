# The two commands a new user needs: `make up` runs the stack, `make test` runs the tests.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin

.PHONY: install up test lint typecheck unit bench clean browser

$(BIN)/.installed: pyproject.toml constraints.txt
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "spreadbus needs Python >= 3.11"'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev]'
	touch $@

install: $(BIN)/.installed

up: install
	$(BIN)/spreadbus up

lint: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports

typecheck: install
	$(BIN)/mypy

unit: install
	$(BIN)/pytest -q -n 2 -m "not e2e"

# Chromium for the audit browser test, where apt can install it; without it that test skips.
browser:
	-@command -v chromium >/dev/null || { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
	  && apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; }

test: lint typecheck browser
	$(BIN)/pytest -q -n 2

bench: install
	$(BIN)/python -m bench $(ARGS)

clean:
	rm -rf $(VENV) .spreadbus .pytest_cache .mypy_cache .ruff_cache
