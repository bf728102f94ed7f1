"""Control endpoints, res.php faults, statistics, lifecycle, configuration and the CLI."""

from __future__ import annotations

import json
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests

from infra.simulator import ConfigError, Faults, Simulator, SimulatorConfig
from tests.simulator.simulator_helpers import FAST_CONFIG, local_session, wait_until

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]


def test_res_5xx_fault_set_over_http_and_cleared_from_python(start_simulator):
    client = start_simulator()
    task_id = client.submit_id()

    changed = client.session.post(f"{client.base_url}/_sim/faults", json={"res_5xx_rate": 1})
    failing = [client.res(action="get", id=task_id).status_code for _ in range(6)]
    client.simulator.update_faults(res_5xx_rate=0)
    healthy = client.res(action="get", id=task_id)

    assert changed.status_code == 200
    assert changed.json()["res_5xx_rate"] == 1.0
    assert set(failing) <= {500, 502, 503}
    assert healthy.status_code == 200
    stats = client.simulator.stats()["res"]
    assert (stats["injected_5xx"], stats["requests"]) == (6, 7)


def test_res_slow_fault_delays_the_answer(start_simulator):
    client = start_simulator(faults={"res_slow_rate": 1.0, "res_slow_seconds": 0.3})

    started = time.monotonic()
    answer = client.res_json(action="getbalance")

    assert time.monotonic() - started >= 0.3
    assert answer["status"] == 1


def test_a_caller_gone_before_a_slow_answer_leaves_no_error_behind(start_simulator, capfd):
    # Given a slow res.php, and a caller whose read timeout is shorter than the delay
    client = start_simulator(faults={"res_slow_rate": 1.0, "res_slow_seconds": 0.5})
    with pytest.raises(requests.Timeout):
        client.session.get(
            f"{client.base_url}/res.php", params={"action": "getbalance"}, timeout=0.1
        )
    # When the simulator answers after the caller has gone
    time.sleep(0.8)
    client.simulator.stop()
    # Then nothing is printed: a caller's timeout is part of the fault, not the simulator's error
    assert "Traceback" not in capfd.readouterr().err


def test_faults_endpoint_rejects_bad_changes_and_keeps_the_old_set(start_simulator):
    client = start_simulator(faults={"pingback_drop_rate": 0.25})
    url = f"{client.base_url}/_sim/faults"

    not_json = client.session.post(url, data=b"{nope", timeout=5)
    unknown = client.session.post(url, json={"pingback_lose_rate": 1}, timeout=5)
    out_of_range = client.session.post(url, json={"res_5xx_rate": 2}, timeout=5)
    current = client.session.get(url, timeout=5).json()

    assert [r.status_code for r in (not_json, unknown, out_of_range)] == [400, 400, 400]
    assert "pingback_lose_rate" in unknown.json()["error"]
    assert current == Faults(pingback_drop_rate=0.25).to_json()


def test_tasks_and_stats_endpoints_tell_the_truth(start_simulator, receiver):
    client = start_simulator(ids_as_numbers=False)
    task_ids = [client.submit_id(pingback=receiver.url()) for _ in range(2)]
    client.submit(key="bad")
    wait_until(lambda: client.simulator.stats()["pingbacks"]["delivered"] == 2)
    client.res(action="get", id=task_ids[0])
    client.res(action="get", ids=",".join(task_ids))
    client.res(action="get", ids=",".join([*task_ids, task_ids[0]]))
    client.res(action="getbalance")
    client.res(action="threadsinfo")
    client.res(action="purge")

    tasks = client.session.get(f"{client.base_url}/_sim/tasks", timeout=5).json()
    stats = client.session.get(f"{client.base_url}/_sim/stats", timeout=5).json()

    assert [task["id"] for task in tasks] == task_ids
    first = tasks[0]
    assert first["method"] == "userrecaptcha"
    assert first["outcome"] == "solved"
    assert first["finished"] is True
    assert first["submitted_at"] < first["finished_at"] < first["retrievable_until"]
    assert first["pingback_url"] == receiver.url()
    assert [d["outcome"] for d in first["deliveries"]] == [200]
    assert stats["in"] == {"requests": 3, "accepted": 2, "rejected": 1}
    assert stats["in_errors"] == {"ERROR_WRONG_USER_KEY": 1}
    assert stats["res"]["requests"] == 6
    assert (stats["res"]["batch_requests"], stats["res"]["batch_ids"]) == (2, 5)
    assert stats["res_actions"] == {
        "get": 3,
        "getbalance": 1,
        "threadsinfo": 1,
        "reportbad": 0,
        "reportgood": 0,
        "other": 1,
    }
    assert stats["pingbacks"]["delivered"] == 2
    assert stats["plan"] == {"busy_refused": 0, "queued": 0, "rate_limited": 0}
    assert stats == client.simulator.stats()


def test_unknown_paths_are_not_found(start_simulator):
    client = start_simulator()

    for path in ("/", "/_sim/reset", "/in.php/x"):
        assert client.session.get(f"{client.base_url}{path}", timeout=5).status_code == 404


