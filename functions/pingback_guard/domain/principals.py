"""Which identity owns a task: the IAM principal, with an assumed role counted as the role.

An assumed-role caller's ARN names its session (``assumed-role/Role/session``), and the session
name is whatever the caller chose: owning by it would split one worker fleet's tasks by session,
and let a caller pick a name. A task belongs to the role instead, written as the role's IAM ARN
without its path (the STS ARN does not carry it). The admin principal is compared the same way.
"""

from __future__ import annotations

import re

ASSUMED_ROLE = re.compile(r"arn:(aws[a-z-]*):sts::([0-9]{12}):assumed-role/([^/]+)/[^/]+")
IAM_ROLE = re.compile(r"arn:(aws[a-z-]*):iam::([0-9]{12}):role/(?:[^/]+/)*([^/]+)")


def owner_of(principal_arn: str) -> str:
    """The role's ``arn:<partition>:iam::<account>:role/<name>`` for a role or a session of it;
    any other principal ARN (an IAM user, a federated user) as it is."""
    match = ASSUMED_ROLE.fullmatch(principal_arn) or IAM_ROLE.fullmatch(principal_arn)
    if match is None:
        return principal_arn
    partition, account, role = match.groups()
    return f"arn:{partition}:iam::{account}:role/{role}"
