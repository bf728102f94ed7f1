"""The one Logger, Tracer and Metrics every function shares (configured by POWERTOOLS_* env)."""

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
tracer = Tracer()
metrics = Metrics()
