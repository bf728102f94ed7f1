"""The published 2captcha-python SDK (unmodified) pointed at the local stack: every example of
its README (read from the installed package at test time), once with every pingback dropped and
once with them delivered, and each answer compared with the provider's (the simulator's) record
exactly; then send/get_result, report, balance, keys and the client's own pingback. The one change
a worker makes: ``server=<the stack's host>`` and a per-worker key, over HTTPS trusted through
REQUESTS_CA_BUNDLE.

An example runs unless an offline dry run of it (the SDK's ApiClient swapped for a recorder)
shows it cannot: the stack does not solve its kind, it downloads its image from the internet, or
it is not Python as printed (the async examples pass ``...`` as arguments). Those are skipped,
each with its reason (``pytest -rs``). The README's ``path/to/...`` files are given pictures the
simulator reads.
"""

from __future__ import annotations

import ast
import base64
import builtins
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import twocaptcha
import twocaptcha.solver
from twocaptcha import TwoCaptcha

# What the SDK's ApiClient raises for an ERROR_... answer (its solver has another ApiException).
from twocaptcha.exceptions.api import ApiException

from infra.local import LocalStack
from infra.local.runtime.aws import OTHER_WORKER, WORKER
from infra.local.up import issue_compat_key
from infra.simulator import Simulator
from infra.simulator.dialects import twocaptcha as twocaptcha_dialect
from pingback_guard.kinds.registry import kind_of
from pingback_guard.logic.compat_submit import METHOD_ALIASES, in_php_method
from tests.local.support import QUICK_SOLVES
from tests.twocaptcha_sdk import ReadmeExample, RecordingApiClient, StrictApiClient, readme_examples
from tests.waiting import wait_until

pytestmark = [pytest.mark.local_stack, pytest.mark.long_running, pytest.mark.timeout(600)]

# 2captcha's SDK speaks 2captcha's dialect (GeeTest v4's gt, CaptchaFox's fields, extended
# answers), and the stack passes its fields through: a 2captcha-speaking provider behind it.
SIMULATOR = {**QUICK_SOLVES, "seed": 26, "dialect": "2captcha"}
# CaptchaFox, Friendly Captcha and Lemin are modelled in CaptchaAI's dialect only (its SDK's
# fields and answers: test_captchaai_sdk.py); their 2captcha answer shapes are not modelled.
TWOCAPTCHA_TWIN_METHODS = frozenset(twocaptcha_dialect.CHECKS)
STACK_OPTIONS: dict[str, Any] = {
    "time_scale": 30,  # the poller every 2 s
    "parameter_overrides": {
        "CallbackTimeoutSeconds": "10",
        "ExpectedSolveSeconds": "5",
        "AllowLoopbackPingbacks": "true",  # the test's pingback receiver is on 127.0.0.1
    },
    "workers_per_function": 1,
}
SITEKEY = "6Le-wvkSAAAAAPBMRTvw0Q4Muexq9bi0DJwx_mJ-"
PAGE_URL = "https://2captcha.com/demo/recaptcha-v2"
PADDING = b"\x00" * 128
README_PICTURE = b"SIMTEXT:W68HP" + PADDING
# With every pingback dropped a result reaches the table by res.php: the poller's sweep (net 3)
# or a res.php get reading through (the SDK polls res.php itself, often before the sweep).
BY_RES_PHP = {"poll", "read_through"}
# 2captcha's answer to a second report of one task (the simulator takes both; the stack keeps
# one verdict per task, as 2captcha does).
DUPLICATE_REPORT = "ERROR_DUPLICATE_REPORT"
EXAMPLES = readme_examples()
# The README examples that must run against the stack (by section name; "configuration" twice),
# pinned here: the dry run's skips are derived from the stack's own kind registry, so a kind
# dropped from the stack would otherwise turn its examples into skips, not failures.
RUNNABLE_EXAMPLES = sorted(
    [
        "balance", "clickcaptcha", "cloudflare-turnstile", "configuration", "configuration",
        "geetest", "geetest-v4", "grid", "normal-captcha", "proxies", "recaptcha-v2",
        "recaptcha-v3", "report", "send-get-result",
    ]
)  # fmt: skip


@pytest.fixture(scope="module")
def worker_key(stack: LocalStack) -> str:
    return issue_compat_key(stack.ready, WORKER.user_arn, "sdk test", dialect="2captcha")


