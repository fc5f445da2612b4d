"""`StatusGateway`: the HTTP API over task records, the stream consumer and the deadline backstop
(docs/status.md).

- `asya-<ns>-gateway` behind the REST API `asya-<ns>`: one greedy proxy, so every path the function
  serves (`/api/v1/...`, `/a2a`, `/mcp`, `/health`) routes without a resource per path, and the function
  validates requests itself. Callers sign requests with SigV4 (`auth: iam`, the default), present a
  key of the mesh's usage plan (`auth: api_key`), or send a bearer token of an OpenID Connect issuer
  (`auth: jwt`), which the function verifies itself: a REST API verifies no third party's tokens, so
  its methods take every request and the function refuses what does not sign in. The A2A agent card
  (`GET /.well-known/agent-card.json` and `/.well-known/agent.json`, under `GET /.well-known/{proxy+}`)
  has a method of its own, readable
  without credentials. With `jwt.cognito: true` the stack makes the issuer: a Cognito user pool with its
  hosted domain, an app client for people, a machine client for scripts and an `admins` group
  (`asya_cdk.user_pool`); the API function registers MCP hosts' clients of it (`POST /oauth/register`,
  `cognito-idp:CreateUserPoolClient` on that pool alone). With `api: http` the same
  function is behind an HTTP API instead (`asya_cdk.http_api`), at under a third of the price.
- `asya-<ns>-gateway-stream` turns every change of a task record into a `status` event. A batch it
  cannot write is bisected and retried, then its position goes to `asya-<ns>-gateway-stream-dlq`,
  watched by an alarm, so a lost event is never silent.
- `asya-<ns>-gateway-backstop` runs on a schedule and fails open tasks whose deadline passed.

Each function has its own role (no managed policies) and log group, and runs on the sidecar layer.
"""

from __future__ import annotations

import dataclasses

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_apigatewayv2 as apigatewayv2
from aws_cdk import aws_events as events
from aws_cdk import aws_events_targets as targets
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_lambda_event_sources as sources
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_secretsmanager as secretsmanager
from aws_cdk import aws_sqs as sqs
from constructs import Construct

from asya.fans import FAN_ROOT
from asya.names import (
    BY_DEADLINE,
    BY_ID_PREFIX,
    BY_STATUS,
    GATEWAY,
    GATEWAY_BACKSTOP,
    GATEWAY_STREAM,
    GATEWAY_STREAM_DEAD_LETTERS,
    mesh_prefix,
    resource_name,
)
from asya.results import PREFIX as RESULTS_PREFIX
from asya_cdk.actor import dead_letter_queue, nag_arn
from asya_cdk.environment import PROGRAMS_FILE, MeshNames, gateway_environment
from asya_cdk.function import MeshFunction
from asya_cdk.gateway_config import UserPoolNames
from asya_cdk.http_api import HttpGateway
from asya_cdk.layer import SidecarLayer, gateway_code
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.mesh_secrets import generated_secret
from asya_cdk.nag import acknowledge
from asya_cdk.rest_api import explain_rest_findings, publish_rest_api
from asya_cdk.tasks import TaskTables
from asya_cdk.user_pool import SignInPool, sign_in_pool

DEFAULT_TIMEOUT = cdk.Duration.minutes(1)  # the stream consumer's and the backstop's
API_TIMEOUT = cdk.Duration.seconds(30)  # just over API Gateway's 29 s integration timeout


