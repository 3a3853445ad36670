# The two commands a new user needs: `make up` runs the stack, `make test` runs the tests.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
# The image deploy/ runs, built from the Containerfile by podman (or CONTAINER_ENGINE=docker).
IMAGE  ?= ghcr.io/spreadbus/spreadbus:0.1.0
CONTAINER_ENGINE ?= podman

.PHONY: install up test lint typecheck unit chaos bench image clean browser

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

# Chromium for the audit browser tests, where apt can install it. Without it those tests skip on
# a developer's machine; under CI=true a missing Chromium stops here, and the tests fail too.
browser:
	@command -v chromium >/dev/null || { command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ] \
	  && apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq chromium >/dev/null 2>&1; } \
	  || [ "$${CI:-}" != true ] \
	  || { echo "make browser: CI=true needs Chromium for the browser tests, and apt could not install it" >&2; exit 1; }

test: lint typecheck browser
	$(BIN)/pytest -q -n 3 -m "not chaos_only"

# The fault tests: kill -9 of the services, the webhook and nats-server at seeded random moments
# on the local stack. `make chaos SEED=n` replays one schedule (each test prints its seed).
SEED          ?=
CHAOS_TIMEOUT ?= 900
chaos: install
	SPREADBUS_FAULT_SEED=$(SEED) $(BIN)/pytest -q -rxX -p no:randomly -m chaos \
		--timeout=$(CHAOS_TIMEOUT) -s tests

bench: install
	$(BIN)/python -m bench $(ARGS)

image:
	$(CONTAINER_ENGINE) build -f Containerfile -t $(IMAGE) .

clean:
	rm -rf $(VENV) .spreadbus .pytest_cache .mypy_cache .ruff_cache
