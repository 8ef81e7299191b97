# sglang-longctx: `make plan` prints the KV-pool plan for the inventory; `make test` runs every check
# (lint, pytest, then every molecule scenario on a Docker engine the harness starts when none runs).
VENV ?= .venv
PYTHON ?= python3
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
export ANSIBLE_CONFIG := $(abspath ansible.cfg)

.PHONY: venv plan demo demo-clean lint unit molecule test clean

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

venv: $(VENV)/.installed

plan: venv
	ansible-playbook playbooks/plan.yml $(if $(HOSTS),-l $(HOSTS))

demo: venv
	molecule/harness/demo.sh

demo-clean: venv
	molecule destroy -s default

lint: venv
	ruff check .
	yamllint --strict .
	ansible-lint --profile production

unit: venv
	pytest

molecule: venv
	molecule/harness/run.sh $(SCENARIOS)

test: lint unit molecule

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .cache
