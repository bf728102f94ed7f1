"""ConnectionSender: posts a message to one WebSocket connection through API Gateway's
Management API (@connections), mapping its errors to domain errors."""

from __future__ import annotations

from typing import Protocol

from botocore.exceptions import BotoCoreError, ClientError

from pingback_guard.domain.errors import ConnectionGoneError, PushError

GONE = "GoneException"


class ConnectionSender(Protocol):
    def send(self, connection_id: str, message: bytes) -> None:
        """ConnectionGoneError when the connection is gone; PushError when it was not sent."""


class ManagementApiClient(Protocol):
    """The one call of boto3's ``apigatewaymanagementapi`` client used here."""

    def post_to_connection(self, *, ConnectionId: str, Data: bytes) -> object: ...


class ManagementApiSender:
    def __init__(self, client: ManagementApiClient) -> None:
        self._client = client

    def send(self, connection_id: str, message: bytes) -> None:
        try:
            self._client.post_to_connection(ConnectionId=connection_id, Data=message)
        except ClientError as error:
            code = error.response.get("Error", {}).get("Code", "")
            if code == GONE:
                raise ConnectionGoneError(connection_id) from None
            raise PushError(f"PostToConnection failed: {code}") from None
        except BotoCoreError as error:
            raise PushError(f"PostToConnection: {type(error).__name__}") from None
