# sglang-longctx: `make plan` prints the KV-pool plan for the inventory; `make test` runs every check
# (lint, pytest, then every molecule scenario on a Docker engine the harness starts when none runs).
VENV ?= .venv
PYTHON ?= python3
BIN := $(abspath $(VENV))/bin
export PATH := $(BIN):$(PATH)
export ANSIBLE_CONFIG := $(abspath ansible.cfg)

.PHONY: venv plan demo demo-plan demo-rollback demo-upgrade-fails demo-clean lint collection sanity chromium prometheus unit core-next molecule test clean

$(VENV)/.installed: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

venv: $(VENV)/.installed

# The plan for every inventory host (HOSTS=ct200 for one), and its picture in reports/plan/<host>.png. Role
# variables given to make are passed on: `make plan sglang_context_target=250000` (also with make's -e).
ROLE_VARS := $(foreach v,$(filter sglang_% nvidia_driver_% cuda_% preflight_%,$(MAKEOVERRIDES)),-e '$(v)')
plan: venv
	$(BIN)/ansible-playbook playbooks/plan.yml $(if $(HOSTS),-l $(HOSTS)) $(ROLE_VARS)
	@echo "pictures: $(abspath reports/plan)/"

# The demo (see molecule/harness/demo.sh): as root it installs Debian packages and may start a dockerd.
demo: venv
	molecule/harness/demo.sh

# The demo host's own plan (connects to nothing) and rollback (ARGS='-e sglang_rollback_list=true' lists).
demo-plan: venv
	molecule/harness/demo.sh plan $(ARGS)

demo-rollback: venv
	molecule/harness/demo.sh rollback $(ARGS)

# After `make demo`: an upgrade (SGLang 0.5.22+double) whose proof fails, and the last proven state put back.
demo-upgrade-fails: venv
	molecule/harness/demo.sh upgrade-fails $(ARGS)

demo-clean: venv
	molecule destroy -s default

lint: venv
	ruff check .
	yamllint --strict .
	ansible-lint --profile production

# The collection sglang.longctx (galaxy.yml): the roles, modules, module_utils, filters, callbacks and lib/ under a
# collection's paths, built into .cache/collection/sglang-longctx-<version>.tar.gz (tests/collection/build.sh says
# what differs from the checkout; tests/collection/ installs and runs it).
collection: venv
	tests/collection/build.sh

# ansible-core's own sanity suite (ansible-test) over that collection, installed from its tarball under
# .cache/sanity/ (tests/sanity/run.sh); its first run installs ansible-test's pinned checkers (pylint,
# pycodestyle, ...) from the package index into its own virtual environments there, not into .venv.
sanity: venv
	tests/sanity/run.sh --requirements

# The report's browser test (tests/unit/test_report_browser.py) needs Debian's chromium: installed here when
# missing, as root (apt-get, without recommends; ~20 s and 26 packages with a close mirror).
chromium:
	tests/browser/install_chromium.sh

# The scrape and rule tests (tests/integration/test_prometheus_*.py) need Debian's prometheus (and promtool):
# installed here when missing, as root (apt-get, without recommends; its own service kept from starting).
prometheus:
	tests/integration/install_prometheus.sh

# Two workers (the machines this runs on have 2 cores); a file's tests stay together (shared servers, ports).
# Every benchmark runs here once in a cheap form, and once failing (tests/unit/test_benchmarks_{cheap,fail_loudly}.py:
# about 30 s of the two workers' wall time), so a change of the inventory layout cannot break one unseen.
PYTEST_WORKERS ?= 2
unit: venv chromium prometheus
	pytest -n $(PYTEST_WORKERS) --dist loadfile

molecule: venv
	molecule/harness/run.sh $(SCENARIOS)

# The tests that run Ansible (playbooks, modules, filters, callbacks, the collection) on the newest ansible-core line,
# 2.21 (Python 3.12+), in a Debian 13 container (tests/core_next/run.sh; the harness's image and Docker engine).
core-next: venv
	tests/core_next/run.sh

