"""Under injected faults (asya_local.faults), every envelope still reaches exactly one final outcome.

The pipeline's workers are killed mid-batch, get messages delivered twice while their batch runs, and
see throttling, server errors, resets, timeouts and partial batch failures on their AWS calls; the
gateway, stream poller and schedule are restarted every few seconds. The crew is left alone: its
function timeout makes a redelivery come back after half an hour (six times 310 s).
"""

from __future__ import annotations

import json
import uuid
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from asya_local.faults import AwsFaults, FaultSpec, Restarts
from asya_local.stack import LocalEndpoint
from tests.integration.conftest import RunningMesh, deployed

MESH = Path(__file__).resolve().parent / "mesh" / "faults.yaml"
FAULTS = FaultSpec(
    seed=11,
    kill_worker_rate=0.05,
    duplicate_delivery_rate=0.2,
    aws=AwsFaults(throttle=0.02, server_error=0.01, reset=0.01, timeout=0.01, partial_batch=0.2),
    restart_every=Restarts(gateway=5, stream=5, schedule=5),
    functions=["prep", "infer", "post"],
)
ENVELOPES = 50


@pytest.mark.timeout(400)
def test_under_faults_every_envelope_reaches_exactly_one_final_outcome(endpoint: LocalEndpoint) -> None:
    holder: list[RunningMesh] = []
    with deployed(
        endpoint, MESH, lambda s, line: holder[0].on_line(s, line) if holder else None, faults=FAULTS
    ) as stack:
        mesh = RunningMesh(stack)
        holder.append(mesh)
        ids = [f"fault-{n:02d}-{uuid.uuid4().hex[:4]}" for n in range(ENVELOPES)]
        url = mesh.queue_url("prep")
        route = {"prev": [], "curr": "prep", "next": ["infer", "post"]}
        for start in range(0, ENVELOPES, 10):
            entries = [
                {"Id": str(n), "MessageBody": json.dumps({"id": envelope_id, "route": route, "payload": {"n": n}})}
                for n, envelope_id in enumerate(ids[start : start + 10], start)
            ]
            mesh.sqs.send_message_batch(QueueUrl=url, Entries=entries)
        idle = stack.wait_until_idle(timeout=300, settle=3)
        depths = stack.queue_depths()
        outcomes: defaultdict[str, list[str]] = defaultdict(list)
        for result in mesh.all_results():
            outcomes[result["envelope"]["id"]].append(result["outcome"])
        faults = Counter(line.split(": fault: ", 1)[1].split(" ")[0] for line in mesh.lines if ": fault: " in line)
        print(f"faults seen: {dict(faults)}; envelopes into x-sink: {mesh.batches['x-sink']}")
    assert idle, f"stuck: {json.dumps(depths)}\n{mesh.errors()}"
    lost = [envelope_id for envelope_id in ids if envelope_id not in outcomes]
    conflicting = {envelope_id: found for envelope_id, found in outcomes.items() if len(found) > 1}
    assert not lost, f"{len(lost)} envelope(s) without an outcome: {lost[:5]}\n{mesh.errors()}"
    assert not conflicting, f"envelopes with several final outcomes: {conflicting}"
    assert Counter(found[0] for found in outcomes.values()) == {"succeeded": ENVELOPES}
