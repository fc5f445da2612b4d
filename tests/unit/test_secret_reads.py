"""An actor's secrets at its start, as the services' quotas and a VPC without routes see them
(`asya.secret_reads`, `asya.clients`): Parameter Store read ten parameters a call, a throttled read
tried again, an unknown parameter named, and a service with no route failing in seconds, named."""

from __future__ import annotations

import math
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber

from asya.claims import Claims
from asya.clients import INIT_CONNECT_SECONDS, init_client
from asya.secret_reads import SecretError, SecretReader
from asya.task_table import TaskTable


def stubbed_ssm() -> tuple[Any, Stubber]:
    client = boto3.client("ssm", region_name="eu-west-1", aws_access_key_id="k", aws_secret_access_key="s")
    return client, Stubber(client)


def settings(client: Any) -> Any:
    """A client's botocore `Config` as it was made (its stubs do not declare the settings)."""
    return client.meta.config


def answer(names: list[str]) -> dict[str, Any]:
    return {"Parameters": [{"Name": name, "Value": f"value of {name}", "Type": "SecureString"} for name in names]}


@pytest.mark.parametrize("count", [1, 10, 23])
def test_an_actors_parameters_are_read_ten_a_call(count: int) -> None:
    """Parameter Store's 40 calls a second are the account's: N parameters cost ceil(N/10) calls."""
    client, stubber = stubbed_ssm()
    names = sorted(f"/shop/p{index:02}" for index in range(count))
    for start in range(0, count, 10):
        chunk = names[start : start + 10]
        stubber.add_response("get_parameters", answer(chunk), {"Names": chunk, "WithDecryption": True})
    with stubber:
        values = SecretReader(300, {"ssm": client}).read({f"V{i}": ("ssm", name) for i, name in enumerate(names)})
    stubber.assert_no_pending_responses()  # exactly ceil(count / 10) calls, each as stubbed
    assert values == {f"V{i}": f"value of {name}" for i, name in enumerate(names)}
    assert math.ceil(count / 10) == len(range(0, count, 10))


def test_a_throttled_read_is_tried_again_after_a_random_wait() -> None:
    client, stubber = stubbed_ssm()
    waits: list[float] = []
    stubber.add_client_error("get_parameters", "ThrottlingException", "Rate exceeded")
    stubber.add_client_error("get_parameters", "ThrottlingException", "Rate exceeded")
    stubber.add_response("get_parameters", answer(["/shop/token"]))
    with stubber:
        values = SecretReader(300, {"ssm": client}, sleep=waits.append).read({"TOKEN": ("ssm", "/shop/token")})
    assert values == {"TOKEN": "value of /shop/token"}
    assert len(waits) == 2
    assert 0 < waits[0] <= 0.1
    assert 0 < waits[1] <= 0.2, "the wait grows"


def test_throttling_that_lasts_fails_the_start_naming_the_parameter() -> None:
    client, stubber = stubbed_ssm()
    for _ in range(20):
        stubber.add_client_error("get_parameters", "ThrottlingException", "Rate exceeded")
    with stubber, pytest.raises(SecretError, match=r"^TOKEN: cannot read ssm '/shop/token': ThrottlingException"):
        SecretReader(300, {"ssm": client}, sleep=lambda _: None).read({"TOKEN": ("ssm", "/shop/token")})


def test_an_unknown_parameter_is_named_with_its_variable() -> None:
    client, stubber = stubbed_ssm()
    stubber.add_response("get_parameters", {**answer(["/shop/a"]), "InvalidParameters": ["/shop/gone"]})
    with stubber, pytest.raises(SecretError) as raised:
        SecretReader(300, {"ssm": client}).read({"A": ("ssm", "/shop/a"), "GONE": ("ssm", "/shop/gone")})
    assert str(raised.value).startswith("GONE: cannot read ssm '/shop/gone': no such parameter")


def test_a_kept_parameter_is_not_read_again_until_it_is_old() -> None:
    client, stubber = stubbed_ssm()
    stubber.add_response("get_parameters", answer(["/shop/a"]))
    reader = SecretReader(300, {"ssm": client})
    with stubber:
        reader.read({"A": ("ssm", "/shop/a")})
        assert reader.read({"A": ("ssm", "/shop/a")}) == {"A": "value of /shop/a"}, "no second call stubbed"


def test_the_start_connects_briefly_and_the_hops_too() -> None:
    """A VPC function with no route to a service waits a connect timeout per attempt: 2 s at the start
    (three attempts fit Lambda's 10 s init), 3 s for the hop's clients, not botocore's 60 s."""
    config = settings(init_client("ssm"))
    assert (config.connect_timeout, config.retries["total_max_attempts"]) == (INIT_CONNECT_SECONDS, 3)
    assert INIT_CONNECT_SECONDS * 3 < 10
    table = TaskTable("tasks")
    assert settings(table.client).connect_timeout == 3
    assert settings(table.client).read_timeout == 60, "a large object may be slow to arrive"


def test_a_joins_restores_each_have_a_connection() -> None:
    """A completing arrival reads 16 kept payloads at once: the claims client keeps 16 connections."""
    claims = Claims("bucket", "ns", 1000)
    assert settings(claims.s3).max_pool_connections == 16


def test_a_service_with_no_route_fails_the_start_naming_it() -> None:
    client = boto3.client(
        "secretsmanager",
        endpoint_url="http://127.0.0.1:9",
        config=Config(connect_timeout=1, retries={"mode": "standard", "max_attempts": 1}),
        region_name="eu-west-1",
        aws_access_key_id="k",
        aws_secret_access_key="s",
    )
    with pytest.raises(SecretError) as raised:
        SecretReader(300, {"secretsmanager": client}).read({"KEY": ("secretsmanager", "shop/key")})
    assert str(raised.value).startswith("KEY: cannot reach secretsmanager")
    assert "VPC endpoint for secretsmanager or a NAT gateway" in str(raised.value)