@pytest.fixture
def server(stack: LocalStack, monkeypatch: pytest.MonkeyPatch) -> str:
    """The SDK's ``server``: the gateway's HTTPS host, its test CA trusted by requests."""
    monkeypatch.setenv("REQUESTS_CA_BUNDLE", stack.ready.ca_bundle)
    return urlsplit(stack.ready.tls_api_url).netloc


def strict(solver: TwoCaptcha, server: str) -> TwoCaptcha:
    solver.api_client = StrictApiClient(server)
    return solver


@pytest.fixture
def solver(server: str, worker_key: str) -> Iterator[TwoCaptcha]:
    # pollingInterval 1 s instead of 10: the stack answers CAPCHA_NOT_READY, never a ban.
    made = strict(
        TwoCaptcha(
            worker_key, server=server, pollingInterval=1, defaultTimeout=90, recaptchaTimeout=90
        ),
        server,
    )
    yield made
    assert_no_transport_failure(made)


def assert_no_transport_failure(solver: TwoCaptcha) -> None:
    """A 5xx or a transport error is a failure; the SDK would have polled on as if not ready."""
    failures = solver.api_client.transport_failures
    assert failures == [], [(f.endpoint, f.sent, repr(f.error)) for f in failures]


@pytest.fixture(params=["dropped", "delivered"])
def pingbacks(request: pytest.FixtureRequest, simulator: Simulator) -> Iterator[str]:
    simulator.update_faults(pingback_drop_rate=1.0 if request.param == "dropped" else 0.0)
    yield str(request.param)
    simulator.update_faults(pingback_drop_rate=0.0)


@pytest.fixture
def every_pingback_dropped(simulator: Simulator) -> Iterator[None]:
    simulator.update_faults(pingback_drop_rate=1.0)
    yield
    simulator.update_faults(pingback_drop_rate=0.0)


def truth(simulator: Simulator, task_id: str) -> dict[str, Any]:
    return next(t for t in simulator.tasks() if str(t["id"]) == task_id)


def stored_path(stack: LocalStack, task_id: str) -> str:
    item = stack.ready.aws_client("dynamodb").get_item(
        TableName=stack.ready.tasks_table, Key={"task_id": {"S": task_id}}, ConsistentRead=True
    )["Item"]
    return str(item["delivered_via"]["S"])


def assert_delivered_as(
    stack: LocalStack, simulator: Simulator, task_id: str, pingbacks: str
) -> None:
    """The simulator's record of each pingback of the task (an HTTP status, or dropped /
    refused / timeout / error), and, when every one was dropped, that res.php brought it."""
    outcomes = [d["outcome"] for d in truth(simulator, task_id)["deliveries"]]
    if pingbacks == "dropped":
        assert outcomes and all(outcome == "dropped" for outcome in outcomes), outcomes
        assert stored_path(stack, task_id) in BY_RES_PHP
    else:
        assert outcomes and all(outcome == 200 for outcome in outcomes), outcomes


def assert_provider_s_answer(
    stack: LocalStack, simulator: Simulator, result: dict[str, Any], pingbacks: str = "dropped"
) -> None:
    task = truth(simulator, result["captchaId"])
    assert result["code"] == task["code"]
    assert_delivered_as(stack, simulator, result["captchaId"], pingbacks)


class ExampleRun:
    """One README example run statement by statement, as a script (``__name__ == "__main__"``),
    with ``twocaptcha.TwoCaptcha`` making solvers for ``server`` and ``key`` (each with the
    ApiClient ``client`` makes) and ``solver`` already made for the blocks that use it bare."""

    def __init__(self, server: str, key: str, client: Callable[[str], Any]) -> None:
        self.server, self.key, self.client = server, key, client
        self.solvers: list[TwoCaptcha] = []
        self.errors: list[tuple[str, Exception]] = []

    def make_solver(self, *args: Any, **options: Any) -> TwoCaptcha:
        """TwoCaptcha('YOUR_API_KEY', ...) or TwoCaptcha(**config): the worker's key and the
        stack's server instead of the README's; every other option as the example gives it."""
        options.pop("apiKey", None)
        options["server"] = self.server
        made = TwoCaptcha(self.key, *args[1:], **options)
        made.api_client = self.client(self.server)
        self.solvers.append(made)
        return made

    def run(
        self, example: ReadmeExample, monkeypatch: pytest.MonkeyPatch, **given: Any
    ) -> dict[str, Any]:
        monkeypatch.setattr(twocaptcha, "TwoCaptcha", self.make_solver)
        monkeypatch.setattr(twocaptcha, "AsyncTwoCaptcha", _not_run_offline)
        # The README's blocks are one document: a later one uses TwoCaptcha and solver bare.
        namespace: dict[str, Any] = {
            "__name__": "__main__",
            "TwoCaptcha": self.make_solver,
            "solver": self.make_solver(),
            **given,
        }
        for source, statement in example.statements():
            try:
                exec(compile(statement, f"<README {example.section}>", "exec"), namespace)
            except Exception as error:
                self.errors.append((source, error))
        return namespace


