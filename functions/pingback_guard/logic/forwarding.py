"""The worker's own pingback (in.php's ``pingback``): where a stored result is forwarded.

The URL is kept with the task its owner submitted, and only that task's result is ever sent to
it: a forward cannot be pointed at another owner's task.
"""

from __future__ import annotations

from urllib.parse import urlsplit

MAX_FORWARD_URL_LENGTH = 2048
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})


def is_forwardable_url(url: str) -> bool:
    """https, or plain http to this machine only (a local run): the token travels in it."""
    if len(url) > MAX_FORWARD_URL_LENGTH or not url.isprintable():
        return False
    parts = urlsplit(url)
    if not parts.hostname or parts.username or parts.password:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS)
