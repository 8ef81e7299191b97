"""sglang_router_workers against the real sglang-router 0.3.2: list, add, remove, check mode, errors."""

import threading

from router_helpers import free_port, http


def urls(result):
    return sorted(result["urls"])


def test_list_returns_the_boot_workers(router, upstreams, module):
    a, b = upstreams(2)
    with router([a.url, b.url]) as (url, _, _):
        rc, result = module(router_url=url, state="list")
    assert rc == 0, result
    assert result["changed"] is False
    assert urls(result) == sorted([a.url, b.url])
    assert all(worker["is_healthy"] for worker in result["workers"])
    assert "worker" not in result  # the listing module reports no single worker


def test_present_adds_once_and_the_router_then_uses_the_worker(router, upstreams, module):
    a, b = upstreams(2)
    with router([a.url]) as (url, _, _):
        rc, first = module(router_url=url, worker_url=b.url + "/", state="present", timeout=15)
        assert rc == 0, first
        assert first["changed"] is True
        assert first["worker_url"] == b.url
        assert first["worker"]["url"] == b.url and first["worker"]["is_healthy"] is True
        assert urls(first) == sorted([a.url, b.url])

        rc, second = module(router_url=url, worker_url=b.url, state="present", timeout=15)
        assert rc == 0, second
        assert second["changed"] is False
        # The trailing slash of the first call did not register a second entry for the same worker.
        assert urls(second) == sorted([a.url, b.url])

        for _ in range(10):
            assert http("POST", url + "/generate", body={"text": "hi"})[0] == 200
    assert b.generated() == 5 and a.generated() == 5  # round_robin over both


def test_absent_removes_and_no_new_request_reaches_the_worker(router, upstreams, module):
    a, b = upstreams(2)
    with router([a.url, b.url]) as (url, _, _):
        for _ in range(4):
            assert http("POST", url + "/generate", body={"text": "hi"})[0] == 200
        assert a.generated() == 2 and b.generated() == 2  # both served before the removal

        rc, result = module(router_url=url, worker_url=b.url, state="absent", timeout=15)
        assert rc == 0, result
        assert result["changed"] is True
        assert urls(result) == [a.url]
        assert result["worker"] is None

        for _ in range(20):
            status, body = http("POST", url + "/generate", body={"text": "hi"})
            assert status == 200 and body["text"] == a.name
        assert b.generated() == 2 and a.generated() == 22

        rc, again = module(router_url=url, worker_url=b.url, state="absent", timeout=15)
        assert rc == 0, again
        assert again["changed"] is False


def test_a_request_in_flight_when_its_worker_is_removed_still_gets_its_answer(router, upstreams, module):
    slow, = upstreams(1, delay=2.0)
    with router([slow.url]) as (url, _, _):
        answer = {}
        thread = threading.Thread(target=lambda: answer.update(r=http("POST", url + "/generate", body={"t": 1})))
        thread.start()
        while slow.generated() == 0:  # the request reached the worker
            threading.Event().wait(0.05)
        rc, result = module(router_url=url, worker_url=slow.url, state="absent", timeout=15)
        assert rc == 0 and result["changed"] is True and result["urls"] == [], result
        thread.join(10)
    assert answer["r"] == (200, {"text": slow.name, "meta_info": {}})


def test_check_mode_reports_and_changes_nothing(router, upstreams, module):
    a, b = upstreams(2)
    with router([a.url]) as (url, _, _):
        rc, add = module(check_mode=True, router_url=url, worker_url=b.url, state="present")
        assert rc == 0 and add["changed"] is True, add
        rc, remove = module(check_mode=True, router_url=url, worker_url=a.url, state="absent")
        assert rc == 0 and remove["changed"] is True, remove
        rc, listed = module(router_url=url, state="list")
    assert urls(listed) == [a.url]
    assert b.calls[("GET", "/health")] == 0  # the router never heard of b


def test_the_worker_key_goes_with_the_worker_and_the_admin_key_guards_the_api(router, upstreams, module, tmp_path):
    a, b = upstreams(2, key="worker-secret")
    admin_file = tmp_path / "admin"
    admin_file.write_text("admin-secret\n")
    with router([a.url], api_key="worker-secret", admin_key="admin-secret") as (url, _, _):
        rc, refused = module(router_url=url, state="list", admin_api_key="wrong")
        assert rc == 1 and "HTTP 401" in refused["msg"] and "admin_api_key" in refused["msg"], refused
        rc, added = module(router_url=url, worker_url=b.url, admin_api_key_file=str(admin_file),
                           worker_api_key="worker-secret", timeout=15)
        assert rc == 0 and added["changed"] is True, added
        for _ in range(4):
            assert http("POST", url + "/generate", key="worker-secret", body={"text": "hi"})[0] == 200
    assert b.generated() == 2
    assert b.auth["Bearer worker-secret"] >= 2 and b.auth.get("Bearer admin-secret", 0) == 0
    assert "secret" not in str(added)


def test_a_worker_that_never_answers_fails_within_the_timeout(router, upstreams, module):
    a, = upstreams(1)
    with router([a.url]) as (url, _, _):
        dead = "http://127.0.0.1:%d" % free_port()
        rc, result = module(router_url=url, worker_url=dead, state="present", timeout=3)
    assert rc == 1
    assert dead in result["msg"] and "after 3 s" in result["msg"] and "health check" in result["msg"], result


def test_a_bad_router_url_is_a_clear_error(module):
    closed = "http://127.0.0.1:%d" % free_port()
    rc, result = module(router_url=closed, state="list", request_timeout=3)
    assert rc == 1
    assert "cannot reach the router at " + closed in result["msg"] and "router_url" in result["msg"], result
    rc, result = module(router_url="127.0.0.1:30000", state="list")
    assert rc == 1 and "router_url='127.0.0.1:30000' is not a URL" in result["msg"], result
    rc, result = module(router_url=closed, state="absent")
    assert rc == 1 and "state=absent needs worker_url" in result["msg"], result


def test_something_that_is_not_the_router_is_named(upstreams, module):
    a, = upstreams(1)  # answers 404 on /workers
    rc, result = module(router_url=a.url, state="list")
    assert rc == 1 and "not the admin API of sglang-router 0.3.x" in result["msg"], result
