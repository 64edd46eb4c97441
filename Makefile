# Two commands do all the setup: `make run` and `make test` (see README).
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# `make run` opens a scratch copy of fixtures/birds (labelling writes its queries.toml,
# never the committed fixture's); `make run VAULT=path` opens that vault itself.
VAULT  ?=

.PHONY: run test setup test-cpu-seams

setup: $(STAMP)

$(STAMP): pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -c constraints.txt "torch==2.13.0" -e ".[test,bench]"
	@# The local model's ONNX graph, made and checked now so the first live query needs
	@# no torch (docs/runtime.md); if it fails its check, torch runs the model instead.
	-$(BIN)/hql-semantics runtime
	touch $(STAMP)

run: $(STAMP)
ifeq ($(strip $(VAULT)),)
	@scratch=$$(mktemp -d -t hql-birds.XXXXXX) && cp -a fixtures/birds "$$scratch/birds" && \
	  echo "hql-tui on a scratch copy of fixtures/birds: $$scratch/birds" && \
	  $(BIN)/hql-tui "$$scratch/birds"
else
	$(BIN)/hql-tui $(VAULT)
endif

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/pytest -q

# No test may depend on the host CPU except through a seam it sets: the whole suite,
# with the bf16 seam forced each way (plain `make test` reads the host's flags).
test-cpu-seams: $(STAMP)
	HQL_SEMANTICS_TEST_CPU_BF16=0 $(BIN)/pytest -q
	HQL_SEMANTICS_TEST_CPU_BF16=1 $(BIN)/pytest -q
