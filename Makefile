# sitetools: every target installs what it needs into .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
CHROMIUM := /usr/lib/chromium/chromium
export SITETOOLS_CHROMIUM ?= $(CHROMIUM)

.PHONY: install run test lint fmt migrate bench mcp-conformance chromium clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Debian's Chromium for the Dashboard tests (Playwright cannot download browsers here).
chromium:
	@test -x $(CHROMIUM) || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q chromium; }

run: install
	$(BIN)/sitetools serve --demo

migrate: install
	$(BIN)/sitetools migrate

lint: install
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

fmt: install
	$(BIN)/ruff check --fix src tests bench
	$(BIN)/ruff format src tests bench

test: install chromium lint
	$(BIN)/pytest

# The MCP conformance suite (npx fetches it and Node 22) against a fresh service.
mcp-conformance: install
	cd bench && ../$(BIN)/python mcp_conformance.py

bench: install
	@command -v wrk >/dev/null || { \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -q && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q wrk; }
	$(BIN)/python bench/run.py
	cd bench && ../$(BIN)/python catalog.py
	cd bench && ../$(BIN)/python runs.py
	cd bench && ../$(BIN)/python browser.py
	cd bench && ../$(BIN)/python webhooks.py
	cd bench && ../$(BIN)/python mcp_calls.py

clean:
	rm -rf $(VENV) .sitetools .mypy_cache .ruff_cache
