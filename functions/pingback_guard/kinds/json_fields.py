"""The JSON routes' documents (POST /tasks, PUT /tasks/{id}) as in.php fields.

Today's shape ``{"method", "sitekey", "page_url", "extras": {...}}`` and the flat in.php form
both work, and the 2captcha SDKs' own names (``score``, ``minLen``, the proxy dict ...) are read
as the provider fields they stand for. The fields are then checked by parse_provider_fields.
"""

from __future__ import annotations

from collections.abc import Mapping

from pingback_guard.domain.task import CaptchaRequest
from pingback_guard.kinds.registry import InvalidFieldError, kind_of, parse_provider_fields

DEFAULT_METHOD = "userrecaptcha"
# 2captcha-python's rename_params, minus callback: a pingback is the stack's to set.
SDK_NAMES = {
    "caseSensitive": "regsense",
    "minLen": "min_len",
    "maxLen": "max_len",
    "minLength": "min_len",
    "maxLength": "max_len",
    "hintText": "textinstructions",
    "hintImg": "imginstructions",
    "url": "pageurl",
    "page_url": "pageurl",
    "score": "min_score",
    "rows": "recaptcharows",
    "cols": "recaptchacols",
    "canSkip": "can_no_answer",
    "apiServer": "api_server",
    "softId": "soft_id",
    "datas": "data-s",
    "previousId": "previousID",
    # @2captcha/captcha-solver's renameParams for the grid.
    "imgType": "img_type",
    "minClicks": "min_clicks",
    "maxClicks": "max_clicks",
}
MAX_NUMBER_DIGITS = 64


def provider_fields_from_json(document: object) -> dict[str, str]:
    if not isinstance(document, Mapping):
        raise InvalidFieldError("body", "body must be a JSON object")
    extras = document.get("extras", {})
    if not isinstance(extras, Mapping):
        raise InvalidFieldError("extras", "extras must be an object")
    method = document.get("method", DEFAULT_METHOD)
    if not isinstance(method, str):
        raise InvalidFieldError("method", "method must be text")
    fields = {"method": method}
    for name, value in [*document.items(), *extras.items()]:
        if name not in {"method", "extras"}:
            _add(fields, method, str(name), value)
    return fields


def _add(fields: dict[str, str], method: str, name: str, value: object) -> None:
    if name == "proxy" and isinstance(value, Mapping):
        _add(fields, method, "proxytype", value.get("type"))
        _add(fields, method, "proxy", value.get("uri"))
        return
    provider_name = _provider_name(method, name)
    if provider_name in fields:
        raise InvalidFieldError(provider_name, f"{provider_name} is given twice")
    fields[provider_name] = _text(provider_name, value)


def _provider_name(method: str, name: str) -> str:
    if name == "sitekey":
        kind = kind_of(method)
        return kind.sitekey_field if kind and kind.sitekey_field else name
    return SDK_NAMES.get(name, name)


def _text(name: str, value: object) -> str:
    if isinstance(value, bool):
        return str(int(value))
    if isinstance(value, int):
        if abs(value) >= 10**MAX_NUMBER_DIGITS:
            raise InvalidFieldError(name, f"{name} must be a short number")
        return str(value)
    if isinstance(value, float | str):
        return str(value)
    raise InvalidFieldError(name, f"{name} must be a string or a number")


def request_from_json(document: object, *, secrets_sent: bool = True) -> CaptchaRequest:
    """A JSON route's document as the request it asks for; InvalidFieldError names what is wrong."""
    return parse_provider_fields(provider_fields_from_json(document), secrets_sent=secrets_sent)
