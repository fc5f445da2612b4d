"""The local API Gateway adapter: HTTP requests become REST proxy events that Powertools' resolver
accepts, and function results become the responses API Gateway would send."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from aws_lambda_powertools.event_handler import APIGatewayRestResolver, Response

from asya_local.functions.lambda_shapes import LambdaContext
from asya_local.functions.rest_proxy import (
    HttpRequest,
    MalformedResponseError,
    gateway_answer,
    http_response,
    proxy_event,
)

HEADERS = [("Host", "127.0.0.1:8123"), ("x-api-key", "k"), ("User-Agent", "t/1"), ("Accept", "a"), ("Accept", "b")]


def _event(target: str = "/api/v1/mesh/t-1?limit=5&tag=a&tag=b", body: bytes = b"", method: str = "GET") -> Any:
    return proxy_event(HttpRequest(method, target, HEADERS, body, "10.0.0.7", "req-1"), "api-1")


def test_the_event_is_a_greedy_proxy_event() -> None:
    event = _event()
    assert event["resource"] == "/{proxy+}"
    assert event["path"] == "/api/v1/mesh/t-1"
    assert event["pathParameters"] == {"proxy": "api/v1/mesh/t-1"}
    assert event["httpMethod"] == "GET"
    assert event["requestContext"]["resourcePath"] == "/{proxy+}"


def test_query_parameters_keep_the_last_value_and_all_values() -> None:
    event = _event()
    assert event["queryStringParameters"] == {"limit": "5", "tag": "b"}
    assert event["multiValueQueryStringParameters"] == {"limit": ["5"], "tag": ["a", "b"]}


def test_no_query_and_the_root_path_give_nulls() -> None:
    event = _event("/")
    assert event["resource"] == "/"
    assert event["pathParameters"] is None
    assert event["queryStringParameters"] is None
    assert event["multiValueQueryStringParameters"] is None


def test_headers_are_passed_with_the_ones_api_gateway_adds() -> None:
    event = _event()
    assert event["headers"]["Accept"] == "b"
    assert event["multiValueHeaders"]["Accept"] == ["a", "b"]
    assert event["headers"]["X-Forwarded-For"] == "10.0.0.7"
    assert event["headers"]["X-Forwarded-Proto"] == "http"
    assert event["headers"]["X-Forwarded-Port"] == "8123"


def test_the_request_context_names_the_caller_and_the_domain() -> None:
    context = _event()["requestContext"]
    assert context["identity"]["sourceIp"] == "10.0.0.7"
    assert context["identity"]["apiKey"] == "k"
    assert context["identity"]["userAgent"] == "t/1"
    assert context["domainName"] == "127.0.0.1:8123"
    assert context["requestId"] == "req-1"
    assert context["apiId"] == "api-1"
    assert isinstance(context["requestTimeEpoch"], int)


def test_a_body_passes_as_text_as_without_binary_media_types() -> None:
    assert _event(body=b'{"a": 1}')["body"] == '{"a": 1}'
    assert _event(body=b'{"a": 1}')["isBase64Encoded"] is False
    assert _event(body=b"x\xff")["body"] == "x\ufffd"
    assert _event()["body"] is None


def test_single_and_multi_value_response_headers_are_merged_once() -> None:
    response = http_response(
        {
            "statusCode": 201,
            "headers": {"X-One": "1", "Set-Cookie": "a=1"},
            "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]},
            "body": "{}",
        }
    )
    assert response.status == 201
    assert [value for name, value in response.headers if name == "Set-Cookie"] == ["a=1", "b=2"]
    assert ("X-One", "1") in response.headers
    assert ("Content-Type", "application/json") in response.headers, "API Gateway's default content type"


def test_a_base64_body_is_decoded() -> None:
    response = http_response(
        {"statusCode": "200", "body": base64.b64encode(b"\x01\x02").decode(), "isBase64Encoded": True}
    )
    assert response.body == b"\x01\x02"


def test_the_server_sets_framing_headers_itself() -> None:
    response = http_response({"statusCode": 200, "headers": {"Content-Length": "999", "Connection": "close"}})
    assert response.headers == [("Content-Type", "application/json")]


@pytest.mark.parametrize("result", [None, "text", {"body": "{}"}, {"statusCode": "x"}, {"statusCode": 200, "body": 3}])
def test_a_result_without_a_status_code_is_malformed(result: Any) -> None:
    with pytest.raises(MalformedResponseError):
        http_response(result)


def test_api_gateway_answers_in_its_own_shape() -> None:
    answer = gateway_answer(403, "Forbidden", "req-1")
    assert answer.status == 403
    assert json.loads(answer.body) == {"message": "Forbidden"}
    assert ("x-amzn-ErrorType", "ForbiddenException") in answer.headers


def test_powertools_resolves_the_event_and_its_response_reads_back() -> None:
    """The contract that matters: the gateway's resolver routes and validates these events."""
    app = APIGatewayRestResolver(enable_validation=True)

    @app.post("/api/v1/mesh/<task_id>/events")
    def post(task_id: str) -> Response[Any]:
        event = app.current_event
        seen = {
            "task_id": task_id,
            "limit": event.get_query_string_value("limit"),
            "key": event.headers.get("x-api-key"),
            "body": event.json_body,
        }
        return Response(202, "application/json", json.dumps(seen), headers={"X-Seen": ["1", "2"]})

    event = _event("/api/v1/mesh/t-1/events?limit=5", body=b'{"type": "fly"}', method="POST")
    context: Any = LambdaContext("gateway")  # duck-typed like Lambda's own; Powertools annotates its class
    response = http_response(app.resolve(event, context))
    assert response.status == 202
    assert json.loads(response.body) == {"task_id": "t-1", "limit": "5", "key": "k", "body": {"type": "fly"}}
    assert [value for name, value in response.headers if name == "X-Seen"] == ["1", "2"]
