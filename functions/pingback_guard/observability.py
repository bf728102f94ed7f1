"""The one Logger, Tracer and Metrics every function shares (configured by POWERTOOLS_* env)."""

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
# botocore only: the X-Ray SDK records an exception's text, and a failed requests/httplib call's
# text carries the provider URL with its API key. AWS calls record no secret (the SDK keeps only
# whitelisted request fields: table and index names, never item values).
tracer = Tracer(patch_modules=("botocore",))
metrics = Metrics()
