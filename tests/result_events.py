"""A result event's detail as the pipe's input template renders it (docs/events.md): what the
pipe's tests expect and what the example consumer's tests feed it."""

from __future__ import annotations

OWNER = "arn:aws:iam::123456789012:user/worker"


def rendered_detail(task_id: str, status: str, solution: str, **changes: str) -> dict[str, str]:
    """A result stored by read-through after PENDING; ``changes`` replace fields."""
    return {
        "schema_version": "1",
        "task_id": task_id,
        "status": status,
        "previous_status": "PENDING",
        "delivered_via": "read_through",
        "finished_at_earliest": "1764532800.25",
        "finished_at_latest": "1764532805.5",
        "usable_until": "1764532920.25",
        "error": "",
        "owner": OWNER,
        "origin": "submit",
        "pingback_forward": "yes",
        "solution": solution,
        **changes,
    }
