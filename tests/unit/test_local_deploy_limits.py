"""What CreateFunction refuses on AWS but moto accepts: a function environment over 4 KB. The local
deploy refuses it with Lambda's own words, so the stack does not come up locally either."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from asya_local.deploy import EnvironmentTooLargeError, Synthesized, refuse_oversized_environments


class DeployedFunctions:
    """`GetFunctionConfiguration` over functions deployed with the given environments."""

    def __init__(self, environments: dict[str, dict[str, str]]) -> None:
        self.environments = environments

    def get_function_configuration(self, FunctionName: str) -> dict[str, Any]:  # noqa: N803 - boto3's name
        return {"Environment": {"Variables": self.environments[FunctionName]}}


def stack(*names: str) -> Synthesized:
    resources = {
        f"Fn{n}": {"Type": "AWS::Lambda::Function", "Properties": {"FunctionName": name}}
        for n, name in enumerate(names)
    }
    return Synthesized("asya-t", {"Resources": {**resources, "Q": {"Type": "AWS::SQS::Queue"}}}, {}, Path())


def test_an_environment_of_exactly_4_kb_deploys() -> None:
    exactly = {"ASYA_A": "x" * (4096 - len("ASYA_A"))}
    refuse_oversized_environments(DeployedFunctions({"asya-t-a": exactly}), stack("asya-t-a"))


def test_one_byte_more_fails_as_create_function_does() -> None:
    over = {"ASYA_A": "x" * (4096 - len("ASYA_A")), "B": ""}  # keys count too
    functions = DeployedFunctions({"asya-t-a": {"SMALL": "1"}, "asya-t-b": over})
    with pytest.raises(EnvironmentTooLargeError) as refused:
        refuse_oversized_environments(functions, stack("asya-t-a", "asya-t-b"))
    message = str(refused.value)
    assert "Fn1 (asya-t-b)" in message
    assert "exceeded the 4KB limit" in message
    assert "4097 bytes" in message
    assert "ASYA_A 4096 bytes" in message
