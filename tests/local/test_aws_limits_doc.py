"""docs/aws-limits.md cannot drift from the twin: every limit it lists is the constant the twin (or
moto) applies, beside the same AWS page; and what moto enforces itself, it does refuse."""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "aws-limits.md"
UNITS = {"bytes": 1, "KB": 1024, "MB": 1024 * 1024, "s": 1}
VALUE = re.compile(r"^([\d,]+) (bytes|KB|MB|s)$")
CONSTANT = re.compile(r"^`([\w.]+):(\w+)`$")
LINK = re.compile(r"\]\((https://[^)\s]+)\)")
MOTO_ITEM_BYTES = 405000  # moto/dynamodb/models/dynamo_type.py refuses items larger than this


def rows() -> list[dict[str, str]]:
    lines = [line for line in DOC.read_text(encoding="utf-8").splitlines() if line.startswith("|")]
    header = [cell.strip() for cell in lines[0].strip("|").split("|")]
    return [
        dict(zip(header, (cell.strip() for cell in line.strip("|").split("|")), strict=True))
        for line in lines[2:]
    ]


def value_of(cell: str) -> float:
    found = VALUE.match(cell)
    assert found, f"not a value: {cell!r}"
    return int(found[1].replace(",", "")) * UNITS[found[2]]


def test_the_doc_lists_every_limit_of_the_twin() -> None:
    limits = importlib.import_module("infra.local.apigateway.limits")
    listed = {CONSTANT.match(row["Constant"]) for row in rows()}
    names = {found[2] for found in listed if found}
    assert {
        name for name in vars(limits) if name.isupper() and not name.endswith("QUOTAS")
    } <= names


@pytest.mark.parametrize("row", rows(), ids=lambda row: row["Limit"])
def test_each_limit_is_the_constant_applied_beside_the_same_aws_page(row: dict[str, str]) -> None:
    value = value_of(row["Value"])
    found = CONSTANT.match(row["Constant"])
    if found is None:  # moto's DynamoDB item check is a literal in its code
        assert row["Limit"] == "DynamoDB item" and value >= MOTO_ITEM_BYTES
        return
    module = importlib.import_module(found[1])
    assert getattr(module, found[2]) == value
    if found[1].startswith("infra."):
        beside = inspect.getsource(module) + " ".join(map(str, vars(module).values()))
        pages = LINK.findall(row["AWS page"])
        assert pages and any(page in beside for page in pages), f"{found[2]}: no AWS page beside it"


@mock_aws
def test_moto_refuses_an_sqs_message_over_the_limit() -> None:
    sqs = boto3.client("sqs", region_name="us-east-1")
    url = sqs.create_queue(QueueName="limits")["QueueUrl"]
    limit = int(value_of(next(r for r in rows() if r["Limit"] == "SQS message")["Value"]))
    sqs.send_message(QueueUrl=url, MessageBody="x" * limit)
    with pytest.raises(ClientError):
        sqs.send_message(QueueUrl=url, MessageBody="x" * (limit + 1))


@mock_aws
def test_moto_refuses_a_dynamodb_item_over_the_limit() -> None:
    dynamodb = boto3.client("dynamodb", region_name="us-east-1")
    dynamodb.create_table(
        TableName="limits",
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    limit = int(value_of(next(r for r in rows() if r["Limit"] == "DynamoDB item")["Value"]))
    with pytest.raises(ClientError) as refused:
        dynamodb.put_item(TableName="limits", Item={"k": {"S": "1"}, "v": {"S": "x" * limit}})
    assert "Item size has exceeded" in refused.value.response["Error"]["Message"]
