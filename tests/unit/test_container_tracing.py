"""A traced container hop (docs/containers.md, "Tracing"): in a task of the actor's image, which is AWS's
Lambda base image and so sets `LAMBDA_TASK_ROOT`, the consumer's hop still writes its segment into the
task's trace, and Powertools' Tracer, which would take the task for a Lambda environment, patches
nothing: no "Subsegment ... discarded" line for each AWS call in the task's log.

The consumer runs in a process of its own, started with the environment the CDK app gives its task
definition: X-Ray's SDK decides whether it is in Lambda once, when it is first imported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from asya_cdk.actor_config import ActorConfig
from asya_cdk.container import consumer_environment

ROOT = Path(__file__).resolve().parents[2]
TRACE = f"{int(time.time()):08x}" + "ab" * 12
PARENT = "cd" * 8
# the consumer of actor `a`, one batch, in moto; prints the segments X-Ray keeps of the trace
CONSUMER = """
import json, os, sys
import boto3
from moto import mock_aws
from asya.consumer.loop import Consumer
from asya.consumer.settings import ConsumerSettings
from asya.tracecontext import xray_id
from tests.support.mesh import NS, QUEUES, Mesh, envelope

trace, parent = sys.argv[1:3]
with mock_aws():
    sqs = boto3.client("sqs")
    for name in QUEUES:
        sqs.create_queue(QueueName=f"asya-{NS}-{name}")
    url = sqs.get_queue_url(QueueName=f"asya-{NS}-a")["QueueUrl"]
    sidecar = Mesh(sqs).actor("enrich", ASYA_TRACING="true")
    settings = ConsumerSettings.from_env({**os.environ, "ASYA_QUEUE_URL": url})
    consumer = Consumer(sidecar.handle, sqs, settings, f"asya-{NS}-a")
    headers = {"traceparent": f"00-{trace}-{parent}-01"}
    sqs.send_message(QueueUrl=url, MessageBody=json.dumps(envelope(id="task-5", headers=headers)))
    consumer.poll_once(wait_seconds=0)
    consumer.holding.stop()
    answer = boto3.client("xray").batch_get_traces(TraceIds=[xray_id(trace)])
    print(json.dumps([json.loads(s["Document"]) for t in answer["Traces"] for s in t["Segments"]]))
"""


def test_a_container_hop_writes_its_segment_and_powertools_patches_nothing() -> None:
    settings = ActorConfig.model_validate(
        {
            "handler": "tests.support.handlers.enrich",
            "runtime": "container",
            "tracing": True,
            "vpc": {"subnets": ["subnet-0a1b2c3d"], "security_groups": ["sg-0a1b2c3d"]},
        }
    )
    task = {**consumer_environment(settings, "set-by-the-script"), "LAMBDA_TASK_ROOT": "/var/task"}
    environment = {**os.environ, **task, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", CONSUMER, TRACE, PARENT],
        env=environment,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    [document] = json.loads(done.stdout.splitlines()[-1])
    assert (document["name"], document["parent_id"]) == ("a", PARENT)
    assert document["annotations"]["outcome"] == "forwarded"
    assert "discarded" not in done.stderr, done.stderr
