"""The API Gateway and Lambda limits the local gateways enforce, each once, beside its AWS page.

docs/aws-limits.md lists them with where AWS applies each and what a caller sees;
tests/template/test_docs.py holds the two in step.
"""

HTTP_API_QUOTAS = (
    "https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-quotas.html"
)
WEBSOCKET_API_QUOTAS = (
    "https://docs.aws.amazon.com/apigateway/latest/developerguide/"
    "apigateway-execution-service-websocket-limits-table.html"
)
LAMBDA_QUOTAS = "https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html"

# HTTP_API_QUOTAS: "Total combined size of request line and header values", 10240 bytes.
HTTP_API_REQUEST_LINE_AND_HEADERS_BYTES = 10240
# HTTP_API_QUOTAS: "Payload size", 10 MB.
HTTP_API_PAYLOAD_BYTES = 10 * 1024 * 1024
# HTTP_API_QUOTAS: "Maximum integration timeout", 30 seconds.
HTTP_API_INTEGRATION_TIMEOUT_SECONDS = 30.0
# LAMBDA_QUOTAS: "Invocation payload (request and response)", 6 MB each for synchronous
# invocations; Lambda refuses a larger request ("Request must be smaller than 6291456 bytes").
LAMBDA_SYNC_PAYLOAD_BYTES = 6 * 1024 * 1024
# WEBSOCKET_API_QUOTAS: "Integration timeout", 50 milliseconds - 29 seconds.
WEBSOCKET_INTEGRATION_TIMEOUT_SECONDS = 29.0
# WEBSOCKET_API_QUOTAS: "Message payload size", 128 KB; a larger message closes the connection
# with code 1009.
WEBSOCKET_MESSAGE_BYTES = 128 * 1024
# WEBSOCKET_API_QUOTAS: "WebSocket frame size", 32 KB: a longer message goes in several frames.
WEBSOCKET_FRAME_BYTES = 32 * 1024
