"""Who may see or act on a task: its owner, or the stack's admin principal."""

from __future__ import annotations

from pingback_guard.domain.task import Task


def may_access(task: Task, principal: str, admin_principal_arn: str = "") -> bool:
    """Unknown and foreign tasks look the same to a caller (404), so ids cannot be probed.

    A task recorded before owners existed (no owner and no nonce) stays readable by any IAM
    caller until its TTL; a provisional result (a nonce but no owner yet) only by the admin.
    """
    if admin_principal_arn and principal == admin_principal_arn:
        return True
    if task.owner is None:
        return task.nonce is None and task.submitted_at is not None
    return task.owner == principal
