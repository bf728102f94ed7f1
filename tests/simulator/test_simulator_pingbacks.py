"""Pingbacks: GET and POST delivery, the faults that drop, duplicate, delay or reorder them,
and the deliveries the simulator refuses or fails to make."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from infra.simulator.pingback import is_loopback_url, url_with_result
from tests.simulator.simulator_helpers import SimulatorClient, wait_until


def deliveries_of(
    client: SimulatorClient, task_ids: list[str], count_each: int = 1
) -> dict[str, list[dict[str, Any]]]:
    """Waits until every task has `count_each` recorded delivery attempts, then returns them."""

    def recorded() -> dict[str, list[dict[str, Any]]] | None:
        tasks = [client.truth(task_id) for task_id in task_ids]
        if all(len(task["deliveries"]) >= count_each for task in tasks):
            return {task["id"]: task["deliveries"] for task in tasks}
        return None

    deliveries: dict[str, list[dict[str, Any]]] = wait_until(recorded)
    return deliveries


def test_get_pingback_appends_id_and_code_and_keeps_the_query(start_simulator, receiver):
    client = start_simulator(pingback_method="get")
    task_id = client.submit_id(pingback=receiver.url(query="tenant=acme&sig=a%2Fb"))

    [pingback] = receiver.wait_for(1)

    assert pingback.method == "GET"
    assert pingback.path == "/callback/s3cret"
    assert pingback.query == {
        "tenant": "acme",
        "sig": "a/b",
        "id": task_id,
        "code": client.truth(task_id)["code"],
    }
    # One copy was planned when the task finished (none duplicated): no second one can come.
    assert client.simulator.stats()["pingbacks"]["duplicated"] == 0
    assert len(receiver.received) == 1
    assert deliveries_of(client, [task_id])[task_id][0]["outcome"] == 200


def test_post_pingback_sends_a_form(start_simulator, receiver):
    client = start_simulator(pingback_method="post")
    task_id = client.submit_id(pingback=receiver.url(query="tenant=acme"))

    [pingback] = receiver.wait_for(1)

    assert pingback.method == "POST"
    assert pingback.content_type == "application/x-www-form-urlencoded"
    assert pingback.query == {"tenant": "acme"}
    assert pingback.form["id"] == task_id
    assert pingback.form["code"] == client.truth(task_id)["code"]
    assert float(pingback.form["rate"]) > 0


def test_failed_task_pingback_carries_the_error(start_simulator, receiver):
    client = start_simulator(unsolvable_rate=1.0)
    task_id = client.submit_id(pingback=receiver.url())

    [pingback] = receiver.wait_for(1)

    assert pingback.query == {"id": task_id, "code": "ERROR_CAPTCHA_UNSOLVABLE"}


def test_mixed_method_picks_get_or_post_per_task(start_simulator, receiver):
    client = start_simulator(pingback_method="mixed")
    task_ids = [client.submit_id(pingback=receiver.url()) for _ in range(10)]

    received = receiver.wait_for(10)

    method_by_id = {p.query.get("id") or p.form["id"]: p.method.lower() for p in received}
    assert set(method_by_id) == set(task_ids)
    assert set(method_by_id.values()) == {"get", "post"}
    for task_id in task_ids:
        assert client.truth(task_id)["pingback_method"] == method_by_id[task_id]


def test_task_without_pingback_url_gets_no_delivery(start_simulator):
    client = start_simulator()
    task_id = client.submit_id()
    client.wait_for_result(task_id)

    # Nothing was planned for it: a task without a URL never enters the pingback timeline.
    assert client.truth(task_id)["deliveries"] == []
    assert client.simulator.stats()["pingbacks"]["sent"] == 0


def test_dropped_pingbacks_are_never_sent(start_simulator, receiver):
    client = start_simulator(faults={"pingback_drop_rate": 1.0})
    task_ids = [client.submit_id(pingback=receiver.url()) for _ in range(3)]

    deliveries = deliveries_of(client, task_ids)

    # A drop is decided when the task finishes, instead of planning a send: none can come.
    assert all([d["outcome"] for d in deliveries[i]] == ["dropped"] for i in task_ids)
    assert receiver.received == []
    stats = client.simulator.stats()["pingbacks"]
    assert (stats["dropped"], stats["sent"]) == (3, 0)


def test_duplicated_pingbacks_arrive_twice(start_simulator, receiver):
    client = start_simulator(faults={"pingback_duplicate_rate": 1.0})
    task_ids = [client.submit_id(pingback=receiver.url()) for _ in range(3)]

    received = receiver.wait_for(6)
    deliveries_of(client, task_ids, count_each=2)

    assert sorted(p.query["id"] for p in received) == sorted(task_ids * 2)
    stats = client.simulator.stats()["pingbacks"]
    assert (stats["duplicated"], stats["sent"], stats["delivered"]) == (3, 6, 6)


def test_delayed_pingbacks_arrive_after_the_delay(start_simulator, receiver):
    client = start_simulator(faults={"pingback_delay": [300, 300]})
    task_id = client.submit_id(pingback=receiver.url())

    [pingback] = receiver.wait_for(1)

    assert pingback.received_at - client.truth(task_id)["finished_at"] >= 0.29


def test_reorder_window_holds_pingbacks_and_shuffles_them(start_simulator, receiver):
    client = start_simulator(
        solve_time={"kind": "uniform", "min_seconds": 10, "max_seconds": 300},
        pingback_workers=1,
        faults={"pingback_reorder_window": 500},
    )
    task_ids = [client.submit_id(pingback=receiver.url()) for _ in range(8)]

    received = receiver.wait_for(8)

    tasks = [client.truth(task_id) for task_id in task_ids]
    finish_order = [t["id"] for t in sorted(tasks, key=lambda task: task["finished_at"])]
    arrival_order = [p.query["id"] for p in received]
    assert sorted(arrival_order) == sorted(finish_order)
    assert arrival_order != finish_order
    first_finish = min(task["finished_at"] for task in tasks)
    assert min(p.received_at for p in received) >= first_finish + 0.49


def test_faults_changed_at_runtime_apply_to_later_finishes(start_simulator, receiver):
    client = start_simulator(faults={"pingback_drop_rate": 1.0})
    dropped_id = client.submit_id(pingback=receiver.url())
    deliveries_of(client, [dropped_id])

    client.simulator.update_faults({"pingback_drop_rate": 0})
    sent_id = client.submit_id(pingback=receiver.url())

    assert [p.query["id"] for p in receiver.wait_for(1)] == [sent_id]


@pytest.mark.parametrize(
    "url",
    ["http://192.0.2.10/callback/s3cret", "https://example.com/callback/s3cret?x=1"],
)
def test_pingbacks_to_other_hosts_are_refused(start_simulator, url):
    client = start_simulator()
    task_id = client.submit_id(pingback=url)

    deliveries = deliveries_of(client, [task_id])

    assert [d["outcome"] for d in deliveries[task_id]] == ["refused_non_loopback"]
    stats = client.simulator.stats()["pingbacks"]
    assert (stats["refused_non_loopback"], stats["sent"]) == (1, 0)


@pytest.mark.parametrize(
    ("url", "loopback"),
    [
        ("http://127.0.0.1:8080/cb", True),
        ("http://127.9.9.9/cb", True),
        ("http://localhost:3000/cb?a=1", True),
        ("http://[::1]:3000/cb", True),
        ("http://10.0.0.1/cb", False),
        ("http://127.0.0.1.nip.io/cb", False),
        ("http://evil.example/@127.0.0.1/cb", False),
        ("http://127.0.0.1@evil.example/cb", False),
        ("ftp://127.0.0.1/cb", False),
        ("not a url", False),
    ],
)
def test_loopback_check(url, loopback):
    assert is_loopback_url(url) is loopback


def test_result_is_appended_to_the_query_without_touching_it():
    url = url_with_result("http://127.0.0.1/cb/s?a=%2F&b=&c=1", "71234567890", "03Aab-_")

    assert url == "http://127.0.0.1/cb/s?a=%2F&b=&c=1&id=71234567890&code=03Aab-_"


def test_failed_deliveries_are_recorded_and_not_retried(start_simulator, receiver):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        closed_port = closed.getsockname()[1]
    receiver.status = 503
    client = start_simulator()
    unavailable_id = client.submit_id(pingback=receiver.url())
    refused_id = client.submit_id(pingback=f"http://127.0.0.1:{closed_port}/cb")

    deliveries = deliveries_of(client, [unavailable_id, refused_id])
    # Each task's sends were planned when it finished: one copy, no duplicate, no retry.
    assert client.simulator.stats()["pingbacks"]["duplicated"] == 0

    assert [d["outcome"] for d in deliveries[unavailable_id]] == [503]
    assert [d["outcome"] for d in deliveries[refused_id]] == ["refused"]
    assert len(receiver.received) == 1
    stats = client.simulator.stats()["pingbacks"]
    assert (stats["sent"], stats["failed"], stats["delivered"]) == (2, 2, 0)


def test_slow_receiver_times_out(start_simulator, receiver):
    receiver.delay_seconds = 0.5
    client = start_simulator(pingback_timeout_seconds=0.1)
    task_id = client.submit_id(pingback=receiver.url())

    deliveries = deliveries_of(client, [task_id])

    assert [d["outcome"] for d in deliveries[task_id]] == ["timeout"]
