"""The metrics of a read that checked res.php (GET /tasks/{id}, res.php get): kept out of
observability.py, which every function imports, so that only these two load the read's logic."""

from aws_lambda_powertools.metrics import MetricUnit

from pingback_guard.logic.get_task import Lookup, ReadThroughOutcome
from pingback_guard.observability import emit_delivery, logger, metrics, note_answer


def record_read_through(task_id: str, found: Lookup) -> None:
    """The metrics of a read that checked res.php (GET /tasks/{id}, res.php get)."""
    if found.read_through is None:
        return
    metrics.add_metric(name=found.read_through.value, unit=MetricUnit.Count, value=1)
    if found.delivery is not None:
        emit_delivery(found.delivery)
        note_answer(task_id, found.view.get("kind"), found.view.get("answer_fits") is not False)
    if found.read_through in {ReadThroughOutcome.ERROR, ReadThroughOutcome.ACCOUNT_ERROR}:
        logger.warning(
            "read-through failed; answered PENDING",
            extra={"task_id": task_id, "reason": found.error},
        )
