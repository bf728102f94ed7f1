"""The secret readers the handlers inject into the logic.

Secrets come from Secrets Manager / SSM through Powertools Parameters (cached for max_age);
their values are never logged, and read errors become SecretUnavailableError.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from aws_lambda_powertools.utilities import parameters
from aws_lambda_powertools.utilities.parameters.exceptions import (
    GetParameterError,
    TransformParameterError,
)

from pingback_guard.domain.errors import SecretUnavailableError
from pingback_guard.logic.pingback_secrets import CallbackSecrets

if TYPE_CHECKING:
    from pingback_guard.settings.callback_secret import CallbackSecretSettings


def callback_secrets_reader(
    secret: CallbackSecretSettings,
) -> Callable[[bool], CallbackSecrets]:
    def read(force: bool) -> CallbackSecrets:
        document: Any = _fetch(
            lambda: parameters.get_secret(
                secret.secret_id,
                transform="json",
                max_age=secret.cache_seconds,
                force_fetch=force,
            ),
            "callback secret",
        )
        try:
            return CallbackSecrets.from_document(document)
        except ValueError as error:
            raise SecretUnavailableError(str(error)) from None

    return read


def api_key_reader(parameter_name: str, max_age: int) -> Callable[[], str]:
    def read() -> str:
        value = _fetch(
            lambda: parameters.get_parameter(parameter_name, decrypt=True, max_age=max_age),
            "provider API key",
        )
        if not isinstance(value, str) or not value.strip():
            raise SecretUnavailableError("provider API key parameter is empty")
        return value.strip()

    return read


def _fetch(read: Callable[[], Any], what: str) -> Any:
    try:
        return read()
    except (GetParameterError, TransformParameterError) as error:
        raise SecretUnavailableError(f"{what} unavailable: {type(error).__name__}") from None
