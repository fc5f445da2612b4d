"""What the local stack runs, read back from the local endpoint after the deploy: each function with
its configuration as Lambda keeps it, and what invokes it (event source mappings, REST API integrations,
the HTTP API's routes from the template, schedule rules), so the local mesh runs what AWS would run."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from asya_local.deploy import Synthesized

_INTEGRATION_TARGET = re.compile(r"/functions/(arn:[^/]+)/invocations")  # in a Lambda integration's URI


@dataclass(frozen=True)
class QueueTrigger:
    """An SQS event source mapping: `asya_local.functions.esm` polls the queue."""

    queue_url: str
    batch_size: int
    batching_window: float
    max_concurrency: int | None


@dataclass(frozen=True)
class StreamTrigger:
    """A DynamoDB stream event source mapping: `asya_local.functions.stream_poller` reads the stream."""

    stream_arn: str
    batch_size: int
    retry_attempts: int  # the mapping's MaximumRetryAttempts; -1: until the record expires
    report_failures: bool  # ReportBatchItemFailures: the response names the records to retry
    bisect: bool  # BisectBatchOnFunctionError: a batch that raised is retried in halves
    on_failure_queue_url: str | None  # where a skipped batch is reported (an SQS on-failure destination)


@dataclass(frozen=True)
class HttpTrigger:
    """A REST API proxy integration: `asya_local.functions.gateway_server` is the API."""

    rest_api_id: str


@dataclass(frozen=True)
class ScheduleTrigger:
    """An EventBridge schedule rule targeting the function: `asya_local.functions.scheduler` is the clock."""

    rule_arn: str
    expression: str
    input: str | None  # the target's constant input, sent instead of the scheduled event


@dataclass(frozen=True)
class ContainerTrigger:
    """A container actor's queue, consumed by `asya.consumer` processes that the local scaler starts and
    stops by the actor's rule (`asya_local.container_actors`, `asya_local.container_scaling`)."""

    queue_url: str
    min_tasks: int
    max_tasks: int
    messages_per_task: int


Trigger = QueueTrigger | StreamTrigger | HttpTrigger | ScheduleTrigger | ContainerTrigger


@dataclass(frozen=True)
class LocalFunction:
    """One deployed function and one of the things that invoke it, as the local runner needs them."""

    name: str
    handler: str
    role: str  # the execution role's ARN: the worker runs with a session of it
    environment: dict[str, str]
    timeout: float
    memory: int
    code_dir: Path
    trigger: Trigger


def deployed_functions(client: Callable[[str], Any], synthesized: Synthesized) -> list[LocalFunction]:
    """Read functions and what invokes them back from the endpoint (event source mappings, REST API
    integrations, schedule rules); code comes from the assets. A function nothing invokes is left
    out, as nothing would run it on AWS either."""
    code_by_function = {
        resource["Properties"]["FunctionName"]: _code_of(synthesized, resource["Properties"])
        for template in synthesized.templates
        for resource in template["Resources"].values()
        if resource["Type"] == "AWS::Lambda::Function"
    }
    lambda_client = client("lambda")
    triggers = [
        *_event_source_triggers(lambda_client, client("sqs")),
        *_http_triggers(client("apigateway")),
        *http_api_triggers(synthesized.templates),
        *_schedule_triggers(client("events")),
    ]
    functions = []
    for name, trigger in triggers:
        if name not in code_by_function:
            continue
        configuration = lambda_client.get_function_configuration(FunctionName=name)
        code_dir, image_command = code_by_function[name]
        functions.append(
            LocalFunction(
                name=name,
                handler=image_command or configuration["Handler"],
                role=configuration["Role"],
                environment=configuration.get("Environment", {}).get("Variables", {}),
                timeout=float(configuration["Timeout"]),
                memory=int(configuration["MemorySize"]),
                code_dir=code_dir,
                trigger=trigger,
            )
        )
    return sorted(functions, key=lambda function: function.name)


def _code_of(synthesized: Synthesized, properties: dict[str, Any]) -> tuple[Path, str | None]:
    """A function's code folder, and for a container image the handler its command names. An image is
    never built locally: its function runs from the folder it would be built from (`task/`, what the
    image puts in /var/task), with the libraries the local stack installs (`asya_local.runtime`)."""
    code = properties["Code"]
    if "ImageUri" not in code:
        return synthesized.code_dirs[code["S3Key"]], None
    command = properties.get("ImageConfig", {}).get("Command", [None])[0]
    return image_dir(synthesized, code["ImageUri"]) / "task", command


def image_dir(synthesized: Synthesized, uri: Any) -> Path:
    """The folder an image asset is built from, by the tag its URI (a string or an `Fn::Sub`) ends with."""
    text = uri["Fn::Sub"] if isinstance(uri, dict) else uri
    return synthesized.image_dirs[str(text).rsplit(":", 1)[1]]


