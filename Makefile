# sglang-longctx: `make plan` prints the KV-pool plan for the inventory; `make test` runs every check.
VENV ?= .venv
PYTHON ?= python3
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
export ANSIBLE_CONFIG := $(abspath ansible.cfg)

.PHONY: venv plan lint unit test clean

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

venv: $(VENV)/.installed

plan: venv
	ansible-playbook playbooks/plan.yml $(if $(HOSTS),-l $(HOSTS))

lint: venv
	ruff check .
	yamllint --strict .
	ansible-lint --profile production

unit: venv
	pytest

test: lint unit

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
