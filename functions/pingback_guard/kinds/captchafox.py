"""CaptchaFox slider challenges: method ``captchafox`` (CaptchaAI: ``sitekey``, ``pageurl``, a proxy
required; submitted by GET). The answer is a token in ``request`` with the solver's ``user_agent``
beside it, which the site requires again (captchaai 1.0.1, core/registry.py "captchafox")."""

from __future__ import annotations

from pingback_guard.kinds import fields as f
from pingback_guard.kinds.base import Kind
from pingback_guard.kinds.tokens import parse_token

KIND = Kind(
    name="captchafox",
    methods=frozenset({"captchafox"}),
    fields=(
        f.sitekey("sitekey"),
        f.PAGEURL,
        f.PROXY.needed(),
        f.PROXYTYPE.needed(),
        f.COOKIES,
        f.USER_AGENT,
        f.SOFT_ID,
    ),
    answer_may_hold_pipe=False,
    answer_may_carry_user_agent=True,
    lifetime="captchafox",
    expected_solve_seconds=None,
    parse_answer=parse_token,
    sitekey_field="sitekey",
)
