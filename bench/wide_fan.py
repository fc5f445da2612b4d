"""A fan-out of 20,000 branches on the local stack, and what its records weigh.

One task of `bench/wide_fan_mesh`: `split` fans it out into `--branches` branches (the root's own
envelope and the rest), which go straight to x-sink. A root keeps at most 50 branch ids itself; the
rest are counted in buckets of 50 beside it (`asya.fans`). It prints how long the fan-out took to be
registered, until all of it was sent, and until the root ended; the root's status and branch counts; the size of the
root's record and of the largest bucket (DynamoDB's item size rules, `asya_local.testing.metering.item_bytes`), and the
write units a count on each costs.

Then, in this process, what one transaction of 25 actions costs moto against what it costs the local
endpoint (`asya_local.endpoint.moto_transactions`), on a table of as many items: moto copies the
table for each action, the endpoint copies nothing.

    python -m bench.wide_fan [--branches 20000] [--timeout 1800]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path
from typing import Any

import boto3
from moto import mock_aws
from moto.dynamodb.models import DynamoDBBackend

from asya.fans import BUCKET_BRANCHES, FAN_ROOT, counter_key
from asya.task_record import TERMINAL
from asya.task_store import TaskStore
from asya_cdk.loading import load_mesh
from asya_local.endpoint.moto_transactions import apply_transaction_fix
from asya_local.endpoint.process import free_port
from asya_local.gateway_client import GatewayClient
from asya_local.stack import LocalStack
from asya_local.testing.metering import item_bytes

MESH = Path(__file__).resolve().parent / "wide_fan_mesh" / "mesh.yaml"
POLL_SECONDS = 2.0  # the root is read this often: every read is a request to the endpoint being measured


def run_fan(stack: LocalStack, branches: int, timeout: float) -> dict[str, Any]:
    """Create the task, then follow it: registered (the root's copy of its fan counter holds every
    branch), sent (`split`'s invocation is over: its message left the queue once every envelope had
    gone) and ended; seconds from the create."""
    assert stack.gateway_url is not None, "the bench mesh deploys a gateway"
    gateway = GatewayClient(stack.gateway_url, api_key=stack.api_key)
    store = TaskStore(stack.outputs["TasksTable"], client=stack.client("dynamodb"))
    sqs = stack.client("sqs")
    split = sqs.get_queue_url(QueueName=f"asya-{stack.namespace}-split")["QueueUrl"]
    depth = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
    started = time.monotonic()
    root = gateway.create_task({"flow": "wide", "payload": {"parts": branches}})["id"]
    seen: dict[str, float] = {}
    while time.monotonic() - started < timeout and "ended" not in seen:
        record = store.get(root) or {}
        counted = record.get("fans", {}).get("branches", 0) + len(record.get("branch_ids", ()))
        waiting = sqs.get_queue_attributes(QueueUrl=split, AttributeNames=depth)["Attributes"]
        moments = {
            "registered": counted >= branches - 1,
            "sent": counted >= branches - 1 and not any(int(n) for n in waiting.values()),
            "ended": record.get("status") in TERMINAL,
        }
        for moment, reached in moments.items():
            if reached:
                seen.setdefault(moment, time.monotonic() - started)
        time.sleep(POLL_SECONDS)
    return {"root": root, "task": gateway.task(root) or {}, **seen}


def record_sizes(stack: LocalStack, root: str) -> dict[str, Any]:
    """The root's record, its counter, and its buckets: how many, and the largest (bytes)."""
    dynamodb, table = stack.client("dynamodb"), stack.outputs["TasksTable"]
    keys = (root, counter_key(root))
    read = {key: dynamodb.get_item(TableName=table, Key={"id": {"S": key}})["Item"] for key in keys}
    buckets: list[int] = []
    ended = 0
    for page in dynamodb.get_paginator("scan").paginate(TableName=table):
        for item in page["Items"]:
            if item.get(FAN_ROOT, {}).get("S") == root and "branch_ids" in item:
                buckets.append(item_bytes(item))
            elif item.get("root_id", {}).get("S") == root and item.get("status", {}).get("S") == "succeeded":
                ended += 1
    return {
        "root": item_bytes(read[root]),
        "counter": item_bytes(read[counter_key(root)]),
        "buckets": len(buckets),
        "largest bucket": max(buckets, default=0),
        "branch records ended": ended,
    }


def transaction_seconds(items: int) -> tuple[float, float]:
    """One transaction of 25 updates on a table of `items` items: moto's own, then the endpoint's."""
    original = DynamoDBBackend.transact_write_items
    timings = []
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        client.create_table(
            TableName="t",
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        for start in range(0, items, 25):
            requests: Any = [
                {"PutRequest": {"Item": {"id": {"S": f"task-{n}"}, "status": {"S": "succeeded"}}}}
                for n in range(start, min(items, start + 25))
            ]
            client.batch_write_item(RequestItems={"t": requests})
        actions: Any = [
            {
                "Update": {
                    "TableName": "t",
                    "Key": {"id": {"S": f"b-{n}"}},
                    "UpdateExpression": "SET n = :n",
                    "ExpressionAttributeValues": {":n": {"N": "1"}},
                }
            }
            for n in range(25)
        ]
        for patched in (False, True):
            if patched:
                apply_transaction_fix()
            began = time.perf_counter()
            client.transact_write_items(TransactItems=actions)
            timings.append(time.perf_counter() - began)
    DynamoDBBackend.transact_write_items = original  # type: ignore[method-assign]
    return timings[0], timings[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--branches", type=int, default=20_000, help="outputs of the fan-out, the root's own included")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args()
    with LocalStack(load_mesh(MESH), port=free_port()) as stack:
        fan = run_fan(stack, args.branches, args.timeout)
        sizes = record_sizes(stack, fan["root"])
    task = fan["task"]
    print(f"fan-out of {args.branches:,} branches (the root's own envelope included), on the local stack:")
    for moment in ("registered", "sent", "ended"):
        print(f"  {moment + ' after':<27} {fan.get(moment, float('nan')):8.1f} s (polled every {POLL_SECONDS:g} s)")
    print(f"  root's status               {task.get('status')}")
    print(f"  root's branches             {task.get('branches')}")
    print(f"  branch records ended        {sizes['branch records ended']:,} (of {args.branches - 1:,})")
    print(f"  buckets                     {sizes['buckets']:,} of at most {BUCKET_BRANCHES} branches")
    for name in ("root", "counter", "largest bucket"):
        units = math.ceil(sizes[name] / 1024)
        print(f"  {name + ' record':<27} {sizes[name]:8,} bytes   a write costs {units} unit(s)")
    before = 72 * (args.branches - 1)
    print(f"  (a root holding every id: {before:,} bytes of ids alone; DynamoDB's item limit is 409,600)")
    moto, endpoint = transaction_seconds(args.branches)
    print(f"one transaction of 25 updates, on a table of {args.branches:,} items, in this process:")
    print(f"  moto's own {moto * 1000:8.1f} ms   the local endpoint's {endpoint * 1000:6.1f} ms")
    print(f"  ({moto / endpoint:.0f} times as long)")


if __name__ == "__main__":
    main()