# Everything, in three strands that run together, so the whole takes about the longest scenario's time rather than
# the sum (docs/testing.md has the figures, 2 cores): the scenarios, five at a time (molecule/harness/run.sh, the
# longest first, real_server in the fifth lane and gpu_host after it); the checks that need no instance, one after
# the other; and the real SGLang contract (real-contract), started as soon as the real_server scenario has ended
# (its instance, with its own ~10 GiB runtime, is gone by then: the two never share the disk), or after the
# scenarios when real_server is not among them. Each part prints its seconds and the second of make test it ended
# at; the scenarios' summary and the real contract's output come last. The harness is prepared first: core-next
# uses its Docker engine and image, and its apt-get must not race chromium's.
CHECKS := lint collection sanity unit core-next
VERDICTS := .cache/molecule/logs
test: venv chromium prometheus
	molecule/harness/prepare.sh
	@t0=$$(date +%s); since() { echo "at $$(( $$(date +%s) - t0 )) s"; }; rm -f $(VERDICTS)/*.verdict; \
	MOLECULE_LANES=$${MOLECULE_LANES:-5} molecule/harness/run.sh $(SCENARIOS) >.cache/molecule/lanes.out 2>&1 & \
	lanes=$$!; \
	{ while [ ! -f $(VERDICTS)/real_server.verdict ] && kill -0 $$lanes 2>/dev/null; do sleep 5; done; \
	  began=$$(date +%s); echo "[test] real-contract began $$(since)"; \
	  $(MAKE) --no-print-directory real-contract; rc=$$?; [ $$rc -eq 0 ] || echo "[test] real-contract FAILED"; \
	  echo "[test] real-contract: $$(( $$(date +%s) - began )) s, ended $$(since)"; exit $$rc; \
	} >.cache/real-contract.out 2>&1 & \
	contract=$$!; checks=0; \
	for part in $(CHECKS); do \
	  began=$$(date +%s); $(MAKE) --no-print-directory $$part || { checks=1; echo "[test] $$part FAILED"; break; }; \
	  echo "[test] $$part: $$(( $$(date +%s) - began )) s, ended $$(since)"; \
	done; \
	wait $$lanes; scenarios=$$?; cat .cache/molecule/lanes.out; echo "[test] scenarios ended $$(since)"; \
	wait $$contract; real=$$?; cat .cache/real-contract.out; \
	[ $$checks -eq 0 ] && [ $$scenarios -eq 0 ] && [ $$real -eq 0 ]

# Every SGLang release of the planner's table checked against its own wheel: the flag tables, the pool rules and
# the architectures with their pool class (tests/contract/extract_flags.py, extract_rules.py,
# extract_architectures.py); the wheels download once into .cache/sglang-wheels.
.PHONY: releases
releases: venv
	SGLANG_RELEASES=all pytest -q tests/contract/test_release_flags.py tests/contract/test_release_rules.py \
	  tests/contract/test_release_architectures.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache .cache

# The planner against the REAL SGLang resolver of 0.5.23 and 0.5.15 (tests/contract/real/): each release installed
# once with uv into .cache/sglang-real/ (about 1-2 min and 9-10 GiB each from PyPI, reused after), a stub libcuda and
# faked device queries, then every case resolved by the release's own code (about 2 min for both on 2 cores);
# rewrites tests/fixtures/sglang_real/resolver-<version>.json, which `make unit` checks.
.PHONY: real-resolver
real-resolver: venv
	SGLANG_REAL=1 pytest -q tests/contract/real

# make test's part: every case put to both real releases again (SGLANG_REAL_FRESH), the answers written outside the
# tree and the double held to them (tests/sglang_double/test_double_real_resolver.py); then the real 0.5.23 server
# booted again under the role's launcher with the proof run against it (serve_real.py), and the journal reader, the
# proof and the double held to that fresh recording (test_stored_real_server.py). make test starts it once the
# real_server scenario has ended (that instance's runtime and these installs never share the disk); then the installs
# and their uv cache removed (~18 GiB; a new install takes about a minute from PyPI). Each half prints its seconds.
REAL_OUT := $(CURDIR)/.cache/sglang-real/answers
.PHONY: real-contract
real-contract: venv
	rm -rf $(REAL_OUT) && mkdir -p $(REAL_OUT)
	began=$$(date +%s); SGLANG_REAL=1 SGLANG_REAL_FRESH=1 SGLANG_REAL_OUT=$(REAL_OUT) \
	  pytest -q tests/contract/real/test_real_resolver.py \
	  && SGLANG_REAL_OUT=$(REAL_OUT) pytest -q tests/sglang_double/test_double_real_resolver.py \
	  && echo "[test] real-contract, the resolver: $$(( $$(date +%s) - began )) s" \
	  && began=$$(date +%s) && SGLANG_REAL_OUT=$(REAL_OUT) PYTHONPATH=tests/module_utils_path \
	    $(BIN)/python tests/contract/real/serve_real.py 0.5.23 \
	  && SGLANG_REAL_OUT=$(REAL_OUT) pytest -q tests/contract/real/test_stored_real_server.py \
	  && echo "[test] real-contract, the server: $$(( $$(date +%s) - began )) s"; \
	  rc=$$?; rm -rf .cache/sglang-real/0.5.* .cache/sglang-real/server-* .cache/sglang-real/uv-cache; exit $$rc

# The REAL SGLang 0.5.23 server booted on this CPU under the role's launcher, with the --config key and the planned
# pin, its endpoints and the proof module recorded into tests/fixtures/sglang_real/server-<version>/ (serve_real.py;
# 4-12 min to ready on 2 cores); test_stored_real_server.py holds the journal reader, the proof and the double to it.
.PHONY: real-server
real-server: venv
	tests/contract/real/setup_real.sh 0.5.23
	PYTHONPATH=tests/module_utils_path $(BIN)/python tests/contract/real/serve_real.py 0.5.23
