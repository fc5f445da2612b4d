"""The local AppSync Events API (`asya_local.endpoint.event_api`) refuses what AWS refuses: unsigned or
wrongly signed requests, a signer its policies do not allow, channels AppSync would not take, more
than five events or one over 240 KB, and, by the mesh's onSubscribe handler, a wildcard subscription;
and delivers a publish to the gateway's subscription (`asya_gateway.fly_feed`) as it comes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.credentials import Credentials

from asya.fly_channel import MAX_EVENT_BYTES, events_url, signed_headers
from asya_gateway.fly_feed import FlyFeeds
from asya_local.endpoint.event_api import ApiError, EventApis, namespace_arn, serve_realtime
from asya_local.functions.iam_auth import Signer
from asya_local.functions.lambda_shapes import ACCOUNT, REGION

API = "abc123"
HTTP_DOMAIN = f"127.0.0.1:4566/appsync/{API}"
PATH = f"/appsync/{API}/event"
ACTOR = Credentials("AKIAACTOR", "actor-secret")
GATEWAY = Credentials("AKIAGATEWAY", "gateway-secret")
NOBODY = Credentials("AKIANOBODY", "nobody-secret")
# what each key's policies allow, as the endpoint's IAM would decide it
GRANTS = {
    "AKIAACTOR": {("appsync:EventPublish", namespace_arn(API, "asya"))},
    "AKIAGATEWAY": {("appsync:EventConnect", f"arn:aws:appsync:{REGION}:{ACCOUNT}:apis/{API}"),
                    ("appsync:EventSubscribe", namespace_arn(API, "asya"))},
    "AKIANOBODY": set(),
}  # fmt: skip


def signers(access_key: str, _token: str | None) -> Signer | None:
    secrets = {key.access_key: key.secret_key for key in (ACTOR, GATEWAY, NOBODY)}
    if access_key not in secrets:
        return None
    return Signer(secrets[access_key], f"arn:aws:iam::{ACCOUNT}:user/{access_key}", ACCOUNT, access_key)


def permits(action: str, resource: str, access_key: str, _token: str | None) -> bool:
    return (action, resource) in GRANTS[access_key]


@pytest.fixture
def apis() -> EventApis:
    return EventApis(signers, permits)


@pytest.fixture
def realtime(apis: EventApis) -> Iterator[str]:
    port, stop = serve_realtime(apis)
    yield f"127.0.0.1:{port}/appsync/{API}"
    stop()


def publish(apis: EventApis, body: dict[str, Any], key: Credentials = ACTOR) -> dict[str, Any]:
    raw = json.dumps(body).encode()
    return apis.publish(API, signed_headers(events_url(HTTP_DOMAIN, "/event"), raw, key, REGION), PATH, raw)


def refusal(apis: EventApis, body: dict[str, Any], key: Credentials = ACTOR) -> ApiError:
    with pytest.raises(ApiError) as refused:
        publish(apis, body, key)
    return refused.value


def test_a_publish_reaches_the_subscribed_follow_as_it_comes(apis: EventApis, realtime: str) -> None:
    feed = FlyFeeds(HTTP_DOMAIN, realtime, REGION, credentials=lambda: GATEWAY).open("t-1")
    assert feed is not None
    try:
        answer = publish(apis, {"channel": "/asya/t-1", "events": [json.dumps({"n": 1}), json.dumps({"n": 2})]})
        assert answer["failed"] == []
        assert len(answer["successful"]) == 2
        publish(apis, {"channel": "/asya/t-2", "events": [json.dumps({"n": 3})]})  # another task's
        feed.wait(5)
        received = feed.take()
        while len(received) < 2:
            feed.wait(5)
            received += feed.take()
        assert received == [{"n": 1}, {"n": 2}]
    finally:
        feed.close()


@pytest.mark.parametrize("key", [ACTOR, NOBODY, Credentials("AKIAGATEWAY", "a wrong secret")])
def test_only_a_signer_allowed_to_connect_and_subscribe_follows(realtime: str, key: Credentials) -> None:
    assert FlyFeeds(HTTP_DOMAIN, realtime, REGION, credentials=lambda: key).open("t-1") is None


def test_a_wildcard_subscription_is_refused(realtime: str) -> None:
    feeds = FlyFeeds(HTTP_DOMAIN, realtime, REGION, credentials=lambda: GATEWAY)
    with pytest.raises(ConnectionError, match="subscribe_error"):
        feeds._subscribed("/asya/*")


def test_only_a_signer_allowed_to_publish_may(apis: EventApis) -> None:
    body = {"channel": "/asya/t-1", "events": ["{}"]}
    for key in (GATEWAY, NOBODY, Credentials("AKIAACTOR", "a wrong secret"), Credentials("AKIAUNKNOWN", "x")):
        refused = refusal(apis, body, key)
        assert (refused.status, refused.kind) == (401, "UnauthorizedException")


@pytest.mark.parametrize(
    ("channel", "kind"),
    [
        ("/asya/a/b/c/d/e", "BadRequestException"),  # six segments
        ("/asya/task.1", "BadRequestException"),  # a dot
        ("/asya/" + "x" * 51, "BadRequestException"),
        ("/asya/*", "BadRequestException"),  # no wildcard in a publish
        ("asya/t-1", "BadRequestException"),
        ("/other/t-1", "NotFoundException"),  # the mesh's API has one namespace
    ],
)
def test_a_channel_appsync_would_refuse_is_refused(apis: EventApis, channel: str, kind: str) -> None:
    assert refusal(apis, {"channel": channel, "events": ["{}"]}).kind == kind


@pytest.mark.parametrize(
    "events",
    [[], ["{}"] * 6, ["not json"], [{"n": 1}], [json.dumps({"blob": "x" * MAX_EVENT_BYTES})]],
)
def test_events_appsync_would_refuse_are_refused(apis: EventApis, events: list[Any]) -> None:
    refused = refusal(apis, {"channel": "/asya/t-1", "events": events})
    assert (refused.status, refused.kind) == (400, "BadRequestException")


def test_with_iam_off_a_publish_is_not_checked_for_a_signature() -> None:
    apis = EventApis(signers, None)
    body = json.dumps({"channel": "/asya/t-1", "events": ["{}"]}).encode()
    assert apis.publish(API, {}, PATH, body)["failed"] == []
