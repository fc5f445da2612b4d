"""A minimal hand-written API function on Powertools: what `bench.cold_start` compares the gateway's
cold start with. One route, `GET /health`, on `APIGatewayRestResolver` with request validation on, as
the gateway's own resolver has it."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

app = APIGatewayRestResolver(enable_validation=True)


@app.get("/health")
def health() -> dict[str, str]:
    return {"status": "ok", "namespace": os.environ["ASYA_NAMESPACE"]}


def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
