"""SystemResolver: a literal host is read as the system resolver reads it, without asking DNS;
a name is asked once (here of a stand-in getaddrinfo: no DNS query leaves the test)."""

from __future__ import annotations

import ipaddress
import socket
from typing import Any

import pytest

from pingback_guard.domain.errors import ForwardFailedError
from pingback_guard.forward.addresses import SystemResolver


def no_dns(*_: Any, **__: Any) -> Any:
    raise AssertionError("a literal address was sent to DNS")


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("2130706433", "127.0.0.1"),
        ("0177.0.0.1", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
        ("0", "0.0.0.0"),
        ("2852039166", "169.254.169.254"),
        ("10.0.0.5", "10.0.0.5"),
        ("::ffff:127.0.0.1", "::ffff:127.0.0.1"),
        ("2606:4700:4700::1111", "2606:4700:4700::1111"),
    ],
)
def test_a_literal_is_the_address_the_resolver_reads_without_a_query(
    host: str, address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    assert SystemResolver().addresses(host) == [ipaddress.ip_address(address)]


def test_a_name_stands_for_every_address_it_resolves_to_once_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []

    def getaddrinfo(host: str, port: None, **_: Any) -> list[tuple[Any, ...]]:
        asked.append(host)
        tcp = (socket.AF_INET, socket.SOCK_STREAM, 6, "")
        return [
            (*tcp, ("93.184.215.14", 0)),
            (*tcp, ("10.0.0.5", 0)),
            (*tcp, ("93.184.215.14", 0)),
            (socket.AF_INET6, socket.SOCK_STREAM, 6, "", ("fe80::1%2", 0, 0, 2)),
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    found = SystemResolver().addresses("rebinding.example")
    assert asked == ["rebinding.example"]
    assert found == [
        ipaddress.ip_address("93.184.215.14"),
        ipaddress.ip_address("10.0.0.5"),
        ipaddress.ip_address("fe80::1%2"),
    ]


def test_a_name_that_does_not_resolve_fails_without_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def getaddrinfo(*_: Any, **__: Any) -> Any:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    with pytest.raises(ForwardFailedError) as failure:
        SystemResolver().addresses("private-worker.example")
    assert "private-worker" not in str(failure.value)
