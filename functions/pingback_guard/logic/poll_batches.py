"""How a sweep groups its res.php requests: ``ids=`` batches where an answer can be told apart
in one, one id per request where it cannot, and a ready answer asked again alone when a batch
had no room for what comes beside it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pingback_guard.domain.task import DueTask
from pingback_guard.kinds.registry import may_answer_with_user_agent, polled_alone
from pingback_guard.logic.poll_accounts import by_account
from pingback_guard.provider.answers import AnswerKind, ProviderAnswer


def batched_requests(tasks: Sequence[DueTask], ids_per_request: int) -> list[list[DueTask]]:
    """ids= batches (per provider account) of the kinds whose answers never hold '|'; every
    other task alone. The most overdue first, whatever its kind: a sweep that runs out of time
    or budget leaves the latest checks for the next one, never the same old tasks again."""
    ordered = sorted(tasks, key=lambda task: task.due_at)
    batches = [
        group[start : start + ids_per_request]
        for group in by_account(task for task in ordered if not polled_alone(task.method))
        for start in range(0, len(group), ids_per_request)
    ]
    alone = [[task] for task in ordered if polled_alone(task.method)]
    return sorted(batches + alone, key=lambda request: request[0].due_at)


@dataclass(frozen=True)
class BatchAnswers:
    """A batch's answers to settle now, and the tasks to ask again alone first."""

    settled: list[DueTask]
    answers: dict[str, ProviderAnswer]
    ask_alone: list[DueTask]


def with_user_agents_asked_alone(
    batch: Sequence[DueTask], answers: Mapping[str, ProviderAnswer]
) -> BatchAnswers:
    """An ids= answer joins bare answers with '|': the solver's user agent a token is bound to
    (CaptchaFox's token, Cloudflare Challenge's cf_clearance) has no room in it. A ready answer
    of a kind that may come with one is asked again alone (``id=``, JSON), which carries it;
    stored from the batch, the token would reach its worker without it.

    reCAPTCHA Enterprise on CaptchaAI comes with a user agent too, but shares ``userrecaptcha``
    with every other reCAPTCHA, and the due index holds the method, not the fields: asking every
    ready reCAPTCHA again would double the poll net's requests for the commonest kind. An
    Enterprise token recovered from a batch comes without it (read through by a GET, with it)."""
    if len(batch) == 1:
        return BatchAnswers(list(batch), dict(answers), [])
    again = [
        task
        for task in batch
        if may_answer_with_user_agent(task.method) and _is_ready(answers.get(task.task_id))
    ]
    asked_again = {task.task_id for task in again}
    return BatchAnswers(
        [task for task in batch if task.task_id not in asked_again],
        {task_id: answer for task_id, answer in answers.items() if task_id not in asked_again},
        again,
    )


def _is_ready(answer: ProviderAnswer | None) -> bool:
    return answer is not None and answer.kind is AnswerKind.READY
