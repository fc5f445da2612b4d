"""`HttpGateway`: the gateway function behind an HTTP API (`gateway.api: http`, docs/deploy.md).

An HTTP API costs $1.00 per million requests where the REST API costs $3.50 (docs/cost.md), and
answers the same: one greedy route (`ANY /` and `ANY /{proxy+}`) in front of the same function, with
the Lambda integration's payload format 1.0. That format is the REST API's proxy event (`path` without
the stage, `requestContext.identity`, `requestTimeEpoch`, `multiValueHeaders`), so the function's REST
resolver, its URLs and its waits work unchanged; its `requestContext.stage` is `$default`, which
`asya_gateway.api.base_url` leaves out of the URLs it hands out, as the stage is out of the API's URL.
Format 2.0 would need Powertools' HTTP API resolver, a second resolver for the same routes, and names
an IAM caller elsewhere (`requestContext.authorizer.iam`); 1.0 keeps one function for both APIs. Either
API buffers the function's answer and ends a request after 29 s here, so the bounded live follow
(`asya_gateway.api.LAMBDA_FOLLOW_SECONDS`) answers the same. Both stages are throttled as the mesh
file's `gateway.throttle` says.

Callers sign with SigV4 (`auth: iam`, `HttpIamAuthorizer` on every route) or present a token of the
mesh's OpenID Connect issuer (`auth: jwt`, `HttpJwtAuthorizer`). `GET /.well-known/{proxy+}` takes no
authorizer, as the REST API's agent card methods do not: the A2A agent card (and, in jwt mode, the
OAuth protected-resource metadata) is read before a caller has credentials; in jwt mode `GET /health`
is open too; so is `GET /follow/{id}`, the stream a follow ticket opens, which a browser's EventSource
reads without a credential (the function refuses it without a valid ticket); and with the stack's Cognito
pool registering MCP hosts' clients, so are `POST /oauth/register` and `/mcp` (the function verifies their
tokens: a registered client is no audience of the authorizer).
With `gateway.cors_origins` the API answers browsers from those origins (`asya.cors`): its CORS
configuration, and `OPTIONS` routes without an authorizer, so a preflight (which carries no
credentials) does not meet the authorizer of the `ANY` routes. An HTTP API has no API keys or
usage plans: `auth: api_key` is refused when the mesh file is loaded (`asya_cdk.gateway_config`).
"""

from __future__ import annotations

import json
from typing import Any

import aws_cdk as cdk
import jsii
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigatewayv2
from aws_cdk import aws_apigatewayv2_authorizers as authorizers
from aws_cdk import aws_apigatewayv2_integrations as integrations
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from constructs import Construct

from asya import cors
from asya.names import MCP_PATH, OAUTH_REGISTER_PATH, mesh_prefix
from asya_cdk.access_logs import HTTP_ACCESS_LOG_FIELDS
from asya_cdk.actor import log_group
from asya_cdk.function import LOG_RETENTION_DAYS
from asya_cdk.gateway_config import REGISTRATION_BURST, REGISTRATION_RATE, GatewayConfig

DEFAULT_STAGE = "$default"  # served at the API's root: no stage in the URL
ANY_PATH = "/{proxy+}"
# what a caller reads before it has credentials: the A2A agent card, and in jwt mode the OAuth metadata
# and liveness
WELL_KNOWN = "/.well-known/{proxy+}"
OPEN_PATHS_JWT = ("/health", WELL_KNOWN)
# a task's events for whoever holds its follow ticket (`asya_gateway.tickets`): the function opens the ticket
TICKET_STREAM = "/follow/{id}"
# HTTP API's own ceiling is 30 s; the function answers within asya_gateway.api.INTEGRATION_TIMEOUT_SECONDS
INTEGRATION_TIMEOUT = cdk.Duration.seconds(29)


