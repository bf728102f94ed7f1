"""The worker's own pingback: only its task's result, in 2captcha's words, retried on failure,
and only to a public address (judged after resolving, with a fake resolver: no DNS here)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import pytest

from pingback_guard.domain.errors import ForwardFailedError
from pingback_guard.domain.task import CaptchaRequest, DeliveryPath, NewTask, TaskResult
from pingback_guard.forward.addresses import IpAddress
from pingback_guard.logic.forwarding import ForwardOutcome, ResultForwarder, is_forwardable_url
from tests.fakes import FakeResolver, InMemoryTaskStore

TASK = "72000000001"
FORWARD_URL = "https://worker.example/pingback"
OWNER = "arn:aws:iam::123456789012:user/worker"
WORKER_ADDRESS = "93.184.215.14"  # a public address: the fake resolver's, never connected to
RESOLVER = {"worker.example": [WORKER_ADDRESS], "localhost": ["127.0.0.1", "::1"]}
REQUEST = CaptchaRequest("hcaptcha", {"sitekey": "k", "pageurl": "https://example.test/"})


class RecordingSender:
    def __init__(self, failure: Exception | None = None) -> None:
        self.sent: list[tuple[str, str, str]] = []
        self.addresses: list[list[IpAddress]] = []
        self.failure = failure

    def send(self, url: str, addresses: Sequence[IpAddress], task_id: str, code: str) -> None:
        if self.failure is not None:
            raise self.failure
        self.sent.append((url, task_id, code))
        self.addresses.append(list(addresses))


def forwarder(
    store: InMemoryTaskStore,
    sender: RecordingSender,
    *,
    allow_loopback: bool = False,
    resolver: FakeResolver | None = None,
) -> ResultForwarder:
    return ResultForwarder(
        store, resolver or FakeResolver(RESOLVER), sender, allow_loopback=allow_loopback
    )


def store_with(forward_url: str | None) -> InMemoryTaskStore:
    store = InMemoryTaskStore()
    store.record_submission(
        NewTask(
            TASK, REQUEST, 1000.0, 1020.0, owner="arn:aws:iam::1:user/w", forward_url=forward_url
        )
    )
    return store


def test_a_solved_task_s_token_goes_to_its_own_url() -> None:
    store, sender = store_with(FORWARD_URL), RecordingSender()
    store.record_result(TaskResult(TASK, "P1_token", DeliveryPath.POLL, 1030.0))
    assert forwarder(store, sender).forward(TASK, 1031.0) is ForwardOutcome.SENT
    assert sender.sent == [(FORWARD_URL, TASK, "P1_token")]


def test_a_failed_task_sends_the_provider_s_error() -> None:
    store, sender = store_with(FORWARD_URL), RecordingSender()
    store.record_failure(TaskResult(TASK, "ERROR_CAPTCHA_UNSOLVABLE", DeliveryPath.POLL, 1030.0))
    forwarder(store, sender).forward(TASK, 1031.0)
    assert sender.sent == [(FORWARD_URL, TASK, "ERROR_CAPTCHA_UNSOLVABLE")]


@pytest.mark.parametrize("forward_url", [None, FORWARD_URL])
def test_nothing_is_sent_without_a_url_or_before_a_result(forward_url: str | None) -> None:
    store, sender = store_with(forward_url), RecordingSender()
    if forward_url is None:
        store.record_result(TaskResult(TASK, "P1_token", DeliveryPath.POLL, 1030.0))
    outcome = forwarder(store, sender).forward(TASK, 1031.0)
    assert outcome is ForwardOutcome.NOTHING_TO_FORWARD and sender.sent == []
    assert forwarder(store, sender).forward("1", 1031.0) is ForwardOutcome.NOTHING_TO_FORWARD


def test_a_refused_forward_is_raised_for_the_retry() -> None:
    store = store_with(FORWARD_URL)
    store.record_result(TaskResult(TASK, "P1_token", DeliveryPath.POLL, 1030.0))
    with pytest.raises(ForwardFailedError):
        forwarder(store, RecordingSender(ForwardFailedError("forward: HTTP 500"))).forward(
            TASK, 1031.0
        )


@pytest.mark.parametrize(
    ("url", "allowed", "allowed_locally"),
    [
        ("https://worker.example/p?x=1", True, True),
        ("https://8.8.8.8/p", True, True),
        ("https://[2606:4700:4700::1111]:8443/p", True, True),
        ("http://127.0.0.1:8080/p", False, True),
        # In Lambda, loopback is the function's own Runtime API.
        ("http://127.0.0.1:9001/2018-06-01/runtime/invocation/next", False, True),
        ("https://localhost/p", False, True),
        # Loopback as the system resolver reads it, not as text (issue 32).
        ("https://localhost./p", False, True),
        ("https://api.localhost/p", False, True),
        ("https://2130706433/p", False, True),
        ("https://0177.0.0.1/p", False, True),
        ("https://127.1/p", False, True),
        ("https://0x7f.1/p", False, True),
        ("https://[::1]/p", False, True),
        ("https://[::ffff:127.0.0.1]/p", False, True),
        ("http://[::ffff:7f00:1]:8080/p", False, True),
        # Never called, not even locally: the machine itself, the metadata service, private nets.
        ("https://0/p", False, False),
        ("https://0.0.0.0/p", False, False),
        ("https://169.254.169.254/latest/meta-data/", False, False),
        ("https://2852039166/latest/meta-data/", False, False),
        ("https://[::ffff:169.254.169.254]/", False, False),
        ("https://[fd00:ec2::254]/", False, False),
        ("https://10.0.0.5/p", False, False),
        ("https://012.0.0.5/p", False, False),
        ("https://172.16.0.1/p", False, False),
        ("https://192.168.1.1/p", False, False),
        ("https://100.64.0.1/p", False, False),
        ("https://[fe80::1]/p", False, False),
        # IPv6 forms carrying a private IPv4 address (NAT64, 6to4, IPv4-compatible).
        ("https://[64:ff9b::a00:5]/p", False, False),
        ("https://[64:ff9b::a9fe:a9fe]/p", False, False),
        ("https://[64:ff9b:1::808:808]/p", False, False),
        ("https://[2002:a00:5::1]/p", False, False),
        ("https://[::a00:5]/p", False, False),
        ("https://[::]/p", False, False),
        ("https://[64:ff9b::808:808]/p", True, True),
        # Outside 2000::/3 or special inside it, whatever Python's is_global says (issue 39):
        # IPv4-translated, SRv6 SIDs, site-local, documentation.
        ("https://[::ffff:0:127.0.0.1]/p", False, False),
        ("https://[::ffff:0:a9fe:a9fe]/p", False, False),
        ("https://[::ffff:0:808:808]/p", False, False),
        ("https://[5f00::1]/p", False, False),
        ("https://[fec0::1]/p", False, False),
        ("https://[3fff::1]/p", False, False),
        ("https://[100:0:0:1::1]/p", False, False),
        ("https://[fc00::1]/p", False, False),
        ("https://224.0.0.251/p", False, False),
        ("https://255.255.255.255/p", False, False),
        ("http://worker.example/p", False, False),
        ("http://10.0.0.5/p", False, False),
        ("https://user:pw@worker.example/p", False, False),
        ("https://worker.example:0/p", False, False),
        ("https://worker.example:99999/p", False, False),
        ("file:///etc/passwd", False, False),
        ("https://worker.example/" + "a" * 2100, False, False),
        ("https://worker.example/\n", False, False),
    ],
)
def test_only_urls_the_stack_may_call(url: str, allowed: bool, allowed_locally: bool) -> None:
    assert is_forwardable_url(url, allow_loopback=False) is allowed
    assert is_forwardable_url(url, allow_loopback=True) is allowed_locally


def test_a_loopback_url_kept_before_is_not_called_on_aws() -> None:
    store, sender = store_with("http://127.0.0.1:9001/x"), RecordingSender()
    store.record_result(TaskResult(TASK, "P1_token", DeliveryPath.POLL, 1030.0))
    assert forwarder(store, sender).forward(TASK, 1031.0) is ForwardOutcome.NOTHING_TO_FORWARD
    assert sender.sent == []


def test_the_sender_gets_the_address_the_name_was_judged_by() -> None:
    # The one resolution: the sender connects to this address, never resolving the name again.
    store, sender = store_with(FORWARD_URL), RecordingSender()
    store.record_result(TaskResult(TASK, "P1_token", DeliveryPath.POLL, 1030.0))
    resolver = FakeResolver(RESOLVER)
    assert forwarder(store, sender, resolver=resolver).forward(TASK, 1031.0) is ForwardOutcome.SENT
    assert resolver.asked == ["worker.example"]
    assert sender.addresses == [[ipaddress.ip_address(WORKER_ADDRESS)]]


@pytest.mark.parametrize(
    "addresses",
    [
        ["10.0.0.5"],
        ["169.254.169.254"],
        ["127.0.0.1"],
        ["::ffff:127.0.0.1"],
        ["::ffff:169.254.169.254"],
        ["fd00:ec2::254"],
        ["::ffff:0:a9fe:a9fe"],
        ["5f00::1"],
        ["0.0.0.0"],
        # One private address among public ones: which a client reaches is the resolver's choice.
        [WORKER_ADDRESS, "192.168.0.10"],
    ],
)
def test_a_name_that_resolves_to_a_non_public_address_is_refused(addresses: list[str]) -> None:
    store, sender = store_with("https://rebound.example/p"), RecordingSender()
    store.record_result(TaskResult(TASK, "P1_token", DeliveryPath.POLL, 1030.0))
    resolver = FakeResolver({"rebound.example": addresses})
    outcome = forwarder(store, sender, resolver=resolver).forward(TASK, 1031.0)
    assert outcome is ForwardOutcome.REFUSED_ADDRESS and sender.sent == []


def test_locally_a_name_may_stand_for_loopback_and_plain_http_reaches_this_machine_only() -> None:
    store, sender = store_with("http://localhost:8080/p"), RecordingSender()
    store.record_result(TaskResult(TASK, "P1_token", DeliveryPath.POLL, 1030.0))
    local = forwarder(store, sender, allow_loopback=True)
    assert local.forward(TASK, 1031.0) is ForwardOutcome.SENT
    assert sender.addresses == [[ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]]
    # A localhost name the resolver maps elsewhere is not plain-http material.
    elsewhere = FakeResolver({"localhost": [WORKER_ADDRESS]})
    outcome = forwarder(store, sender, allow_loopback=True, resolver=elsewhere).forward(
        TASK, 1031.0
    )
    assert outcome is ForwardOutcome.REFUSED_ADDRESS and len(sender.sent) == 1


def test_a_name_that_does_not_resolve_is_raised_for_the_retry() -> None:
    store, sender = store_with("https://gone.example/p"), RecordingSender()
    store.record_result(TaskResult(TASK, "P1_token", DeliveryPath.POLL, 1030.0))
    with pytest.raises(ForwardFailedError):
        forwarder(store, sender).forward(TASK, 1031.0)
    assert sender.sent == []
