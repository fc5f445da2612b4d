"""The REST API in front of the gateway function (`gateway.api: rest`, the default; the HTTP API is
`asya_cdk.http_api`'s): one greedy proxy, IAM or API-key authorization on every method (none with
sign-in: the function verifies the token), the open agent card, the stream a follow ticket opens
(`GET /follow/{id}?ticket=`), the stage's throttle and logs, and the
findings cdk-nag raises on them, each acknowledged with its reason. Its constructs are made in the
gateway's own scope, so they keep the logical ids they were first deployed with."""

from __future__ import annotations

import json
from dataclasses import dataclass

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_lambda as lambda_
from constructs import Construct

from asya import cors
from asya.names import OAUTH_REGISTER_PATH
from asya_cdk.access_logs import REST_ACCESS_LOG_FIELDS
from asya_cdk.actor import log_group
from asya_cdk.function import LOG_RETENTION_DAYS
from asya_cdk.gateway_config import REGISTRATION_BURST, REGISTRATION_RATE, GatewayConfig
from asya_cdk.nag import acknowledge

STAGE = "api"


@dataclass(frozen=True)
class RestApi:
    """The API, its key (`auth: api_key` only) and its open methods (the agent card's, and the ticket's
    stream)."""

    api: apigateway.LambdaRestApi
    api_key: apigateway.IApiKey | None
    agent_card: list[apigateway.Method]
    ticket_stream: apigateway.Method


def publish_rest_api(
    scope: Construct, *, prefix: str, namespace: str, settings: GatewayConfig, handler: lambda_.IFunction
) -> RestApi:
    """One greedy proxy in front of the function, with IAM or API-key authorization on every method
    (none with sign-in: the function verifies the token)."""
    access_logs = log_group(scope, "AccessLogs", f"/aws/apigateway/{prefix}", LOG_RETENTION_DAYS)
    iam_auth = settings.auth == "iam"
    key_auth = settings.auth == "api_key"
    api = apigateway.LambdaRestApi(
        scope,
        "RestApi",
        handler=handler,
        proxy=True,
        rest_api_name=prefix,
        description=f"asya {namespace}: tasks, their status and live events, flows as MCP tools",
        endpoint_types=[apigateway.EndpointType.REGIONAL],
        default_cors_preflight_options=_cors(settings.cors_origins),
        cloud_watch_role=settings.cloudwatch_role,
        default_method_options=apigateway.MethodOptions(
            authorization_type=apigateway.AuthorizationType.IAM if iam_auth else apigateway.AuthorizationType.NONE,
            api_key_required=key_auth,
        ),
        deploy_options=apigateway.StageOptions(
            stage_name=STAGE,
            access_log_destination=apigateway.LogGroupLogDestination(access_logs),
            access_log_format=apigateway.AccessLogFormat.custom(
                json.dumps(REST_ACCESS_LOG_FIELDS, separators=(",", ":"))
            ),
            logging_level=apigateway.MethodLoggingLevel.ERROR,
            tracing_enabled=settings.tracing,
            throttling_rate_limit=settings.throttle.rate,
            throttling_burst_limit=settings.throttle.burst,
            method_options=_registration_throttle() if settings.registers_clients else None,
        ),
    )
    # the stack's `ApiUrl` output names the URL; the API's own hash-named copy would only confuse
    api.node.try_remove_child("Endpoint")
    agent_card = _open_agent_card(api, handler) if settings.open_well_known else []
    ticket_stream = _ticket_stream(api, handler)
    if settings.registers_clients:
        _open_registration(api, handler)
    if not key_auth:
        return RestApi(api, None, agent_card, ticket_stream)
    plan = api.add_usage_plan(
        "UsagePlan",
        name=prefix,
        description=f"asya {namespace}: callers of the gateway API",
        api_stages=[apigateway.UsagePlanPerApiStage(api=api, stage=api.deployment_stage)],
    )
    key = api.add_api_key("ApiKey", api_key_name=prefix)
    plan.add_api_key(key)
    return RestApi(api, key, agent_card, ticket_stream)


def _cors(origins: list[str]) -> apigateway.CorsOptions | None:
    """`OPTIONS` on every resource for `gateway.cors_origins` (none without): a mock integration that
    answers a preflight without credentials or an invocation; the function's own answers carry the
    allowed origin (`asya.cors`)."""
    if not origins:
        return None
    return apigateway.CorsOptions(
        allow_origins=origins,
        allow_methods=list(cors.ALLOW_METHODS),
        allow_headers=list(cors.ALLOW_HEADERS),
        max_age=cdk.Duration.seconds(cors.MAX_AGE_SECONDS),
    )


def _open_agent_card(api: apigateway.LambdaRestApi, handler: lambda_.IFunction) -> list[apigateway.Method]:
    """`GET /.well-known/{proxy+}` without authorization: the A2A agent card, at A2A 1.0's path and
    0.3's (docs/a2a.md), and with sign-in the OAuth protected-resource metadata (docs/callers.md), are
    what a caller reads before it has credentials. More specific than the greedy proxy, so API Gateway
    routes them here, to the same function, which serves nothing else under it (404); one method, as
    the HTTP API's open route, and one invoke permission (no test invokes from the console)."""
    integration = apigateway.LambdaIntegration(handler, allow_test_invoke=False)
    well_known = api.root.add_resource(".well-known").add_proxy(any_method=False)
    return [
        well_known.add_method(
            "GET", integration, authorization_type=apigateway.AuthorizationType.NONE, api_key_required=False
        )
    ]


