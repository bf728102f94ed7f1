"""The worker's own pingback (in.php's ``pingback``): where a stored result is forwarded, and the
words a 2captcha client reads for a task (res.php and the forward say the same).

The URL is kept with the task its owner submitted, and only that task's result is ever sent to
it: a forward cannot be pointed at another owner's task. A result event for a task with such a
URL is forwarded at least once (the function's retries, then its failure queue).

Only to the public internet: a URL is judged by the addresses its host stands for (a literal as
the system resolver reads it, a name as it resolves when the result is sent), never by its text,
and the forward connects to an address it judged.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any
from urllib.parse import SplitResult, urlsplit

from pingback_guard.data.store import TaskStore
from pingback_guard.domain.task import TaskStatus
from pingback_guard.forward.addresses import AddressResolver, IpAddress, literal_address
from pingback_guard.forward.sender import ForwardSender

MAX_FORWARD_URL_LENGTH = 2048
NOT_READY = "CAPCHA_NOT_READY"
UNSOLVABLE = "ERROR_CAPTCHA_UNSOLVABLE"
PROVIDER_CODE = re.compile(r"ERROR_[A-Z_]{1,60}")
# IPv6 forms that carry an IPv4 address in their last 32 bits (RFC 6052's NAT64 well-known
# prefix, RFC 4291's deprecated IPv4-compatible form): judged as that IPv4 address. Python's
# is_global calls the NAT64 ones global whatever IPv4 address they carry (IANA lists the prefix
# as globally reachable), and the IPv4-compatible ones too before 3.12.4 (this venv: 3.12.1).
IPV4_CARRIERS = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("::/96"))
# Any other IPv6 address is called only inside 2000::/3, the one block IANA allocates as global
# unicast (https://www.iana.org/assignments/ipv6-address-space; RFC 4291, 2.4): the rest is
# reserved, local or special whatever this Python's is_global says of it, e.g. RFC 2765's
# IPv4-translated ::ffff:0:0:0/96, RFC 8215's local-use NAT64 64:ff9b:1::/48, RFC 9602's SRv6
# SIDs 5f00::/16, RFC 3879's deprecated site-local fec0::/10.
GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
# Within it, special-purpose blocks (https://www.iana.org/assignments/iana-ipv6-special-registry)
# that this venv's Python (3.12.1) still calls global: RFC 9637's documentation prefix.
NOT_GLOBAL_UNICAST = (ipaddress.IPv6Network("3fff::/20"),)


def is_forwardable_url(url: str, *, allow_loopback: bool) -> bool:
    """https to a public address: the token travels in it. This machine only when allowed (a
    local run, http too): in Lambda, loopback is the function's own Runtime API. A host that is
    a name is judged again by its addresses when the result is sent (is_allowed_target)."""
    if len(url) > MAX_FORWARD_URL_LENGTH or not url.isprintable():
        return False
    parts = urlsplit(url)
    host = parts.hostname
    if not host or parts.username or parts.password or parts.scheme not in {"http", "https"}:
        return False
    if not _has_usable_port(parts):
        return False
    address = literal_address(host)
    loopback = is_localhost_name(host) or (address is not None and _unwrapped(address).is_loopback)
    if loopback:
        return allow_loopback
    return parts.scheme == "https" and (
        address is None or is_allowed_address(address, allow_loopback=allow_loopback)
    )


def is_localhost_name(host: str) -> bool:
    """``localhost`` and the names under it stand for loopback (RFC 6761, 6.3), with or without
    the root's trailing dot."""
    name = host.rstrip(".").lower()
    return name == "localhost" or name.endswith(".localhost")


def is_allowed_address(address: IpAddress, *, allow_loopback: bool) -> bool:
    """A global unicast address (not private, link-local, shared, reserved, multicast...); an
    IPv6 address that carries an IPv4 one (mapped, 6to4, NAT64) is judged as the IPv4 address
    it reaches."""
    reached = _unwrapped(address)
    if reached.is_loopback:
        return allow_loopback
    if isinstance(reached, ipaddress.IPv6Address) and (
        reached not in GLOBAL_UNICAST or any(reached in block for block in NOT_GLOBAL_UNICAST)
    ):
        return False
    return reached.is_global and not reached.is_multicast


def is_allowed_target(scheme: str, addresses: Sequence[IpAddress], *, allow_loopback: bool) -> bool:
    """Every address a host stands for may be called (a name with one private address among
    public ones is refused: which one a client reaches is the resolver's choice), and plain
    http reaches this machine only."""
    if not addresses:
        return False
    if scheme != "https" and not all(_unwrapped(address).is_loopback for address in addresses):
        return False
    return all(is_allowed_address(address, allow_loopback=allow_loopback) for address in addresses)


def _has_usable_port(parts: SplitResult) -> bool:
    try:
        return parts.port != 0
    except ValueError:  # not a number from 0 to 65535
        return False


def _unwrapped(address: IpAddress) -> IpAddress:
    if (
        not isinstance(address, ipaddress.IPv6Address)
        or address.is_loopback
        or address.is_unspecified
    ):
        return address
    carried = address.ipv4_mapped or address.sixtofour
    if carried is None and any(address in carrier for carrier in IPV4_CARRIERS):
        carried = ipaddress.IPv4Address(int(address) & 0xFFFF_FFFF)
    return carried or address


def protocol_word(view: Mapping[str, Any]) -> tuple[bool, str]:
    """(solved, the token or the provider's word) for a task as GET /tasks/{id} shows it."""
    status = view.get("status")
    if status == TaskStatus.SOLVED.value and view.get("solution"):
        return True, str(view["solution"])
    if status == TaskStatus.PENDING.value:
        return False, NOT_READY
    error = str(view.get("error") or "")
    # An expired task had no answer in time: for the client it is unsolvable (submit again).
    return False, error if PROVIDER_CODE.fullmatch(error) else UNSOLVABLE


class ForwardOutcome(StrEnum):
    """Also the metric the handler counts."""

    SENT = "PingbackForwarded"
    NOTHING_TO_FORWARD = "PingbackForwardSkipped"  # no (allowed) URL, not final, no such task
    REFUSED_ADDRESS = "PingbackForwardRefused"  # the URL's name stands for a non-public address


class ResultForwarder:
    def __init__(
        self,
        store: TaskStore,
        resolver: AddressResolver,
        sender: ForwardSender,
        *,
        allow_loopback: bool,
    ) -> None:
        self._store = store
        self._resolver = resolver
        self._sender = sender
        self._allow_loopback = allow_loopback

    def forward(self, task_id: str, now: float) -> ForwardOutcome:
        """Send the task's result to its own forward URL, at the address judged for it;
        ForwardFailedError (and StoreError) are raised for the caller's retry."""
        task = self._store.get(task_id)
        if task is None or task.forward_url is None or task.status is TaskStatus.PENDING:
            return ForwardOutcome.NOTHING_TO_FORWARD
        if not is_forwardable_url(task.forward_url, allow_loopback=self._allow_loopback):
            return ForwardOutcome.NOTHING_TO_FORWARD
        parts = urlsplit(task.forward_url)
        addresses = self._resolver.addresses(str(parts.hostname))
        if not is_allowed_target(parts.scheme, addresses, allow_loopback=self._allow_loopback):
            return ForwardOutcome.REFUSED_ADDRESS
        _, code = protocol_word(task.view(now))
        self._sender.send(task.forward_url, addresses, task.task_id, code)
        return ForwardOutcome.SENT
