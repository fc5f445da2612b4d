"""A local deploy serves a template's AppSync Event API from the endpoint (`asya_local.event_apis`):
moto's CloudFormation does not know it, so it is taken out with its namespace, and every reference
points at the endpoint's HTTP publish and its real-time WebSocket."""

from __future__ import annotations

from typing import Any

import pytest

from asya_local import event_apis

TEMPLATE: dict[str, Any] = {
    "Resources": {
        "Api": {"Type": "AWS::AppSync::Api", "Properties": {"Name": "asya-demo-fly"}},
        "Channels": {
            "Type": "AWS::AppSync::ChannelNamespace",
            "Properties": {"ApiId": {"Fn::GetAtt": ["Api", "ApiId"]}, "Name": "asya"},
        },
        "Actor": {
            "Type": "AWS::Lambda::Function",
            "Properties": {
                "Environment": {
                    "Variables": {
                        "ASYA_FLY_DOMAIN": {"Fn::GetAtt": ["Api", "Dns.Http"]},
                        "ASYA_FLY_REALTIME_DOMAIN": {"Fn::GetAtt": ["Api", "Dns.Realtime"]},
                    }
                }
            },
        },
    }
}


def test_the_api_is_served_by_the_endpoint_and_the_template_points_there(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, str]] = []

    def admin(endpoint: str, action: str) -> dict[str, int]:
        asked.append((endpoint, action))
        return {"realtime_port": 4599}

    monkeypatch.setattr(event_apis, "endpoint_admin", admin)
    local = event_apis.create_event_apis("http://127.0.0.1:4566", TEMPLATE)
    assert set(local["Resources"]) == {"Actor"}
    variables = local["Resources"]["Actor"]["Properties"]["Environment"]["Variables"]
    api_id = variables["ASYA_FLY_DOMAIN"].rsplit("/", 1)[1]
    assert variables == {
        "ASYA_FLY_DOMAIN": f"127.0.0.1:4566/appsync/{api_id}",
        "ASYA_FLY_REALTIME_DOMAIN": f"127.0.0.1:4599/appsync/{api_id}",
    }
    again = event_apis.create_event_apis("http://127.0.0.1:4566", TEMPLATE)
    assert again == local, "the same API at every deploy"
    assert asked[0] == ("http://127.0.0.1:4566", "event-api")


def test_a_template_without_an_event_api_is_left_as_it_is() -> None:
    template = {"Resources": {"Actor": TEMPLATE["Resources"]["Actor"]}}
    assert event_apis.create_event_apis("http://127.0.0.1:4566", template) is template