def _ticket_stream(api: apigateway.LambdaRestApi, handler: lambda_.IFunction) -> apigateway.Method:
    """`GET /follow/{id}?ticket=`: a task's events for a browser's `EventSource`, which can send no
    signature, key or token (`asya_gateway.tickets`). No authorization here: the function opens the
    ticket before anything else and refuses (401) a missing, forged, lapsed or other task's one, and
    the ticket opens this route only. API Gateway refuses a request without `ticket` (400) before
    any invocation. A top-level path: a resource under `/api/v1/...` would take those paths from the
    greedy proxy, as API Gateway routes a path to its most specific resource."""
    integration = apigateway.LambdaIntegration(handler, allow_test_invoke=False)
    follow = api.root.add_resource("follow").add_resource("{id}")
    return follow.add_method(
        "GET",
        integration,
        authorization_type=apigateway.AuthorizationType.NONE,
        api_key_required=False,
        request_parameters={"method.request.querystring.ticket": True},
        request_validator_options=apigateway.RequestValidatorOptions(
            request_validator_name="follow-ticket", validate_request_parameters=True
        ),
    )


def _open_registration(api: apigateway.LambdaRestApi, handler: lambda_.IFunction) -> None:
    """`POST /oauth/register` without authorization (`asya_gateway.oauth`): an MCP host registers before
    anyone has signed in. A method of its own, beside the greedy proxy, so the stage throttles it apart."""
    integration = apigateway.LambdaIntegration(handler, allow_test_invoke=False)
    register = api.root.add_resource("oauth").add_resource("register")
    register.add_method(
        "POST", integration, authorization_type=apigateway.AuthorizationType.NONE, api_key_required=False
    )


def _registration_throttle() -> dict[str, apigateway.MethodDeploymentOptions]:
    """The registration route's own throttle, well under the stage's (`REGISTRATION_RATE`)."""
    throttle = apigateway.MethodDeploymentOptions(
        throttling_rate_limit=REGISTRATION_RATE, throttling_burst_limit=REGISTRATION_BURST
    )
    return {f"{OAUTH_REGISTER_PATH}/POST": throttle}


def explain_rest_findings(
    api: apigateway.RestApi, agent_card: list[apigateway.Method], ticket_stream: apigateway.Method, auth: str
) -> None:
    """The REST API's deliberate findings (the HTTP API's are `asya_cdk.http_api`'s)."""

    acknowledge(
        api,
        "APIG2",
        "A greedy proxy has no per-path models; the function validates every request (Powertools "
        "validation, each flow's input_schema) and answers 422 with the failing field.",
    )
    acknowledge(
        api,
        "APIG3",
        "Every method needs SigV4, an API key of the mesh's usage plan or a bearer token the function "
        "verifies, and API Gateway's throttling applies; a web ACL can be associated with the stage where "
        "a deployment needs one.",
    )
    acknowledge(
        api,
        "COG4",
        "Callers are AWS principals signing with SigV4 (IAM authorization), services holding an API key, or "
        "callers signed in with an OpenID Connect issuer (a Cognito pool or another) whose tokens the "
        "function verifies itself, one code path for every issuer.",
    )
    for method in agent_card:
        acknowledge(
            method,
            "APIG4",
            "The A2A agent card is public by A2A's design: an agent reads it to learn how to call (and "
            "authenticate to) the mesh. By default it names no flow (gateway.a2a.public_card); every other "
            "path needs authorization.",
        )
        acknowledge(method, "COG4", "The A2A agent card is public (A2A); no authorizer applies to it.")
    acknowledge(
        ticket_stream,
        "APIG4",
        "A browser's EventSource sends no credential: this method streams one task's events to whoever holds "
        "a follow ticket, which the task's owner got through an authorized call. The function refuses any "
        "request whose ticket is missing, forged, lapsed (five minutes) or another task's; it opens nothing "
        "else (docs/security.md).",
    )
    acknowledge(ticket_stream, "COG4", "A follow ticket stands in for the credential here; no authorizer applies.")
    if auth == "jwt":
        acknowledge(
            api,
            "APIG4",
            "gateway.auth is jwt: API Gateway does not verify a third party's tokens on a REST API, so the "
            "function verifies every request's bearer token (signature, issuer, audience, expiry) before "
            "routing it and answers 401 without one; /health and /.well-known/* are public, and so is "
            "POST /oauth/register with the stack's Cognito pool (MCP hosts register before signing in: "
            "public code-flow clients only, capped and throttled, docs/security.md).",
        )
    if auth == "api_key":
        acknowledge(
            api,
            "APIG4",
            "gateway.auth is api_key: every method requires a key of the mesh's usage plan instead of IAM "
            "authorization, by the mesh owner's choice.",
        )
    acknowledge(
        api,
        "IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]",
        "API Gateway's account-wide logging role (gateway.cloudwatch_role) must write to every API's log "
        "groups; AWS's service-role policy is the documented one for it.",
    )
