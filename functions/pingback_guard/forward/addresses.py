"""What a worker's pingback host stands for: the addresses a connection to it would reach.

The forward checks these addresses, then connects to the one it checked (forward/sender.py):
resolving the name again at connect time would let a DNS answer change in between (rebinding).
"""

from __future__ import annotations

import ipaddress
import socket
from typing import Protocol

from pingback_guard.domain.errors import ForwardFailedError

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressResolver(Protocol):
    def addresses(self, host: str) -> list[IpAddress]:
        """Every address ``host`` stands for now; ForwardFailedError when it stands for none."""


def literal_address(host: str) -> IpAddress | None:
    """The address a host written as one stands for, read as the system resolver reads it: IPv4
    in inet_aton's forms too (``2130706433``, ``0177.0.0.1``, ``127.1``, ``0x7f.1``), which a
    text comparison with ``127.0.0.1`` misses. None for a name."""
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    try:
        return ipaddress.IPv4Address(socket.inet_aton(host))
    except (OSError, ValueError):  # not one of its forms; ValueError: a NUL in it
        return None


class SystemResolver:
    """The function's resolver (in Lambda, the VPC's or AWS's DNS), asked once per forward."""

    def addresses(self, host: str) -> list[IpAddress]:
        literal = literal_address(host)
        if literal is not None:
            return [literal]
        try:
            found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as error:
            # The host is the worker's: the error names neither it nor the URL.
            raise ForwardFailedError(f"forward: no address ({type(error).__name__})") from None
        addresses = [ipaddress.ip_address(str(sockaddr[0])) for *_, sockaddr in found]
        if not addresses:
            raise ForwardFailedError("forward: no address")
        return list(dict.fromkeys(addresses))
