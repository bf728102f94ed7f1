"""How a sweep groups its res.php requests (logic/poll_batches.py)."""

from __future__ import annotations

from pingback_guard.domain.task import DueTask
from pingback_guard.logic.poll_batches import batched_requests, with_user_agents_asked_alone
from pingback_guard.provider.answers import NOT_READY, classify, ready

SUBMITTED = 1_000.0


def due(task_id: str, method: str, due_at: float = SUBMITTED + 30) -> DueTask:
    return DueTask(task_id, due_at, SUBMITTED, 0, method=method)


def test_batches_hold_the_kinds_told_apart_in_one_and_the_most_overdue_go_first() -> None:
    tasks = [
        due("1", "userrecaptcha", SUBMITTED + 40),
        due("2", "post", SUBMITTED + 10),  # an image's text may hold '|': alone
        due("3", "turnstile", SUBMITTED + 20),
        due("4", "userrecaptcha", SUBMITTED + 50),
    ]
    requests = batched_requests(tasks, ids_per_request=2)
    assert [[task.task_id for task in request] for request in requests] == [
        ["2"],
        ["3", "1"],
        ["4"],
    ]


def test_a_ready_answer_bound_to_the_solvers_browser_is_asked_again_alone() -> None:
    # Given a batch of a Cloudflare Challenge, a CaptchaFox and a reCAPTCHA, all ready, and a
    # Cloudflare Challenge not ready yet
    batch = [
        due("1", "cloudflare_challenge"),
        due("2", "captchafox"),
        due("3", "userrecaptcha"),
        due("4", "cloudflare_challenge"),
    ]
    answers = {
        "1": ready("cf-clearance"),
        "2": ready("fox-token"),
        "3": ready("03AGdBq2-token"),
        "4": classify(NOT_READY),
    }
    # When the batch's answers are read
    read = with_user_agents_asked_alone(batch, answers)
    # Then the ready ones whose user agent the batch could not carry are asked again alone,
    # and the rest are settled from the batch
    assert [task.task_id for task in read.ask_alone] == ["1", "2"]
    assert [task.task_id for task in read.settled] == ["3", "4"]
    assert set(read.answers) == {"3", "4"}


def test_an_answer_asked_alone_is_settled_as_it_came() -> None:
    alone = [due("1", "cloudflare_challenge")]
    read = with_user_agents_asked_alone(alone, {"1": ready("cf-clearance", "Mozilla/5.0 X")})
    assert (read.settled, read.ask_alone) == (alone, [])
    assert read.answers["1"].user_agent == "Mozilla/5.0 X"