class StatusGateway(Construct):
    """Exposes `api` (the REST API, or the HTTP API with `api: http`), `url` (its base URL), `api_key`
    (None unless `auth: api_key`), `agent_card` (the A2A card's open methods on the REST API), the
    functions `gateway`, `stream` and `backstop`, `stream_dead_letters`, `schedule`, and `sign_in`, the
    Cognito pool with its clients and domain (None unless `jwt.cognito`)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        mesh: LoadedMesh,
        tables: TaskTables,
        bucket: s3.IBucket,
        layer: SidecarLayer,
        names: MeshNames,
    ) -> None:
        super().__init__(scope, construct_id)
        self.mesh = mesh
        self.namespace = mesh.config.namespace
        self.settings = mesh.config.gateway
        self.prefix = mesh_prefix(self.namespace)
        self.sign_in, pool = self._user_pool()
        self.cursor_secret = self._cursor_secret()
        self.names = dataclasses.replace(names, user_pool=pool, cursor_secret=self.cursor_secret.secret_arn)
        self.layer = layer
        # one asset (and one build) for the three functions, with the flows' programs the API starts tasks on
        programs = {PROGRAMS_FILE: mesh.programs_json()} if mesh.programs else None
        self.code = gateway_code(layer.architecture.name, programs)
        self.gateway = self._serve(tables, bucket)
        self.stream, self.stream_dead_letters = self._follow_stream(tables)
        self.backstop, self.schedule = self._enforce_deadlines(tables)
        self.api: apigateway.RestApi | apigatewayv2.HttpApi
        self.api_key: apigateway.IApiKey | None = None
        self.agent_card: list[apigateway.Method] = []  # the REST API's open methods (the HTTP API's route)
        self.ticket_stream: apigateway.Method | None = None  # the REST API's `GET /follow/{id}`
        if self.settings.api == "http":
            http = HttpGateway(
                self,
                "Http",
                namespace=self.namespace,
                settings=self.settings,
                handler=self.gateway.function,
                jwt=self.settings.auth_document(self.names.user_pool).get("jwt"),
            )
            self.api, self.url = http.api, http.url
        else:
            rest = publish_rest_api(
                self,
                prefix=self.prefix,
                namespace=self.namespace,
                settings=self.settings,
                handler=self.gateway.function,
            )
            self.api, self.api_key, self.agent_card = rest.api, rest.api_key, rest.agent_card
            self.ticket_stream = rest.ticket_stream
            self.url = self.api.url
        _explain_findings(self, self.namespace, bucket, self.settings.auth)

    def _user_pool(self) -> tuple[SignInPool | None, UserPoolNames | None]:
        """With `jwt.cognito: true`, the issuer the gateway trusts (`asya_cdk.user_pool`)."""
        jwt = self.settings.jwt
        if jwt is None or not jwt.cognito:
            return None, None
        made = sign_in_pool(self, prefix=self.prefix, jwt=jwt)
        return made, made.names

    def _function(
        self,
        construct_id: str,
        name: str,
        handler: str,
        *,
        timeout: cdk.Duration = DEFAULT_TIMEOUT,
        memory: int = 256,
        reserved_concurrency: int | None = None,
    ) -> MeshFunction:
        return MeshFunction(
            self,
            construct_id,
            name=resource_name(self.namespace, name),
            code=self.code,
            handler=handler,
            environment=gateway_environment(self.mesh, self.names, name),
            layer=self.layer,
            timeout=timeout,
            memory=memory,
            tracing=self.settings.tracing,
            system_log_level=self.settings.system_log_level,
            reserved_concurrency=reserved_concurrency,
        )

    def _serve(self, tables: TaskTables, bucket: s3.IBucket) -> MeshFunction:
        """The API's function: creates, lists, follows, cancels and resumes tasks."""
        gateway = self._function(
            "Api",
            GATEWAY,
            "asya_gateway.api.lambda_handler",
            timeout=API_TIMEOUT,
            memory=512,
            reserved_concurrency=self.settings.reserved_concurrency,
        )
        gateway.allow(
            ["dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:BatchGetItem",
             "dynamodb:Query", "dynamodb:Scan"],
            tables.tasks.table_arn,
        )  # fmt: skip
        gateway.allow(
            ["dynamodb:Query"],
            tables.index_arn(BY_STATUS),
            tables.index_arn(BY_DEADLINE),
            tables.index_arn(BY_ID_PREFIX),
        )
        # Query: following a task; PutItem/BatchWriteItem: FLY events posted by actors outside the mesh
        gateway.allow(["dynamodb:Query", "dynamodb:PutItem", "dynamodb:BatchWriteItem"], tables.events.table_arn)
        # a task's result, the envelope x-pause kept for a resume, and x-sump's copy for a redrive
        gateway.allow(["s3:GetObject"], bucket.arn_for_objects(f"{RESULTS_PREFIX}/{self.namespace}/*"))
        # x-sump's arrivals: listed (Scan), shown (Query), marked redriven (UpdateItem)
        gateway.allow(["dynamodb:Scan", "dynamodb:Query", "dynamodb:UpdateItem"], tables.sump.table_arn)
        # the queues it sends to (every queue of the mesh, by name): `Mesh`, `asya_cdk.queue_grants`
        self.cursor_secret.grant_read(gateway.function)  # the API function alone
        if self.sign_in is not None and self.settings.registers_clients:
            # MCP hosts' clients of the pool, made and counted by the function (`asya_gateway.oauth`)
            gateway.allow(
                ["cognito-idp:CreateUserPoolClient", "cognito-idp:ListUserPoolClients"],
                self.sign_in.pool.user_pool_arn,
            )
        return gateway

    def _cursor_secret(self) -> secretsmanager.Secret:
        """The secret the gateway's cursor key is derived from (`asya_gateway.cursors`), read by the API
        function alone."""
        return generated_secret(
            self,
            "CursorSecret",
            description=f"asya {self.namespace}: the gateway seals its listing cursors with a key derived from it",
            rotation="The secret only keys the listings' cursors: replacing its value makes cursors handed out "
            "before it a 400 (the client lists again from the first page), so it is rotated by putting a new "
            "random value, without a rotation function.",
        )

    def _follow_stream(self, tables: TaskTables) -> tuple[MeshFunction, sqs.Queue]:
        """Task changes become `status` events, whoever wrote them; what cannot be written is kept."""
        dead_letters = dead_letter_queue(
            self, "StreamDeadLetters", resource_name(self.namespace, GATEWAY_STREAM_DEAD_LETTERS)
        )
        stream = self._function("Stream", GATEWAY_STREAM, "asya_gateway.stream.lambda_handler")
        stream.allow(["dynamodb:PutItem", "dynamodb:BatchWriteItem"], tables.events.table_arn)
        stream.function.add_event_source(
            sources.DynamoEventSource(
                tables.tasks,
                starting_position=lambda_.StartingPosition.TRIM_HORIZON,
                batch_size=100,
                report_batch_item_failures=True,
                bisect_batch_on_error=True,
                retry_attempts=5,
                on_failure=sources.SqsDlq(dead_letters),
                # a wide fan-out's buckets and counters are items of the table, not tasks: filtered out
                # before an invocation (the consumer skips them too, `asya_gateway.stream`)
                filters=[
                    lambda_.FilterCriteria.filter(
                        {"dynamodb": {"NewImage": {FAN_ROOT: {"S": lambda_.FilterRule.not_exists()}}}}
                    )
                ],
            )
        )
        return stream, dead_letters

    def _enforce_deadlines(self, tables: TaskTables) -> tuple[MeshFunction, events.Rule]:
        """Fails overdue tasks on a schedule, so a deadline holds even when no envelope is moving."""
        backstop = self._function("Backstop", GATEWAY_BACKSTOP, "asya_gateway.backstop.lambda_handler")
        backstop.allow(["dynamodb:Query"], tables.index_arn(BY_DEADLINE))
        backstop.allow(["dynamodb:GetItem", "dynamodb:UpdateItem"], tables.tasks.table_arn)
        backstop.allow(["dynamodb:PutItem"], tables.events.table_arn)
        # every run catches up on what earlier runs missed, so a failed run is not worth retrying
        backstop.function.configure_async_invoke(retry_attempts=0)
        period = cdk.Duration.minutes(self.settings.backstop_minutes)
        rule = events.Rule(
            self,
            "Schedule",
            rule_name=resource_name(self.namespace, GATEWAY_BACKSTOP),
            description=f"asya {self.namespace}: fail open tasks whose deadline passed",
            schedule=events.Schedule.rate(period),
            targets=[targets.LambdaFunction(backstop.function, max_event_age=period, retry_attempts=2)],
        )
        return backstop, rule


def _explain_findings(gateway: StatusGateway, namespace: str, bucket: s3.IBucket, auth: str) -> None:
    """cdk-nag findings that are deliberate, each acknowledged with its reason."""

    bucket_arn = nag_arn(gateway, bucket)
    acknowledge(
        gateway.gateway.role,
        f"IAM5[Resource::{bucket_arn}/{RESULTS_PREFIX}/{namespace}/*]",
        "The gateway reads a task's result and a paused envelope, one object per envelope id, under its "
        "namespace's results prefix only (no write, no list).",
    )
    acknowledge(
        gateway.stream.role,
        "IAM5[Resource::*]",
        "dynamodb:ListStreams cannot be scoped to a table; the event source needs it to find the tasks "
        "table's current stream, and every other stream action is scoped to that stream.",
    )
    acknowledge(
        gateway.stream_dead_letters,
        "SQS3",
        "This queue is itself a dead-letter target (the stream event source's on-failure destination), "
        "watched by an alarm.",
    )
    if isinstance(gateway.api, apigateway.RestApi) and gateway.ticket_stream is not None:
        explain_rest_findings(gateway.api, gateway.agent_card, gateway.ticket_stream, auth)
