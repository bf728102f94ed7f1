"""Domain exceptions. boto3 and requests errors are turned into these at the edge."""


class PingbackGuardError(Exception):
    """Base of every error this package raises on purpose."""


class ConfigurationError(PingbackGuardError):
    """A setting is missing or invalid: raised at cold start."""


class SecretUnavailableError(PingbackGuardError):
    """A secret (callback secret, provider API key) could not be read or is malformed."""


class StoreError(PingbackGuardError):
    """The task table could not do what was asked."""


class StoreUnavailableError(StoreError):
    """Throttled, unreachable or failing: worth trying again later (or via the DLQ)."""


class DeadLetterError(PingbackGuardError):
    """The dead-letter queue did not accept a message."""


class ResultNotSafeError(PingbackGuardError):
    """Neither the table nor the dead-letter queue holds the result: the caller must not see 200."""


class InvalidCallbackError(PingbackGuardError):
    """A callback request that does not carry a well-formed id and code."""


class InvalidDeadLetterError(PingbackGuardError):
    """A dead-letter message that is not one this stack writes, or breaks the edge's rules."""


class ProviderError(PingbackGuardError):
    """The CAPTCHA provider did not give a usable answer.

    ``code`` is the provider's own answer (``ERROR_ZERO_BALANCE``...) when it gave one.
    """

    def __init__(self, message: str, *, code: str = "") -> None:
        super().__init__(message)
        self.code = code


class ProviderAccountError(ProviderError):
    """Key wrong, unknown, out of balance or IP not allowed: stop and alert a human."""


class ProviderRetryableError(ProviderError):
    """No slot, rate limit, server error, timeout: back off and try again.

    ``resend_is_safe`` is False when the request may have reached the provider (a submit that
    lost its answer): sending it again could create and pay for a second task.
    """

    def __init__(self, message: str, *, resend_is_safe: bool = True, code: str = "") -> None:
        super().__init__(message, code=code)
        self.resend_is_safe = resend_is_safe


class ProviderRejectedError(ProviderError):
    """The provider refused this request for good (bad sitekey, page url, parameters...)."""


class TaskNotRecordedError(PingbackGuardError):
    """The provider accepted a task but the table could not record it as PENDING."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {task_id} accepted by the provider but not recorded")
        self.task_id = task_id


class ProviderBatchRefusedError(ProviderRetryableError):
    """res.php answered an ``ids=`` request out of shape: ask one id per request for now."""


class PushError(PingbackGuardError):
    """A pushed message did not reach its connection (the worker's paced GET covers it)."""


class ConnectionGoneError(PushError):
    """The connection no longer exists (API Gateway's GoneException): forget it."""


class ForwardFailedError(PingbackGuardError):
    """A worker's own pingback URL did not take a forwarded result: retried, then parked."""


class PollerWakeError(PingbackGuardError):
    """The poller could not be started now (throttled, refused, unreachable): the schedule's
    next invocation is the net."""


class ProviderThreadsBusyError(ProviderRetryableError):
    """Every provider account's threads are in use (threadsinfo, or the provider's own busy
    refusal): nothing was sent, so the submit may be sent again later."""
