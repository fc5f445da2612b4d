"""asya: the core of the actor mesh on AWS, shipped as the sidecar Lambda layer.

`asya.lambda_handler` is the entry point of every actor's function. Importing `asya` itself is
cheap: the sidecar and its dependencies (Powertools, pydantic, boto3) load on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aws_lambda_powertools import Metrics

    from asya.sidecar import lambda_handler

    metrics: Metrics

__all__ = ["lambda_handler", "metrics"]


def __getattr__(name: str) -> Any:
    if name == "lambda_handler":
        from asya.sidecar import lambda_handler

        return lambda_handler
    if name == "metrics":
        from asya.telemetry import handler_metrics

        return handler_metrics()
    raise AttributeError(f"module 'asya' has no attribute {name!r}")
