"""A mesh split into nested stacks deploys into the local endpoint like any other: moto's
CloudFormation creates each nested stack from its template in the bootstrap bucket, and an envelope
crosses actors of different nested stacks to x-sink in the main stack."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest

from asya_local.endpoint.process import LocalEndpoint
from tests.support.stack import MESH, deployed

pytestmark = pytest.mark.integration

# Two Lambda actors (7 resources each) fill a 15-resource nested stack: prep and infer share the
# first, post gets the second.
SMALL_BUDGET = 15


@pytest.mark.timeout(300)  # synthesizing and deploying a stack of its own takes a minute or two on a busy machine
def test_an_envelope_crosses_nested_stacks_to_x_sink(endpoint: LocalEndpoint, tmp_path: Path) -> None:
    mesh = tmp_path / "mesh.yaml"
    code = MESH.parent
    mesh.write_text(
        "namespace: itsplit\n"
        "actors:\n"
        + "".join(f"  {name}:\n    handler: actors.{name}\n    code: {code}\n" for name in ("prep", "infer", "post"))
    )
    lines: list[str] = []
    with deployed(endpoint, mesh, lambda source, line: lines.append(f"{source}: {line}"), SMALL_BUDGET) as stack:
        cloudformation = stack.client("cloudformation")
        nested = [
            resource
            for resource in cloudformation.list_stack_resources(StackName="asya-itsplit")["StackResourceSummaries"]
            if resource["ResourceType"] == "AWS::CloudFormation::Stack"
        ]
        assert len(nested) == 2
        homes = {
            function["PhysicalResourceId"]
            for resource in nested
            for function in cloudformation.list_stack_resources(StackName=resource["PhysicalResourceId"])[
                "StackResourceSummaries"
            ]
            if function["ResourceType"] == "AWS::Lambda::Function"
        }
        assert homes == {"asya-itsplit-prep", "asya-itsplit-infer", "asya-itsplit-post"}

        sqs = stack.client("sqs")
        envelope_id = f"split-{uuid.uuid4().hex[:6]}"
        body = {
            "id": envelope_id,
            "route": {"prev": [], "curr": "prep", "next": ["infer", "post"]},
            "payload": {"n": 3},
        }
        queue = sqs.get_queue_url(QueueName="asya-itsplit-prep")["QueueUrl"]
        sqs.send_message(QueueUrl=queue, MessageBody=json.dumps(body))
        results, deadline = stack.kept_results(), time.monotonic() + 30
        while not (found := results.of(envelope_id)) and time.monotonic() < deadline:
            time.sleep(0.3)
        assert [kept["outcome"] for kept in found] == ["succeeded"], "\n".join(lines[-40:])
        envelope = found[0]["envelope"]
        assert envelope["payload"] == {"n": 3, "prepped": True, "label": "odd", "done": True}
        assert envelope["route"]["prev"] == ["prep", "infer", "post"]
