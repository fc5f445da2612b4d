"""What the gateway's API writes to its access log for each request, one JSON line: the fields and the
`$context` variable each takes. Kept apart from the constructs (no CDK import) so the cost bench can size
a line (`bench.cost_per_hop`) as CloudWatch Logs bills it.

A line says what an operator needs to trace one request: its id (the one API Gateway answers the caller
with in a header), its caller and address, when it came
(milliseconds since the epoch: half the size of the written-out date, and what Logs Insights compares),
the method and the path asked for, the answer's status, length and latency, and why it failed before
or inside the function. Nothing else: the calling principal's id beside its ARN (`caller`: the same
principal again), the protocol (`HTTP/1.1` on every line) and the matched resource (the greedy proxy
on every line) say nothing more, and each line pays for every byte it carries.
"""

from __future__ import annotations

# The REST API's stage (asya_cdk.gateway)
REST_ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "user": "$context.identity.user",
    "requestTime": "$context.requestTimeEpoch",
    "httpMethod": "$context.httpMethod",
    "path": "$context.path",
    "status": "$context.status",
    "responseLength": "$context.responseLength",
    "latency": "$context.responseLatency",
    "integrationError": "$context.integrationErrorMessage",
}
# The HTTP API's stage (asya_cdk.http_api): the same, with the caller named by its ARN, and why an
# authorizer refused
HTTP_ACCESS_LOG_FIELDS = {
    **REST_ACCESS_LOG_FIELDS,
    "user": "$context.identity.userArn",
    "authorizerError": "$context.authorizer.error",
}
