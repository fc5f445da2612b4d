"""Powertools' REST resolver that the gateway's routes register on (`asya_gateway.api`), and how it
answers what a route refuses (`TaskError`) or a request its validation finds invalid."""

from __future__ import annotations

from typing import Any

import orjson
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response, content_types
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError

from asya_gateway.task_error import TaskError

# orjson parses bodies: a body nested past its 1,024 levels, a number out of a double's range or a lone
# surrogate is invalid JSON (422), where the standard library would raise RecursionError or ValueError
# past the validation and the client would get a 502.
app = APIGatewayRestResolver(enable_validation=True, json_body_deserializer=orjson.loads)


def _error(status: int, message: str) -> Response[Any]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body={"statusCode": status, "message": message},
    )


@app.exception_handler(TaskError)  # type: ignore[untyped-decorator]  # Powertools leaves it untyped
def _refused(error: TaskError) -> Response[Any]:
    return _error(error.status, str(error))


@app.exception_handler(RequestValidationError)  # type: ignore[untyped-decorator]
def _invalid(error: RequestValidationError) -> Response[Any]:
    """422 naming each field and what is wrong with it (Powertools' own answer gives only the field
    and an error code). Pydantic's messages name the expected type, never the code or the input."""
    detail = [_problem(problem) for problem in error.errors()]
    message = "; ".join(f"{'.'.join(map(str, item['loc']))}: {item['msg']}" for item in detail[:5])
    return Response(
        status_code=422,
        content_type=content_types.APPLICATION_JSON,
        body={"statusCode": 422, "message": message, "detail": detail},
    )


def _problem(problem: dict[str, Any]) -> dict[str, Any]:
    if problem["type"] == "json_invalid":  # Powertools puts the character's position where a field would be
        position = problem["loc"][1] if len(problem["loc"]) > 1 else 0
        why = problem.get("ctx", {}).get("error", "")
        return {"loc": ["body"], "type": "json_invalid", "msg": f"invalid JSON at character {position}: {why}"}
    return {"loc": list(problem["loc"]), "type": problem["type"], "msg": problem["msg"]}
