"""The installed 2captcha-python SDK as the tests drive it: its README's examples, read from the
package's own metadata (so a new SDK version's README is what is tested), and ApiClients that
record what the SDK sends and what it gets back."""

from __future__ import annotations

import ast
import base64
import importlib.metadata
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from twocaptcha.api import ApiClient
from twocaptcha.exceptions.api import NetworkException

SDK = "2captcha-python"
# README placeholders that are not Python as printed: "param1=..., ..." after an example's
# arguments, and a line of dots standing for the code around it.
PLACEHOLDER_ARGUMENTS = re.compile(r",\s*param1=\.\.\.,\s*\.\.\.")
ELISION_LINE = re.compile(r"^[ .]+$", re.MULTILINE)
ALTERNATIVE = re.compile(r"^# OR\s*$", re.MULTILINE)


@dataclass(frozen=True)
class ReadmeExample:
    """One ```python block of the README, under the heading it follows."""

    section: str
    source: str

    @property
    def name(self) -> str:
        return re.sub(r"[^a-z0-9]+", "-", self.section.lower()).strip("-")

    @property
    def runnable_source(self) -> str:
        """The block as printed, its placeholders (``param1=..., ...``, a line of dots) left out."""
        return ELISION_LINE.sub("", PLACEHOLDER_ARGUMENTS.sub("", self.source))

    def statements(self) -> list[tuple[str, ast.Module]]:
        """Each top-level statement with its own source: run one at a time, an exception names
        the statement that raised it. SyntaxError when the block is not Python."""
        source = self.runnable_source
        tree = ast.parse(source)
        return [
            (ast.get_source_segment(source, node) or "", ast.Module([node], type_ignores=[]))
            for node in tree.body
        ]


def readme_examples() -> list[ReadmeExample]:
    """Every ```python block of the installed SDK's README (its package description)."""
    metadata: Any = importlib.metadata.metadata(SDK)  # an email.message.Message underneath
    readme = str(metadata.get_payload())
    examples: list[ReadmeExample] = []
    section, block = "", cast(list[str] | None, None)
    for line in readme.splitlines():
        if block is None and line.startswith("#"):
            section = line.lstrip("#").strip()
        elif block is None and line.strip().startswith("```python"):
            block = []
        elif block is not None and line.strip() == "```":
            # "# OR" separates alternatives (a file, or a URL): each is an example of its own.
            alternatives = ALTERNATIVE.split("\n".join(block))
            examples.extend(ReadmeExample(section, source) for source in alternatives)
            block = None
        elif block is not None:
            block.append(line)
    return examples


def in_php_form(files: dict[str, str], kwargs: dict[str, Any]) -> dict[str, str]:
    """ApiClient.in_'s arguments as the form on the wire: an uploaded file as the base64 the
    stack reads a file part as."""
    uploads = dict(files)
    fields = dict(kwargs)
    if not uploads and "file" in fields:
        uploads["file"] = fields.pop("file")
    form = {name: str(value) for name, value in fields.items()}
    for name, path in uploads.items():
        form[name] = base64.b64encode(Path(path).read_bytes()).decode()
    return form


class RecordingApiClient(ApiClient):  # type: ignore[misc]
    """The SDK's ApiClient without a network: keeps each in.php form and res.php query, and
    answers as the provider does for a task solved at once."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[dict[str, str]] = []
        self.queries: list[dict[str, str]] = []

    def in_(self, files: dict[str, str] | None = None, **kwargs: Any) -> str:
        self.forms.append(in_php_form(files or {}, kwargs))
        return "OK|4242"

    def res(self, **kwargs: Any) -> str:
        self.queries.append({name: str(value) for name, value in kwargs.items()})
        action = kwargs.get("action")
        if action == "getbalance":
            return "12.5"
        return "OK_REPORT_RECORDED" if action in {"reportgood", "reportbad"} else "OK|answer"


@dataclass
class Exchange:
    """One request the SDK made and what came back: the answer text, or the exception."""

    endpoint: str
    sent: dict[str, str]
    answer: str | None = None
    error: Exception | None = None


class StrictApiClient(ApiClient):  # type: ignore[misc]
    """The SDK's own ApiClient, keeping every exchange. Its NetworkException stands for a
    non-200 answer or a transport error (the SDK raises its own for CAPCHA_NOT_READY, in
    get_result, never here): the test reads those as failures, not as "not ready"."""

    def __init__(self, post_url: str) -> None:
        super().__init__(post_url)
        self.exchanges: list[Exchange] = []

    def in_(self, files: dict[str, str] | None = None, **kwargs: Any) -> str:
        exchange = self._begin("in.php", kwargs)
        try:
            exchange.answer = str(super().in_(files=files or {}, **kwargs))
        except Exception as error:
            exchange.error = error
            raise
        return exchange.answer

    def res(self, **kwargs: Any) -> str:
        exchange = self._begin("res.php", kwargs)
        try:
            exchange.answer = str(super().res(**kwargs))
        except Exception as error:
            exchange.error = error
            raise
        return exchange.answer

    def _begin(self, endpoint: str, kwargs: dict[str, Any]) -> Exchange:
        sent = {name: str(value) for name, value in kwargs.items() if name != "key"}
        self.exchanges.append(Exchange(endpoint, sent))
        return self.exchanges[-1]

    @property
    def transport_failures(self) -> list[Exchange]:
        return [e for e in self.exchanges if isinstance(e.error, NetworkException)]

    def submitted_ids(self) -> list[str]:
        return [
            e.answer.removeprefix("OK|")
            for e in self.exchanges
            if e.endpoint == "in.php" and e.answer and e.answer.startswith("OK|")
        ]

    def answers_for(self, task_id: str) -> list[str]:
        """Every answer res.php gave for the task that was not 'not ready'."""
        return [
            e.answer.removeprefix("OK|")
            for e in self.exchanges
            if e.endpoint == "res.php"
            and e.sent.get("action") == "get"
            and e.sent.get("id") == task_id
            and e.answer
            and e.answer.startswith("OK|")
        ]
