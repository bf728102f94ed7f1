"""What the harness's servers and processes share: a `with` block starts one and always stops it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from types import TracebackType
from typing import Self


class Service(ABC):
    @abstractmethod
    def start(self) -> object: ...

    @abstractmethod
    def stop(self) -> None:
        """Safe to call any number of times, and after a start that failed half-way."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
