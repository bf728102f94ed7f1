"""Who may see or act on a task: its owner, or the stack's admin principal."""

from __future__ import annotations

from enum import Enum

from pingback_guard.domain.task import Task


class Access(Enum):
    NONE = "none"  # answered exactly as an unknown task
    CLAIM = "claim"  # a claimant of a contested registration: the task, never a result
    FULL = "full"


def access_of(task: Task, principal: str, admin_principal_arn: str = "") -> Access:
    """Unknown and foreign tasks look the same to a caller (404), so ids cannot be probed.

    A task recorded before owners existed (no owner and no nonce) stays readable by any IAM
    caller until its TTL; a provisional result (a nonce but no owner yet) only by the admin.
    While two registrations claim one id, neither claimant reads a result: the pingback that
    carries one of their capabilities decides whose task it is.
    """
    if admin_principal_arn and principal == admin_principal_arn:
        return Access.FULL
    if task.is_contested:
        claimants = {task.owner, *task.rivals.values()}
        return Access.CLAIM if principal in claimants else Access.NONE
    if task.owner is None:
        legacy = task.nonce is None and task.submitted_at is not None
        return Access.FULL if legacy else Access.NONE
    return Access.FULL if task.owner == principal else Access.NONE


def may_access(task: Task, principal: str, admin_principal_arn: str = "") -> bool:
    return access_of(task, principal, admin_principal_arn) is Access.FULL