class HttpGateway(Construct):
    """Exposes `api` (the HTTP API), `stage` (`$default`) and `url`, the base URL with a trailing slash:
    what the stack's `ApiUrl` output gives the CLI and `asya smoke`, as the REST API's stage URL does."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        namespace: str,
        settings: GatewayConfig,
        handler: lambda_.IFunction,
        jwt: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(scope, construct_id)
        prefix = mesh_prefix(namespace)
        self.api = apigatewayv2.HttpApi(
            self,
            "HttpApi",
            api_name=prefix,
            description=f"asya {namespace}: tasks, their status and live events, flows as MCP tools",
            create_default_stage=False,
            cors_preflight=_cors(settings.cors_origins),
        )
        access_logs = log_group(self, "AccessLogs", f"/aws/apigateway/{prefix}", LOG_RETENTION_DAYS)
        self.stage = self.api.add_stage(
            "Stage",
            stage_name=DEFAULT_STAGE,
            auto_deploy=True,
            access_log_settings=_AccessLogs(access_logs),
            throttle=apigatewayv2.ThrottleSettings(
                rate_limit=settings.throttle.rate, burst_limit=settings.throttle.burst
            ),
        )
        self.url = self.stage.url
        integration = integrations.HttpLambdaIntegration(
            "Function",
            handler,
            payload_format_version=apigatewayv2.PayloadFormatVersion.VERSION_1_0,
            timeout=INTEGRATION_TIMEOUT,
        )
        authorizer = _authorizer(settings.auth, jwt)
        for path in ("/", ANY_PATH):
            self.api.add_routes(
                path=path, methods=[apigatewayv2.HttpMethod.ANY], integration=integration, authorizer=authorizer
            )
        opened = (WELL_KNOWN,) if settings.open_well_known else ()  # `gateway.a2a.public_card: off`: none
        for path in (*(OPEN_PATHS_JWT if settings.auth == "jwt" else opened), TICKET_STREAM):
            self.api.add_routes(
                path=path,
                methods=[apigatewayv2.HttpMethod.GET],
                integration=integration,
                authorizer=apigatewayv2.HttpNoneAuthorizer(),
            )
        if settings.registers_clients:
            self._open_to_registered_clients(integration)
        if settings.cors_origins:
            # a preflight carries no credentials, and `ANY` would take it to the authorizer: its own
            # route, which the function answers (asya.cors) and API Gateway adds the CORS headers to
            for path in ("/", ANY_PATH):
                self.api.add_routes(
                    path=path,
                    methods=[apigatewayv2.HttpMethod.OPTIONS],
                    integration=integration,
                    authorizer=apigatewayv2.HttpNoneAuthorizer(),
                )
        _explain_findings(self, settings.auth)

    def _open_to_registered_clients(self, integration: apigatewayv2.HttpRouteIntegration) -> None:
        """Registration (`asya_gateway.oauth`) and MCP without the JWT authorizer: a host registers
        before anyone signs in, and a registered client's id is no audience the authorizer was given, so
        `/mcp` is left to the function, which verifies every token and takes any client of the pool. The
        registration route is throttled apart (the stage's route settings)."""
        none = apigatewayv2.HttpNoneAuthorizer()
        self.api.add_routes(
            path=OAUTH_REGISTER_PATH, methods=[apigatewayv2.HttpMethod.POST], integration=integration, authorizer=none
        )
        self.api.add_routes(
            path=MCP_PATH,
            methods=[apigatewayv2.HttpMethod.POST, apigatewayv2.HttpMethod.GET],
            integration=integration,
            authorizer=none,
        )
        stage = self.stage.node.default_child
        assert isinstance(stage, apigatewayv2.CfnStage)
        throttle = {"ThrottlingRateLimit": REGISTRATION_RATE, "ThrottlingBurstLimit": REGISTRATION_BURST}
        stage.add_property_override("RouteSettings", {f"POST {OAUTH_REGISTER_PATH}": throttle})


def _cors(origins: list[str]) -> apigatewayv2.CorsPreflightOptions | None:
    """The API's CORS configuration for `gateway.cors_origins` (none without): API Gateway then puts
    these headers on every answer to those origins, in place of the function's."""
    if not origins:
        return None
    return apigatewayv2.CorsPreflightOptions(
        allow_origins=origins,
        allow_methods=[apigatewayv2.CorsHttpMethod(method) for method in cors.ALLOW_METHODS],
        allow_headers=list(cors.ALLOW_HEADERS),
        expose_headers=list(cors.EXPOSE_HEADERS),
        max_age=cdk.Duration.seconds(cors.MAX_AGE_SECONDS),
    )


def _authorizer(auth: str, jwt: dict[str, Any] | None) -> apigatewayv2.IHttpRouteAuthorizer:
    """SigV4 on every route (`auth: iam`), or a token of the mesh's issuer naming one of its audiences
    (`jwt`: the `ASYA_GATEWAY_AUTH` block the function gets, a Cognito pool's issuer and client included)."""
    if auth == "iam":
        return authorizers.HttpIamAuthorizer()
    if auth != "jwt" or jwt is None:
        raise ValueError(f"gateway.auth: an HTTP API authorizes with iam or jwt, not {auth!r}")
    return authorizers.HttpJwtAuthorizer(
        "Jwt",
        jwt["issuer"],
        jwt_audience=list(jwt["audiences"]),
        authorizer_name="jwt",
        identity_source=["$request.header.Authorization"],
    )


@jsii.implements(apigatewayv2.IAccessLogSettings)
class _AccessLogs:
    """`IAccessLogSettings`: where the stage writes its access lines, and their JSON shape."""

    def __init__(self, group: logs.ILogGroup) -> None:
        self._group = group

    @property
    def destination(self) -> apigatewayv2.IAccessLogDestination:
        return apigatewayv2.LogGroupLogDestination(self._group)

    @property
    def format(self) -> apigateway.AccessLogFormat:
        return apigateway.AccessLogFormat.custom(json.dumps(HTTP_ACCESS_LOG_FIELDS, separators=(",", ":")))


def _explain_findings(gateway: HttpGateway, auth: str) -> None:
    """cdk-nag findings that are deliberate, each acknowledged with its reason."""
    opened = "GET /health and GET /.well-known/..." if auth == "jwt" else "GET /.well-known/..."
    opened += ", and OPTIONS (a browser's preflight, with gateway.cors_origins)"
    cdk.Validations.of(gateway.api).acknowledge(
        cdk.Acknowledgment(
            id="AwsSolutions::AwsSolutions-APIG4",
            reason=f"gateway.auth is {auth}: every route needs it except {opened}, which say only that the "
            "gateway is up and how to call it (the A2A agent card, the OAuth protected-resource metadata) and "
            "are read before a caller has credentials; and GET /follow/{id}, one task's events for whoever "
            "holds the follow ticket its owner got through an authorized call, which the function checks.",
        )
    )
