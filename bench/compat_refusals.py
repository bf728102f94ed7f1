"""What an anonymous request costs /in.php: CPU per refused request, for the floods issue 32 names.

Each body goes through what CompatSubmitFunction runs for it (the handler's protocol_pairs into
CompatSubmit.submit), with a key store that knows no key (a DynamoDB miss: one GetItem, network
time, not CPU). Also python-multipart's import time after what the handler already imports, and
its size in the bundle. Run standalone: ``python -m bench.compat_refusals``.
"""

from __future__ import annotations

import base64
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import python_multipart

from pingback_guard.domain.worker_keys import WorkerKey
from pingback_guard.handlers.protocol import (
    MAX_SUBMIT_BODY_BYTES,
    FieldsRead,
    MalformedRequestError,
    protocol_pairs,
)
from pingback_guard.kinds.registry import MAX_REQUEST_BYTES
from pingback_guard.logic.compat import Outcome
from pingback_guard.logic.compat_submit import CompatSubmit
from pingback_guard.logic.request_budgets import KeyBudget
from pingback_guard.logic.submit import IssuedPingback, SubmitService
from pingback_guard.logic.worker_keys import WorkerKeys

TARGET_MS = 50.0
RUNS = 5
FLOOD_BYTES = 2_400_000
UNKNOWN_KEY = "0123456789abcdef0123456789abcdef"
BOUNDARY = b"flood"
PINGBACK = IssuedPingback("nonce", "https://api.test/callback/v1.nonce.mac")


class NoKeys:
    """The worker-key table with no record of any key."""

    def find(self, key_id: str) -> WorkerKey | None:
        return None


@dataclass(frozen=True)
class Refusal:
    name: str
    body_bytes: int
    cpu_ms: float
    answer: str


def _event(body: bytes, content_type: str) -> dict[str, Any]:
    return {
        "rawQueryString": "",
        "headers": {"content-type": content_type},
        "body": base64.b64encode(body).decode(),
        "isBase64Encoded": True,
    }


def _multipart(first: tuple[bytes, bytes] | None = None) -> tuple[int, dict[str, Any]]:
    """As many tiny parts as fit the flood's size (about 48,000), after ``first`` if given."""
    part = b'--f\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n'
    head = (
        b'--f\r\nContent-Disposition: form-data; name="%s"\r\n\r\n%s\r\n' % first if first else b""
    )
    parts = (FLOOD_BYTES - len(head)) // len(part)
    body = head + part * parts + b"--f--\r\n"
    return parts, _event(body, "multipart/form-data; boundary=f")


def floods() -> dict[str, dict[str, Any]]:
    parts, anonymous = _multipart()
    _, unknown_key_first = _multipart((b"key", UNKNOWN_KEY.encode()))
    # A JSON body is parsed whole (bounded by the largest request): the worst fits just under.
    fields = (MAX_REQUEST_BYTES - 2) // len('"f000000":1,')
    return {
        f"multipart, {parts:,} tiny parts, no key": anonymous,
        f"multipart, unknown key then {parts:,} tiny parts": unknown_key_first,
        "multipart, one 2.4 MB file part, no key": _event(
            b'--f\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\n\r\n'
            + b"\x89" * FLOOD_BYTES
            + b"\r\n--f--\r\n",
            "multipart/form-data; boundary=f",
        ),
        "urlencoded, 2.4 MB of tiny pairs, no key": _event(
            b"a=1&" * (FLOOD_BYTES // 4), "application/x-www-form-urlencoded"
        ),
        "urlencoded, unknown key then one 2.4 MB value": _event(
            b"key=%s&body=" % UNKNOWN_KEY.encode() + b"A" * FLOOD_BYTES,
            "application/x-www-form-urlencoded",
        ),
        "JSON, one field holding a 1.2 MB array of numbers": _event(
            b'{"a":[' + b"1," * (MAX_REQUEST_BYTES // 2 - 8) + b"1]}", "application/json"
        ),
        f"JSON, {fields:,} tiny fields (1.2 MB), no key": _event(
            json.dumps({f"f{i:06d}": 1 for i in range(fields)}, separators=(",", ":")).encode(),
            "application/json",
        ),
    }


def _refuse(service: CompatSubmit, event: dict[str, Any]) -> str:
    try:
        outcome: Outcome = service.submit(
            FieldsRead(protocol_pairs(event, MAX_SUBMIT_BODY_BYTES)), _never
        )
    except MalformedRequestError as error:
        return f"ERROR_BAD_PARAMETERS ({error})"
    return outcome.answer.plain


def _never() -> IssuedPingback:
    raise AssertionError("a refused request never reaches the submit")


def measure_refusals() -> list[Refusal]:
    # Refused before the budget and the submit service are reached: neither is called.
    service = CompatSubmit(
        WorkerKeys(NoKeys()), cast(SubmitService, None), budget=cast(KeyBudget, None)
    )
    refusals = []
    for name, event in floods().items():
        answer, samples = "", []
        for _ in range(RUNS):
            started = time.process_time()
            answer = _refuse(service, event)
            samples.append((time.process_time() - started) * 1000)
        body_bytes = len(event["body"]) * 3 // 4
        refusals.append(Refusal(name, body_bytes, statistics.median(samples), answer))
    return refusals


IMPORT_PROBE = """
import time
import aws_lambda_powertools.logging, aws_lambda_powertools.metrics, requests
import pingback_guard.kinds.registry, pingback_guard.logic.compat
started = time.perf_counter()
import python_multipart.multipart
print((time.perf_counter() - started) * 1000)
"""


def import_ms() -> float:
    """python-multipart's import on top of what the handler imports anyway (median of RUNS)."""
    functions = str(Path(__file__).resolve().parents[1] / "functions")
    return statistics.median(
        float(
            subprocess.run(
                [
                    sys.executable,
                    "-c",
                    f"import sys; sys.path.insert(0, {functions!r})\n" + IMPORT_PROBE,
                ],
                check=True,
                capture_output=True,
                text=True,
                timeout=60,
            ).stdout
        )
        for _ in range(RUNS)
    )


def package_kb() -> float:
    root = Path(python_multipart.__file__).parent
    return sum(path.stat().st_size for path in root.rglob("*.py")) / 1024


def report(refusals: list[Refusal], imported_ms: float, size_kb: float) -> str:
    lines = [
        f"CPU per refused anonymous /in.php request (median of {RUNS}, "
        f"target < {TARGET_MS:.0f} ms):",
        "",
        "| request | body | CPU ms | answer |",
        "|---|---:|---:|---|",
    ]
    lines += [
        f"| {r.name} | {r.body_bytes / 1e6:.2f} MB | {r.cpu_ms:.1f} | {r.answer} |"
        for r in refusals
    ]
    worst = max(r.cpu_ms for r in refusals)
    verdict = "met" if worst < TARGET_MS else "MISSED"
    lines += [
        "",
        f"worst: {worst:.1f} ms CPU ({verdict})",
        f"python-multipart {python_multipart.__version__} (loaded by the first multipart body): "
        f"{imported_ms:.1f} ms to import after "
        f"the handler's own imports, {size_kb:.0f} KB of source in the bundle",
    ]
    return "\n".join(lines)


def main(measure: Callable[[], list[Refusal]] = measure_refusals) -> None:
    print(report(measure(), import_ms(), package_kb()))


if __name__ == "__main__":
    main()
