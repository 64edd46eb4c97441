# Two commands do all the setup: `make run` and `make test` (see README).
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# `make run` opens a scratch copy of fixtures/birds (labelling writes its queries.toml,
# never the committed fixture's); `make run VAULT=path` opens that vault itself.
VAULT  ?=

.PHONY: run test setup test-cpu-seams help lint test-fast snapshots screenshots bench check-docs

# `make help` lists every target with the `## ` line beside it.
help:  ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## (.*)/  make \1\t\2/' | expand -t 24

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt "torch==2.13.0" -e ".[test,bench]"
	touch $(STAMP)

run: $(STAMP)  ## set up .venv/, open hql-tui on a scratch copy of fixtures/birds (VAULT=path: that vault)
ifeq ($(strip $(VAULT)),)
	@scratch=$$(mktemp -d -t hql-birds.XXXXXX) && cp -a fixtures/birds "$$scratch/birds" && \
	  echo "hql-tui on a scratch copy of fixtures/birds: $$scratch/birds" && \
	  $(BIN)/hql-tui "$$scratch/birds"
else
	$(BIN)/hql-tui $(VAULT)
endif

test: $(STAMP)  ## set up .venv/, then ruff, import contracts, mypy and the whole test suite (CI)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(BIN)/pytest -q

lint: $(STAMP)  ## ruff, mypy and the import contracts (docs/development.md)
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# No UI tests (tests/ui) and none marked `slow` (runs the packaged model): a quick loop.
test-fast: $(STAMP)  ## the tests without the UI ones or those marked slow
	$(BIN)/pytest -q --ignore=tests/ui -m "not slow"

# First compares, writing snapshot_report.html (gitignored: each changed picture, old beside
# new), then rewrites tests/ui/__snapshots__ from the current app. Review before committing.
snapshots: $(STAMP)  ## update the UI snapshots; snapshot_report.html shows what changed
	-$(BIN)/pytest -q tests/ui --snapshot-report snapshot_report.html
	$(BIN)/pytest -q tests/ui --snapshot-update
	@echo "review snapshot_report.html, then commit tests/ui/__snapshots__ with the reason"

screenshots: $(STAMP)  ## regenerate screenshots/*.svg from the snapshot tests' states
	$(BIN)/python scripts/screenshots.py

# The quick benchmarks: generated vaults of 1,000 and 10,000 cards, a few minutes. Reports
# go to benchmarks/out/ (gitignored); the committed ones in benchmarks/results/ are full runs.
bench: $(STAMP)  ## the quick benchmarks, into benchmarks/out/ (benchmarks/README.md)
	HQL_BENCH_OUT=benchmarks/out $(BIN)/python -m benchmarks.bench_vault --sizes 1000,10000
	HQL_BENCH_OUT=benchmarks/out $(BIN)/python -m benchmarks.bench_retrieval --sizes 10000
	HQL_BENCH_OUT=benchmarks/out $(BIN)/python -m benchmarks.bench_mcp --cards 1000

check-docs: $(STAMP)  ## every README/docs link resolves; `make run` reaches its first frame
	$(BIN)/python scripts/check_docs.py

# No test may depend on the host CPU except through a seam it sets: the whole suite,
# with the bf16 seam forced each way (plain `make test` reads the host's flags).
test-cpu-seams: $(STAMP)  ## the whole suite twice, the CPU bf16 seam forced off, then on
	HQL_SEMANTICS_TEST_CPU_BF16=0 $(BIN)/pytest -q
	HQL_SEMANTICS_TEST_CPU_BF16=1 $(BIN)/pytest -q
