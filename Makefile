# Two commands do all the setup: `make run` and `make test` (see README).
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
VAULT  ?= fixtures/birds

.PHONY: run test setup

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt "torch==2.13.0" -e ".[test,bench]"
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/hql-tui $(VAULT)

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/pytest -q