def _not_run_offline(*_args: Any, **_options: Any) -> None:
    raise RuntimeError("AsyncTwoCaptcha is not run here (its examples pass `...` as arguments)")


def readme_files(example: ReadmeExample) -> None:
    """The example's ``path/to/...`` files, in the current directory, as pictures the simulator
    reads (an mp3 too: the stack refuses audio by its kind, never for a missing file)."""
    for node in ast.walk(ast.parse(example.runnable_source)):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and node.value.startswith("path/to/")
        ):
            Path(node.value).parent.mkdir(parents=True, exist_ok=True)
            Path(node.value).write_bytes(README_PICTURE)


def why_it_cannot_run(example: ReadmeExample, monkeypatch: pytest.MonkeyPatch) -> str | None:
    """An offline dry run of the example: why it cannot run against the stack, or None."""
    try:
        example.statements()
    except SyntaxError as unparsable:
        return f"not Python as printed ({unparsable.msg})"
    readme_files(example)
    dry = ExampleRun("dry-run.invalid", "k" * 32, lambda _server: RecordingApiClient())
    with monkeypatch.context() as offline:
        offline.setattr(time, "sleep", lambda _seconds: None)
        offline.setattr(twocaptcha.solver.requests, "get", _downloads)
        dry.run(example, offline, id="4242")
    if dry.errors:
        source, error = dry.errors[0]
        return f"{source.splitlines()[0]!r} raises {type(error).__name__}: {error}"
    for form in (f for made in dry.solvers for f in made.api_client.forms):
        method = in_php_method(form)
        sent_as = METHOD_ALIASES.get(method, {}).get("method", method)
        kind = kind_of(sent_as)
        if kind is None:
            return f"the stack does not solve its kind (in.php method={method})"
        if sent_as not in TWOCAPTCHA_TWIN_METHODS:
            return f"the 2captcha twin does not model in.php method={sent_as}"
        # 2captcha's text captcha is method=post without a file: not the stack's image kind.
        missing = [f.name for f in kind.fields if f.required and f.name not in form]
        if missing:
            return f"the stack does not solve its kind (method={method} without {missing[0]})"
    return None


def _downloads(url: str, *_args: Any, **_kwargs: Any) -> None:
    raise ConnectionError(f"it downloads its image from the internet ({url})")


def a_solved_task(solver: TwoCaptcha) -> str:
    """A task whose answer the stack has given (so stored): what the report example reports."""
    return str(solver.recaptcha(sitekey=SITEKEY, url=PAGE_URL)["captchaId"])


