"""Hostile input at the public callback route: forged, replayed, oversized, malformed, injected,
flooded and fuzzed requests. Each must get a clear 4xx, store nothing it should not, never 5xx
(but the documented 503), and never put a secret or a token in the logs."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from infra.lambda_context import FakeLambdaContext
from tests.integration.handler_support import (
    PREVIOUS_SECRET,
    SECRET,
    TOKEN,
    callback_get,
    capability_for,
    emitted_metrics,
    event,
    item,
)

DOCUMENTED_STATUSES = {200, 400, 403, 503}
INJECTIONS = [
    "' OR '1'='1",
    "<script>alert(1)</script>",
    "${jndi:ldap://127.0.0.1/x}",
    '{"$ne": null}',
    "../../etc/passwd",
    "#status = :solved",
    "\x00\x01",
    "\uff05\uff25\uff32\uff32\uff2f\uff32",  # full-width look-alike of "%ERROR"
]


def callback_post(
    body: bytes, content_type: str, secret: str | None = None, encode: bool = True
) -> dict[str, Any]:
    """A 2captcha POST pingback; by default on a valid capability (whose task is not recorded)."""
    shaped = event("callback_post_form_2captcha.json")
    shaped["pathParameters"] = {"secret": capability_for("1") if secret is None else secret}
    shaped["headers"]["content-type"] = content_type
    shaped["isBase64Encoded"] = encode
    shaped["body"] = base64.b64encode(body).decode() if encode else body.decode("latin-1")
    return shaped


@pytest.fixture
def callback(load: Callable[[str], ModuleType]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    module = load("callback")
    return lambda shaped: module.handler(shaped, FakeLambdaContext())


class TestForged:
    @pytest.mark.parametrize("task_id", ["901", "73026473457"])
    @pytest.mark.parametrize(
        "secret", ["", "x", "forged-forged-forged-forged", SECRET.lower(), PREVIOUS_SECRET + "0"]
    )
    def test_wrong_or_missing_secret_for_known_and_unknown_ids(
        self, callback, stack, task_id: str, secret: str
    ) -> None:
        answer = callback(callback_get(task_id, TOKEN, secret))
        assert answer["statusCode"] == 403 and answer["body"] == "forbidden"
        assert item(stack, task_id) is None

    def test_no_path_parameters_at_all(self, callback, stack) -> None:
        shaped = callback_get("902", TOKEN)
        shaped["pathParameters"] = None
        assert callback(shaped)["statusCode"] == 403

    def test_a_forged_callback_cannot_overwrite_a_stored_result(self, callback, stack) -> None:
        callback(callback_get("903", TOKEN))
        callback(callback_get("903", "03AFforged" + "f" * 100, "not-the-secret-000000"))
        stored = item(stack, "903")
        assert stored is not None and stored["solution"]["S"] == TOKEN


class TestReplayed:
    def test_the_same_callback_replayed_many_times_is_stored_once(self, callback, stack) -> None:
        answers = {callback(callback_get("910", TOKEN))["statusCode"] for _ in range(5)}
        assert answers == {200}
        stored = item(stack, "910")
        assert stored is not None and stored["solution"]["S"] == TOKEN

    def test_a_replayed_callback_with_another_code_keeps_the_first(self, callback, stack) -> None:
        callback(callback_get("911", TOKEN))
        assert callback(callback_get("911", TOKEN[::-1]))["statusCode"] == 200
        stored = item(stack, "911")
        assert stored is not None and stored["solution"]["S"] == TOKEN


class TestMalformed:
    @pytest.mark.parametrize(
        ("task_id", "code"),
        [
            ("9" * 21, TOKEN),
            ("12ab", TOKEN),
            ("-5", TOKEN),
            ("1.5", TOKEN),
            ("", TOKEN),
            ("920", ""),
            ("920", "x" * 8193),
            ("920", "CAPCHA_NOT_READY"),
            *[(injection, TOKEN) for injection in INJECTIONS],
        ],
    )
    def test_bad_ids_and_codes_are_400_and_store_nothing(
        self, callback, stack, task_id: str, code: str
    ) -> None:
        answer = callback(callback_get(task_id, code))
        assert answer["statusCode"] == 400
        assert item(stack, "920") is None

    @pytest.mark.parametrize("code", ["token with spaces", "tok\nen", *INJECTIONS])
    def test_an_answer_that_looks_hostile_is_kept_as_text_never_interpreted(
        self, callback, stack, code: str
    ) -> None:
        """Any answer is an answer (OCR reads what the image shows): stored exactly as sent."""
        assert callback(callback_get("920", code))["statusCode"] == 200
        stored = item(stack, "920")
        assert stored is not None and stored["solution"]["S"] == code

    @pytest.mark.parametrize(
        ("body", "content_type", "reason"),
        [
            (b"\xff\xfe\x00id=1", "application/x-www-form-urlencoded", "UTF-8"),
            (b"id=921&code=" + b"a" * 17000, "application/x-www-form-urlencoded", "too large"),
            (b"<id>921</id>", "application/xml", "content type"),
            (b"id=921&code=abc", "multipart/form-data; boundary=x", "content type"),
            (b'{"id": 921, "code": ["a"]}', "application/json", "code"),
            (b'{"id": true, "code": "abc"}', "application/json", "task id"),
            (b"[921]", "application/json", "object"),
            (
                b"&".join(b"f%d=1" % n for n in range(50)),
                "application/x-www-form-urlencoded",
                "fields",
            ),
        ],
    )
    def test_bad_bodies_are_400_with_a_reason(
        self, callback, stack, body: bytes, content_type: str, reason: str
    ) -> None:
        answer = callback(callback_post(body, content_type))
        assert answer["statusCode"] == 400 and reason in answer["body"]

    def test_body_that_is_not_base64_is_400(self, callback, stack) -> None:
        shaped = callback_post(b"", "application/x-www-form-urlencoded")
        shaped["body"] = "%%%not base64%%%"
        assert callback(shaped)["statusCode"] == 400

    def test_wrong_method_is_400(self, callback, stack) -> None:
        shaped = callback_get("922", TOKEN)
        shaped["requestContext"]["http"]["method"] = "DELETE"
        assert callback(shaped)["statusCode"] == 400
        assert item(stack, "922") is None


def provisional_items(stack: dict[str, Any]) -> list[dict[str, Any]]:
    items = stack["dynamodb"].scan(TableName="pg-tasks")["Items"]
    return [item for item in items if item["task_id"]["S"].isdigit()]


def test_a_flood_of_unknown_ids_is_kept_briefly_counted_and_never_polled(
    callback, stack, capsys
) -> None:
    """Unknown ids with a valid capability are kept (a callback can beat the submitter), but only
    provisionally: one id per capability, one retention window, counted, never PENDING (no
    res.php spent on them)."""
    for n in range(100):
        assert callback(callback_get(str(5_000_000 + n), TOKEN))["statusCode"] == 200
    one_url = capability_for("5000000")
    for n in range(1, 100):
        answer = callback(callback_get(str(5_000_000 + n), TOKEN + "X", one_url))
        assert answer["statusCode"] == 403
    kept = provisional_items(stack)
    assert len(kept) == 100
    assert all(int(i["expires_at"]["N"]) - float(i["received_at"]["N"]) <= 600 for i in kept)
    assert all("submitted_at" not in i and "due_at" not in i for i in kept)
    metrics = emitted_metrics(capsys.readouterr().out)
    assert metrics["CallbackUnregistered"] == 100 and metrics["CallbackProofMismatch"] == 99


def test_the_retired_whole_secret_urls_create_nothing(callback, stack) -> None:
    for secret in (SECRET, PREVIOUS_SECRET):
        for n in range(10):
            answer = callback(callback_get(str(6_000_000 + n), TOKEN, secret))
            assert answer["statusCode"] == 403
    assert stack["dynamodb"].scan(TableName="pg-tasks", Select="COUNT")["Count"] == 0


def test_a_flood_of_forged_callbacks_reads_the_secret_at_most_once_a_minute(
    load, stack, monkeypatch
) -> None:
    module = load("callback")
    reads: list[bool] = []
    original = module.authenticator._load

    def counting(force: bool) -> Any:
        reads.append(force)
        return original(force)

    monkeypatch.setattr(module.authenticator, "_load", counting)
    for n in range(300):
        module.handler(callback_get(str(n), TOKEN, f"forged-secret-{n:012d}"), FakeLambdaContext())
    # The first unknown proof looks for a rotated secret once; the rest of the minute, none do.
    assert reads.count(True) == 1


ids = st.one_of(st.integers(min_value=0, max_value=10**25).map(str), st.text(max_size=30))
codes = st.one_of(
    st.just(TOKEN), st.text(max_size=60), st.text(alphabet="abcXYZ_-.09", min_size=1, max_size=100)
)
secrets = st.one_of(st.just(SECRET), st.just(PREVIOUS_SECRET), st.text(max_size=50))


def stored_count(stack: dict[str, Any]) -> int:
    return int(stack["dynamodb"].scan(TableName="pg-tasks", Select="COUNT")["Count"])


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    secret=secrets,
    method=st.sampled_from(["GET", "POST", "PUT"]),
    task_id=ids,
    code=codes,
    content_type=st.sampled_from(
        ["application/x-www-form-urlencoded", "application/json", "text/plain", ""]
    ),
    as_json=st.booleans(),
    raw=st.one_of(st.none(), st.binary(max_size=300)),
)
def test_fuzzed_callbacks_never_crash_never_store_without_the_secret_never_leak(
    callback, stack, capsys, secret, method, task_id, code, content_type, as_json, raw
) -> None:
    if raw is not None:
        body = raw
    elif as_json:
        body = json.dumps({"id": task_id, "code": code}).encode()
    else:
        body = f"id={task_id}&code={code}".encode("utf-8", "surrogatepass")
    shaped = (
        callback_get(task_id, code, secret)
        if method == "GET"
        else callback_post(body, content_type, secret)
    )
    shaped["requestContext"]["http"]["method"] = method
    shaped["pathParameters"] = {"secret": secret}
    before = stored_count(stack)

    answer = callback(shaped)

    assert answer["statusCode"] in DOCUMENTED_STATUSES
    # No capability: neither a random path nor the retired whole-secret URLs get past the MAC.
    assert answer["statusCode"] == 403
    assert stored_count(stack) == before
    output = capsys.readouterr().out
    assert SECRET not in output and PREVIOUS_SECRET not in output
    if len(code) >= 16 and code not in task_id:
        assert code not in output
