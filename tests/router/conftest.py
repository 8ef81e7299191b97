"""Fixtures for the router tests: upstreams, the real router, the module (router_helpers.py holds the how)."""

import pytest
from router_helpers import Upstream, run_module, running_router


@pytest.fixture
def upstreams():
    """upstreams(n, key='', delay=0) -> n running Upstreams, closed after the test."""
    made = []

    def make(count, key="", delay=0.0):
        new = [Upstream("U%d" % (len(made) + i), key, delay) for i in range(count)]
        made.extend(new)
        return new

    yield make
    for upstream in made:
        upstream.close()


@pytest.fixture
def router():
    return running_router


@pytest.fixture
def module(tmp_path):
    return lambda check_mode=False, **args: run_module(tmp_path, check_mode, **args)