def function_name(arn: str) -> str:
    """`arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>]` → name."""
    return arn.split(":")[6]


def _event_source_mappings(lambda_client: Any) -> list[dict[str, Any]]:
    pages = lambda_client.get_paginator("list_event_source_mappings").paginate()
    return list(pages.build_full_result().get("EventSourceMappings", []))


def _event_source_triggers(lambda_client: Any, sqs: Any) -> Iterator[tuple[str, Trigger]]:
    for mapping in _event_source_mappings(lambda_client):
        name, source = function_name(mapping["FunctionArn"]), mapping["EventSourceArn"]
        batch_size = int(mapping["BatchSize"])
        service = source.split(":")[2]
        if service == "sqs":
            yield (
                name,
                QueueTrigger(
                    queue_url=_queue_url(sqs, source),
                    batch_size=batch_size,
                    batching_window=float(mapping.get("MaximumBatchingWindowInSeconds", 0)),
                    max_concurrency=mapping.get("ScalingConfig", {}).get("MaximumConcurrency"),
                ),
            )
        elif service == "dynamodb":
            on_failure = mapping.get("DestinationConfig", {}).get("OnFailure", {}).get("Destination", "")
            yield (
                name,
                StreamTrigger(
                    stream_arn=source,
                    batch_size=batch_size,
                    retry_attempts=int(mapping.get("MaximumRetryAttempts", -1)),
                    report_failures="ReportBatchItemFailures" in mapping.get("FunctionResponseTypes", []),
                    bisect=bool(mapping.get("BisectBatchOnFunctionError", False)),
                    on_failure_queue_url=_queue_url(sqs, on_failure) if ":sqs:" in on_failure else None,
                ),
            )


def _queue_url(sqs: Any, arn: str) -> str:
    return str(sqs.get_queue_url(QueueName=arn.rsplit(":", 1)[-1])["QueueUrl"])


def _http_triggers(apigateway: Any) -> Iterator[tuple[str, Trigger]]:
    """Functions behind a Lambda proxy integration of a REST API (moto models the API, its resources
    and methods, but has no data plane)."""
    seen = set()
    for api in apigateway.get_paginator("get_rest_apis").paginate().build_full_result().get("items", []):
        pages = apigateway.get_paginator("get_resources").paginate(restApiId=api["id"], embed=["methods"])
        for resource in pages.build_full_result().get("items", []):
            for method in resource.get("resourceMethods", {}).values():
                integration = method.get("methodIntegration", {})
                target = _INTEGRATION_TARGET.search(integration.get("uri", ""))
                if integration.get("type") == "AWS_PROXY" and target:
                    name = function_name(target.group(1))
                    if (api["id"], name) not in seen:
                        seen.add((api["id"], name))
                        yield name, HttpTrigger(rest_api_id=api["id"])


def http_api_triggers(templates: Iterable[dict[str, Any]]) -> Iterator[tuple[str, Trigger]]:
    """Functions behind a Lambda proxy integration of an HTTP API (`gateway.api: http`), read from the
    templates: moto's CloudFormation does not create HTTP APIs. Their payload format 1.0 is the REST
    API's event, which `asya_local.functions.gateway_server` sends."""
    for template in templates:
        resources = template.get("Resources", {})
        for key, resource in resources.items():
            properties = resource.get("Properties", {})
            if resource["Type"] != "AWS::ApiGatewayV2::Integration" or properties.get("IntegrationType") != "AWS_PROXY":
                continue
            target = properties.get("IntegrationUri", {})
            function = resources.get(target.get("Fn::GetAtt", [""])[0], {}) if isinstance(target, dict) else {}
            name = function.get("Properties", {}).get("FunctionName")
            if function.get("Type") == "AWS::Lambda::Function" and isinstance(name, str):
                yield name, HttpTrigger(rest_api_id=key)


def _schedule_triggers(events: Any) -> Iterator[tuple[str, Trigger]]:
    for rule in events.get_paginator("list_rules").paginate().build_full_result().get("Rules", []):
        if not rule.get("ScheduleExpression") or rule.get("State") != "ENABLED":
            continue
        for target in events.list_targets_by_rule(Rule=rule["Name"])["Targets"]:
            if target["Arn"].split(":")[2] == "lambda":
                yield (
                    function_name(target["Arn"]),
                    ScheduleTrigger(
                        rule_arn=rule["Arn"], expression=rule["ScheduleExpression"], input=target.get("Input")
                    ),
                )


def take_over_event_sources(lambda_client: Any) -> None:
    """Disable the endpoint's own event source mappings once their settings are read: moto would
    otherwise receive each new message itself and try to run the function in Docker, bumping the
    message's receive count each time (and, for a table's stream, empty the stream: see
    `asya_local.endpoint.moto_streams`). The local workers are the pollers instead."""
    for mapping in _event_source_mappings(lambda_client):
        lambda_client.update_event_source_mapping(UUID=mapping["UUID"], Enabled=False)
