"""Example subscriber of pingback-guard's result events: applies each final result once.

Events are at-least-once (the table stream, the pipe and the bus may each deliver a result more
than once), so the handler is wrapped in Powertools' Idempotency utility keyed on the result
(task id + final status), with its own DynamoDB table. See docs/events.md.
"""
