"""The example mesh's template (`examples/reviews`), as the template tests read it: its actors, crew and
gateway functions, and where in the template a queue, a table, a function or a statement on a resource
is. Shared by the tests of the mesh's own resources (`tests/cdk/test_template.py`) and of its status
gateway's (`tests/cdk/test_gateway_template.py`)."""

from __future__ import annotations

from typing import Any

from tests.support.templates import ROOT, resources

EXAMPLE = ROOT / "examples" / "reviews" / "mesh.yaml"
ACTORS = ("split", "score", "triage", "escalate", "summarise")
CREW = ("x-sink", "x-sump", "x-pause", "x-resume")
GATEWAY = ("gateway", "gateway-stream", "gateway-backstop")


def queue_of(document: dict[str, Any], name: str) -> tuple[str, dict[str, Any]]:
    return next((key, q) for key, q in resources(document, "AWS::SQS::Queue").items() if q["QueueName"] == name)


def table_of(document: dict[str, Any], prefix: str) -> str:
    return next(key for key in resources(document, "AWS::DynamoDB::Table") if key.startswith(f"Mesh{prefix}"))


def functions_of(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["FunctionName"]: f for f in resources(document, "AWS::Lambda::Function").values()}


def statements_on(statements: list[dict[str, Any]], resource: Any) -> list[dict[str, Any]]:
    return [
        s
        for s in statements
        if s["Resource"] == resource or (isinstance(s["Resource"], list) and resource in s["Resource"])
    ]
