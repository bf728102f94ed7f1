"""Hostile provider answers and endpoints: never a crash, never longer than one call deadline."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pingback_guard.domain.errors import ConfigurationError, ProviderRetryableError
from pingback_guard.provider.answers import AnswerKind
from pingback_guard.provider.captchaai import CaptchaAiClient, _parse_answer
from pingback_guard.settings.poller import PollerSettings
from tests.support import template_environment

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3),
    max_leaves=8,
)


def nested(depth: int) -> bytes:
    return ('{"status": 1, "request": ' + "[" * depth + "]" * depth + "}").encode()


@settings(max_examples=100, suppress_health_check=[HealthCheck.too_slow])
@given(st.binary(max_size=2048))
def test_any_bytes_parse_or_are_a_retryable_error(body: bytes) -> None:
    _parse_or_retryable(body)


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(st.sampled_from(["status", "request", "x"]), json_values))
def test_any_json_document_parses_or_is_a_retryable_error(document: dict[str, object]) -> None:
    _parse_or_retryable(json.dumps(document).encode())


@pytest.mark.parametrize("depth", [5_000, 200_000])
def test_nesting_deeper_than_json_can_read_is_a_retryable_error(depth: int) -> None:
    with pytest.raises(ProviderRetryableError):
        _parse_answer("res.php", nested(depth))


@pytest.mark.parametrize(
    "request_value",
    [
        {"captcha_id": "a1", "lot": {"n": [1, 2]}, "ok": True, "none": None},
        [[1, 2], [3, {"x": "привет"}]],
        "[" * 100 + "]" * 100,
    ],
)
def test_a_json_answer_of_any_shape_is_kept_as_its_compact_text(request_value: object) -> None:
    value = json.loads(request_value) if isinstance(request_value, str) else request_value
    body = json.dumps({"status": 1, "request": value}).encode()

    status, answer, _ = _parse_answer("res.php", body)

    assert status == 1
    assert answer == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def test_non_utf8_is_never_taken_for_a_token() -> None:
    status, answer, _ = _parse_answer("res.php", b'{"status": 1, "request": "03AF\xff\xfe"}')
    assert status == 1 and "\ufffd" in str(answer)
    with pytest.raises(ProviderRetryableError):
        _parse_answer("res.php", b"\xff\xfe\x00OK")


def _parse_or_retryable(body: bytes) -> None:
    try:
        status, answer, _ = _parse_answer("res.php", body)
    except ProviderRetryableError:
        return
    assert status in (0, 1) and isinstance(answer, str | int)


DRIPPED_BODY = b'{"status": 0, "request": "CAPCHA_NOT_READY"}' + b" " * 30
DRIP_SECONDS_PER_BYTE = 0.2


@pytest.fixture
def dripping_server(request: pytest.FixtureRequest) -> Iterator[str]:
    """Sends headers at once, then one body byte every 0.2 s (15 s for the whole body), or every
    `request.param` seconds."""
    seconds_per_byte = getattr(request, "param", DRIP_SECONDS_PER_BYTE)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    stopping = threading.Event()

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            headers = b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(DRIPPED_BODY)
            connection.sendall(headers)
            for byte in DRIPPED_BODY:
                if stopping.wait(seconds_per_byte):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stopping.set()
    thread.join(5)
    listener.close()


def test_a_slow_dripping_server_cannot_stretch_the_call_past_its_deadline(
    dripping_server: str,
) -> None:
    client = CaptchaAiClient(dripping_server, lambda: "k" * 32, call_deadline_seconds=1.0)
    started = time.monotonic()
    with pytest.raises(ProviderRetryableError) as raised:
        client.get_results(["1"])
    # Cut at its deadline: long before the whole body would have dripped in.
    assert time.monotonic() - started < len(DRIPPED_BODY) * DRIP_SECONDS_PER_BYTE / 2
    assert "k" * 32 not in str(raised.value)


@pytest.fixture
def huge_answer_server() -> Iterator[str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)

    def serve() -> None:
        connection, _ = listener.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\ncontent-length: 3000000\r\n\r\n")
            try:
                for _ in range(300):
                    connection.sendall(b"A" * 10_000)
            except OSError:
                return

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    thread.join(5)
    listener.close()


def test_an_answer_over_the_byte_cap_is_refused(huge_answer_server: str) -> None:
    client = CaptchaAiClient(huge_answer_server, lambda: "k" * 32, max_answer_bytes=100_000)
    with pytest.raises(ProviderRetryableError, match="over 100000 bytes"):
        client.get_results(["1"])


# Still one read per byte, over 1.5 s: as slow as it gets for an answer within its deadline.
@pytest.mark.parametrize("dripping_server", [0.02], indirect=True)
def test_an_honest_answer_still_reads(dripping_server: str) -> None:
    client = CaptchaAiClient(dripping_server, lambda: "k" * 32, call_deadline_seconds=30.0)
    answer = client.get_results(["1"])["1"]
    assert answer.kind is AnswerKind.NOT_READY


BASE_ENV = template_environment("PollerFunction")


@pytest.mark.parametrize(
    "url",
    [
        "http://ocr.captchaai.com",
        "http://10.0.0.1:8080",
        "ftp://ocr.captchaai.com",
        "https://ocr.captchaai.com/?x=1",
        "https://user:pw@ocr.captchaai.com",
    ],
)
def test_a_provider_url_that_would_expose_the_key_fails_at_cold_start(url: str) -> None:
    with pytest.raises(ConfigurationError, match="PROVIDER_BASE_URL"):
        PollerSettings.from_env({**BASE_ENV, "PROVIDER_BASE_URL": url})


@pytest.mark.parametrize(
    "url", ["https://ocr.captchaai.com", "http://127.0.0.1:8080", "http://localhost:9"]
)
def test_https_or_a_loopback_provider(url: str) -> None:
    assert PollerSettings.from_env({**BASE_ENV, "PROVIDER_BASE_URL": url}).provider.base_url == url


@settings(max_examples=50, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=60))
def test_any_provider_url_is_accepted_or_a_configuration_error(url: str) -> None:
    try:
        PollerSettings.from_env({**BASE_ENV, "PROVIDER_BASE_URL": url})
    except ConfigurationError:
        return
