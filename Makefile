# Two commands on a fresh machine: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck layers unit e2e bench fuzz clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	touch $(STAMP)

# Extra server flags: make run RUN_ARGS="--pool-status-create-rate 2"
RUN_ARGS ?=

run: $(STAMP)
	$(PY) -m apiserver serve --bind-address 127.0.0.1 --secure-port 6443 \
		--storage sqlite:///data/apiserver.db --cert-dir certs --kubeconfig-out kubeconfig \
		$(RUN_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff format --check apiserver devtools tests bench certs examples
	$(VENV)/bin/ruff check apiserver devtools tests bench certs examples

typecheck: $(STAMP)
	$(VENV)/bin/mypy apiserver bench devtools

layers: $(STAMP)
	$(VENV)/bin/lint-imports --no-cache

test: lint typecheck layers
	$(VENV)/bin/pytest -q

bench: $(STAMP)
	$(PY) -m bench

# schemathesis over the OpenAPI documents of a server it starts; summary in bench/RESULTS.md
fuzz: $(STAMP)
	$(PY) -m bench.fuzz

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
