# The two commands a new user needs: `make up` runs the stack, `make test` runs the tests.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The image deploy/ runs, built from the Containerfile by podman (or CONTAINER_ENGINE=docker).
IMAGE  ?= ghcr.io/spreadbus/spreadbus:0.1.0
CONTAINER_ENGINE ?= podman

.PHONY: install up test lint typecheck unit bench image clean

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

test: lint typecheck
	$(BIN)/pytest -q -n 2

bench: install
	$(BIN)/python -m bench $(ARGS)

image:
	$(CONTAINER_ENGINE) build -f Containerfile -t $(IMAGE) .

clean:
	rm -rf $(VENV) .spreadbus .pytest_cache .mypy_cache .ruff_cache