SLOW_ANSWER_SECONDS = 30


def test_stop_is_bounded_idempotent_and_leaves_no_threads():
    threads_before = set(threading.enumerate())
    simulator = Simulator(
        SimulatorConfig.from_mapping(
            {
                **FAST_CONFIG,
                "solve_time": {"kind": "uniform", "min_seconds": 0, "max_seconds": 60_000},
                "faults": {"res_slow_rate": 1.0, "res_slow_seconds": SLOW_ANSWER_SECONDS},
            }
        )
    )
    base_url = simulator.start()
    session = local_session()
    for _ in range(3):
        session.post(
            f"{base_url}/in.php",
            timeout=35,
            data={
                "key": simulator.api_key,
                "method": "userrecaptcha",
                "googlekey": "k",
                "pageurl": "https://shop.example",
                "pingback": "http://127.0.0.1:9/cb",
            },
        )
    slow_poll = threading.Thread(
        target=session.get, args=(f"{base_url}/res.php",), kwargs={"timeout": 35}
    )
    slow_poll.start()
    wait_until(lambda: simulator.stats()["res"]["injected_slow"] == 1)

    started = time.monotonic()
    simulator.stop()
    simulator.stop()
    slow_poll.join(SLOW_ANSWER_SECONDS)

    # The slow answer in flight did not hold the stop up.
    assert time.monotonic() - started < SLOW_ANSWER_SECONDS
    assert not slow_poll.is_alive()
    assert [t.name for t in set(threading.enumerate()) - threads_before] == []
    with pytest.raises(RuntimeError):
        simulator.start()


def test_simulator_can_be_stopped_before_it_starts():
    Simulator(SimulatorConfig(seed=1)).stop()


def test_context_manager_starts_and_stops():
    with Simulator(SimulatorConfig(seed=1)) as simulator:
        balance = local_session().get(
            f"{simulator.base_url}/res.php",
            params={"key": simulator.api_key, "action": "getbalance"},
            timeout=5,
        )
    assert balance.text == "10.0"


@pytest.mark.parametrize(
    "values",
    [
        {"host": "0.0.0.0"},
        {"host": "::1"},
        {"unsolvable_rate": 1.5},
        {"faults": {"pingback_drop_rate": "half"}},
        {"faults": {"pingback_delay": [5, 1]}},
        {"solve_time": {"kind": "gaussian"}},
        {"pingback_method": "put"},
        {"api_key": "short"},
        {"time_scale": 0},
        {"token_min_length": 5000},
        {"seed": True},
        {"retention": 10},
        {"dialect": "anticaptcha"},
        {"threads": 0},
        {"busy_answer": "wait"},
        {"requests_per_second": 0.5},
        {"extra_accounts": [{"threads": 0}]},
        {"extra_accounts": [{"api_key": "ab" * 16}], "api_key": "AB" * 16},
        {"faults": {"zero_balance_accounts": [-1]}},
    ],
)
def test_invalid_config_is_rejected(values):
    with pytest.raises(ConfigError):
        SimulatorConfig.from_mapping(values)


def test_config_accepts_json_values():
    config = SimulatorConfig.from_mapping(
        {
            "port": 8089,
            "api_key": "A" * 32,
            "faults": {"pingback_delay": 3, "zero_balance": True},
            "solve_time": {"kind": "uniform", "min_seconds": 1, "max_seconds": 2},
        }
    )

    assert config.faults.pingback_delay == (3.0, 3.0)
    assert config.faults.zero_balance is True
    assert config.solve_time.max_seconds == 2.0
    assert config.real_seconds(300) == 300.0


def start_cli(*arguments: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "infra.simulator", *arguments],
        cwd=REPOSITORY_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_cli_prints_one_ready_line_and_stops_on_sigterm(tmp_path):
    config_file = tmp_path / "simulator.json"
    config_file.write_text(json.dumps({"api_key": "ab" * 16, "balance": 3.25}))
    process = start_cli("--config", str(config_file), "--time-scale", "100", "--seed", "5")
    assert process.stdout is not None
    try:
        readable, _, _ = select.select([process.stdout], [], [], 10)
        assert readable, "the simulator did not get ready"
        ready = json.loads(process.stdout.readline())
        balance = local_session().get(
            f"{ready['base_url']}/res.php",
            params={"key": ready["api_key"], "action": "getbalance"},
            timeout=5,
        )
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=10) == 0
    finally:
        process.kill()
        process.communicate()

    assert ready["api_key"] == "ab" * 16
    assert ready["api_keys"] == ["ab" * 16]
    assert ready["base_url"].startswith("http://127.0.0.1:")
    assert balance.text == "3.25"


def test_cli_refuses_to_bind_other_hosts():
    process = start_cli("--host", "0.0.0.0")
    _, errors = process.communicate(timeout=10)

    assert process.returncode == 2
    assert "loopback" in errors
