"""What the gateway's API writes to its access log for each request, one JSON line: the fields and the
`$context` variable each takes. Kept apart from the constructs (no CDK import) so the cost bench can size
a line (`bench.cost_per_hop`) as CloudWatch Logs bills it."""

from __future__ import annotations

# The REST API's stage: what `AccessLogFormat.json_with_standard_fields` writes (asya_cdk.gateway)
REST_ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "user": "$context.identity.user",
    "caller": "$context.identity.caller",
    "requestTime": "$context.requestTime",
    "httpMethod": "$context.httpMethod",
    "resourcePath": "$context.resourcePath",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
}
# The HTTP API's stage (asya_cdk.http_api): the same, from the variables an HTTP API fills (the path
# asked for instead of the resource matched, which is always the greedy route), and why a request failed
# before or inside the function
HTTP_ACCESS_LOG_FIELDS = {
    "requestId": "$context.requestId",
    "ip": "$context.identity.sourceIp",
    "user": "$context.identity.userArn",
    "caller": "$context.identity.caller",
    "requestTime": "$context.requestTime",
    "httpMethod": "$context.httpMethod",
    "path": "$context.path",
    "status": "$context.status",
    "protocol": "$context.protocol",
    "responseLength": "$context.responseLength",
    "integrationError": "$context.integrationErrorMessage",
    "authorizerError": "$context.authorizer.error",
}