def needs_a_task_id(example: ReadmeExample) -> bool:
    """The README's report example uses ``id`` from the send / get_result one."""
    names = list(ast.walk(ast.parse(example.runnable_source)))
    loaded = {n.id for n in names if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    stored = {n.id for n in names if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return "id" in loaded - stored and hasattr(builtins, "id")


def test_the_examples_that_run_are_the_pinned_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    runnable = [e.name for e in EXAMPLES if why_it_cannot_run(e, monkeypatch) is None]
    assert sorted(runnable) == RUNNABLE_EXAMPLES


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.name}-{i}" for i, e in enumerate(EXAMPLES)])
def test_each_readme_example_gets_the_provider_s_exact_answer(
    example: ReadmeExample,
    pingbacks: str,
    stack: LocalStack,
    simulator: Simulator,
    solver: TwoCaptcha,
    server: str,
    worker_key: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    reason = why_it_cannot_run(example, monkeypatch)
    if reason:
        pytest.skip(reason)
    given = {"id": a_solved_task(solver)} if needs_a_task_id(example) else {}
    running = ExampleRun(server, worker_key, StrictApiClient)
    namespace = running.run(example, monkeypatch, **given)
    clients: list[StrictApiClient] = [made.api_client for made in running.solvers]
    reported = [
        e for c in clients for e in c.exchanges if e.sent.get("action", "").startswith("report")
    ]
    # Only a second report of one task may be refused, with 2captcha's word for it.
    assert [(source, repr(error)) for source, error in running.errors] == [
        (source, repr(error))
        for source, error in running.errors
        if isinstance(error, ApiException) and DUPLICATE_REPORT in str(error) and len(reported) > 1
    ]
    for made in running.solvers:
        assert_no_transport_failure(made)
    for client in clients:
        for task_id in client.submitted_ids():
            answers = client.answers_for(task_id)
            assert answers and set(answers) == {truth(simulator, task_id)["code"]}
            assert_delivered_as(stack, simulator, task_id, pingbacks)
        for exchange in client.exchanges:
            if exchange.sent.get("action") == "getbalance":
                assert float(exchange.answer or "nan") == float(simulator.config.balance)
    if "result" in namespace:
        result = namespace["result"]
        assert result["code"] == truth(simulator, result["captchaId"])["code"]
    if reported:
        assert reported[0].answer == "OK_REPORT_RECORDED"
        assert truth(simulator, given["id"])["reports"] == [reported[0].sent["action"]]


def image_file(tmp_path: Path, text: str) -> str:
    """A picture the simulator reads as ``text`` (its SIMTEXT convention; the padding makes it
    as large as the smallest image the stack takes)."""
    path = tmp_path / "captcha.png"
    path.write_bytes(b"SIMTEXT:" + text.encode() + PADDING)
    return str(path)


@pytest.mark.usefixtures("every_pingback_dropped")
def test_normal_reads_any_script_from_the_uploaded_file(
    stack: LocalStack, solver: TwoCaptcha, simulator: Simulator, tmp_path: Path
) -> None:
    result = solver.normal(image_file(tmp_path, "Ёлка 42"), numeric=4, minLen=4, maxLen=20)
    assert_provider_s_answer(stack, simulator, result)
    assert result["code"] == "Ёлка 42"


@pytest.mark.usefixtures("every_pingback_dropped")
def test_normal_as_base64(stack: LocalStack, solver: TwoCaptcha, simulator: Simulator) -> None:
    picture = base64.b64encode(b"SIMTEXT:7d 9k" + PADDING).decode()
    result = solver.normal(picture, caseSensitive=1)
    assert_provider_s_answer(stack, simulator, result)


@pytest.mark.usefixtures("every_pingback_dropped")
def test_recaptcha_v3_with_the_sdk_s_score_name(
    stack: LocalStack, solver: TwoCaptcha, simulator: Simulator
) -> None:
    result = solver.recaptcha(
        sitekey=SITEKEY, url=PAGE_URL, version="v3", action="verify", score=0.3
    )
    assert_provider_s_answer(stack, simulator, result)


@pytest.mark.usefixtures("every_pingback_dropped")
def test_hcaptcha_with_every_option_the_sdk_documents(
    stack: LocalStack, solver: TwoCaptcha, simulator: Simulator
) -> None:
    result = solver.hcaptcha(
        sitekey="f7de0da3-3303-44e8-ab48-fa32ff8ccc7b",
        url="https://2captcha.com/demo/hcaptcha",
        invisible=1,
        data="rqdata",
        domain="js.hcaptcha.com",
        useragent="Mozilla/5.0 (X11; Linux x86_64)",
    )
    assert_provider_s_answer(stack, simulator, result)


@pytest.mark.usefixtures("every_pingback_dropped")
def test_extended_response_reads_res_php_with_json(
    stack: LocalStack, simulator: Simulator, server: str, worker_key: str
) -> None:
    solver = strict(
        TwoCaptcha(
            worker_key, server=server, pollingInterval=1, defaultTimeout=90, extendedResponse=True
        ),
        server,
    )
    result = solver.hcaptcha(sitekey="f7de0da3-3303-44e8-ab48-fa32ff8ccc7b", url=PAGE_URL)
    assert set(result) == {"captchaId", "code"}
    assert_provider_s_answer(stack, simulator, result)
    assert_no_transport_failure(solver)


@pytest.mark.usefixtures("every_pingback_dropped")
def test_send_get_result_and_report(
    stack: LocalStack, solver: TwoCaptcha, simulator: Simulator
) -> None:
    task_id = solver.send(method="userrecaptcha", googlekey=SITEKEY, pageurl=PAGE_URL)
    deadline = time.monotonic() + 90
    while True:
        try:
            code = solver.get_result(task_id)
            break
        except twocaptcha.NetworkException:
            # get_result's own for CAPCHA_NOT_READY; the ApiClient's (a 5xx, a transport
            # error) is kept by the strict client and fails the test.
            assert_no_transport_failure(solver)
            assert time.monotonic() < deadline
            time.sleep(1)
    assert code == truth(simulator, task_id)["code"]
    assert_delivered_as(stack, simulator, task_id, "dropped")
    assert solver.report(task_id, True) == "OK_REPORT_RECORDED"
    assert truth(simulator, task_id)["reports"] == ["reportgood"]
    with pytest.raises(ApiException, match="ERROR_DUPLICATE_REPORT"):
        solver.report(task_id, False)


class PingbackReceiver:
    """The worker's own pingback endpoint: records every form POST it gets."""

    def __init__(self) -> None:
        self.received: list[dict[str, str]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                receiver.received.append({name: values[0] for name, values in form.items()})
                self.send_response(200)
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/captcha-done"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


@pytest.fixture
def receiver() -> Iterator[PingbackReceiver]:
    running = PingbackReceiver()
    running.thread.start()
    yield running
    running.server.shutdown()
    running.server.server_close()
    running.thread.join()


@pytest.mark.usefixtures("every_pingback_dropped")
def test_the_client_s_own_pingback_gets_the_result_once_it_is_stored(
    solver: TwoCaptcha, simulator: Simulator, receiver: PingbackReceiver
) -> None:
    task_id = solver.send(
        method="userrecaptcha", googlekey=SITEKEY, pageurl=PAGE_URL, callback=receiver.url
    )
    assert truth(simulator, task_id)["pingback_url"] != receiver.url  # ours, not the client's
    forwarded = wait_until(lambda: receiver.received, timeout=120, interval=0.5)
    assert forwarded == [{"id": task_id, "code": truth(simulator, task_id)["code"]}]


def forwarder_invocations(stack: LocalStack) -> int:
    return int(stack.health()["functions"]["PingbackForwardFunction"]["invocations"])


@pytest.mark.usefixtures("every_pingback_dropped")
def test_a_result_nobody_asked_to_forward_never_invokes_the_forwarder(
    stack: LocalStack, solver: TwoCaptcha
) -> None:
    wait_until(stack.result_events_settled, timeout=60)
    before = forwarder_invocations(stack)
    # Given a task sent without pingback=, once its result is published and every delivery of
    # it is done,
    task_id = solver.send(method="userrecaptcha", googlekey=SITEKEY, pageurl=PAGE_URL)
    wait_until(
        lambda: [e for e in stack.published_events() if e["detail"]["task_id"] == task_id],
        timeout=120,
        interval=0.5,
    )
    wait_until(stack.result_events_settled, timeout=60)
    # then the forward rule did not match it (pingback_forward "no"): no invocation, no read.
    assert forwarder_invocations(stack) == before


@pytest.mark.usefixtures("every_pingback_dropped")
def test_balance_is_the_provider_account_s(solver: TwoCaptcha, simulator: Simulator) -> None:
    assert solver.balance() == float(simulator.config.balance)


def test_an_unknown_or_revoked_key_gets_the_protocol_s_key_error(
    stack: LocalStack, server: str
) -> None:
    stranger = TwoCaptcha("0" * 32, server=server)
    with pytest.raises(ApiException, match="ERROR_KEY_DOES_NOT_EXIST"):
        stranger.recaptcha(sitekey=SITEKEY, url=PAGE_URL)
    with pytest.raises(ApiException, match="ERROR_WRONG_USER_KEY"):
        TwoCaptcha("not a key", server=server).balance()


@pytest.mark.usefixtures("every_pingback_dropped")
def test_another_owner_s_key_never_reads_the_task(
    stack: LocalStack, solver: TwoCaptcha, server: str
) -> None:
    task_id = solver.send(method="hcaptcha", sitekey="f7de0da3", pageurl=PAGE_URL)
    other_key = issue_compat_key(stack.ready, OTHER_WORKER.user_arn, "other", dialect="2captcha")
    other = TwoCaptcha(other_key, server=server)
    with pytest.raises(ApiException, match="ERROR_WRONG_CAPTCHA_ID"):
        other.get_result(task_id)
