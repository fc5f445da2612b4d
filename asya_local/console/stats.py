"""Each actor's queue and work, as the console shows them: messages waiting, in flight and delayed,
how long the oldest has waited, envelopes processed per minute and failed over the last minutes, and
a Spark actor's open batches, a container actor's tasks running (its ECS service's counts, on AWS as
on the local stack: `asya_local.container_counts`). A Spark actor's envelopes in flight are those of
its open batches too: its dispatcher deletes their messages once staged, so SQS alone would show it
idle while its jobs run.

`LocalStats` reads the local stack: the queues' attributes and, from the endpoint, the oldest message's
age (moto publishes no CloudWatch metrics for SQS), the metric lines of the worker log for the work
(`asya_local.console.activity`), and the Spark batches table. `AwsStats` reads a deployed mesh: the
queues' attributes, and from CloudWatch the age of the oldest message (`AWS/SQS`) and the sidecar's
own metrics (`Asya`, by mesh and actor), which are those the local ones are counted from; CloudWatch
keeps them by the minute, so they are asked for at most once a minute.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from asya.names import resource_name
from asya.telemetry import MESH_DIMENSION, METRIC_NAMESPACE
from asya_local.console.activity import WINDOW_SECONDS, Activity, ActivityCounter
from asya_local.container_counts import ServicePlace, TaskCount, task_counts
from asya_local.endpoint.process import endpoint_admin
from asya_local.load_failures import LoadFailures
from asya_local.queues import queue_depths
from asya_spark.ledger import OPEN_INDEX, key_prefix


@dataclass(frozen=True, slots=True)
class ActorStats:
    visible: int = 0
    in_flight: int = 0
    delayed: int = 0
    age_seconds: float = 0.0  # of the oldest message in the queue
    per_minute: float = 0.0  # envelopes processed, over the window
    failed: int = 0  # envelopes failed (x-sump: kept) over the window
    open_batches: int = 0  # a Spark actor's batches staged or running
    load_error: str | None = None  # why it cannot load its handler, locally (`asya_local.load_failures`)
    tasks: str | None = None  # a container actor's tasks running, "2 of 4 tasks" (`asya_local.container_counts`)
    task_count: str | None = None  # the same for the graph's narrow node, "2/4 tasks"

    def to_json(self) -> dict[str, Any]:
        return {
            "visible": self.visible,
            "in_flight": self.in_flight,
            "delayed": self.delayed,
            "age": round(self.age_seconds),
            "per_minute": round(self.per_minute, 1),
            "failed": self.failed,
            "open_batches": self.open_batches,
        } | ({"tasks": self.tasks, "task_count": self.task_count} if self.tasks is not None else {})


class StatsSource(Protocol):
    def actor_stats(self) -> dict[str, ActorStats]:
        """Every queue of the mesh's actors and crew, by actor name."""
        ...


def combine(
    actors: Iterable[str],
    depths: dict[str, tuple[int, int, int]],
    ages: dict[str, float],
    work: dict[str, Activity],
    batches: dict[str, tuple[int, int]],
    *,
    tasks: dict[str, TaskCount] | None = None,
) -> dict[str, ActorStats]:
    """One `ActorStats` per actor from what each source gave, by actor name (`tasks`: the container
    actors' counts)."""
    stats = {}
    for actor in actors:
        visible, in_flight, delayed = depths.get(actor, (0, 0, 0))
        done = work.get(actor, Activity())
        jobs, staged = batches.get(actor, (0, 0))
        count = (tasks or {}).get(actor)
        stats[actor] = ActorStats(
            visible,
            in_flight + staged,
            delayed,
            ages.get(actor, 0.0),
            done.per_minute(),
            done.failed,
            jobs,
            tasks=count.text() if count is not None else None,
            task_count=count.short() if count is not None else None,
        )
    return stats


class LocalStats:
    def __init__(
        self,
        endpoint: str,
        namespace: str,
        *,
        actors: list[str],
        activity: ActivityCounter,
        client: Callable[[str], Any],
        batches_table: str | None = None,
        failures: LoadFailures | None = None,
        places: dict[str, ServicePlace] | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.namespace = namespace
        self.actors = actors
        self.activity = activity
        self.client = client
        self.batches_table = batches_table
        self.failures = failures or LoadFailures()
        self.places = places or {}  # the container actors' services, asked only when there are some

    def actor_stats(self) -> dict[str, ActorStats]:
        prefix = resource_name(self.namespace, "")
        depths = {
            name.removeprefix(prefix): depth for name, depth in queue_depths(self.client("sqs"), self.namespace).items()
        }
        ages = {
            name.removeprefix(prefix): age
            for name, age in endpoint_admin(self.endpoint, f"queue-ages/{prefix}").items()
        }
        self.activity.history.sample_ages({actor: ages.get(actor, 0.0) for actor in self.actors})
        batches = open_batches(self.client("dynamodb"), self.batches_table, self.namespace, self.actors)
        tasks = task_counts(self.client("ecs"), self.places) if self.places else None
        stats = combine(self.actors, depths, ages, self.activity.activity(), batches, tasks=tasks)
        for actor, problem in self.failures.found().items():
            if actor in stats:
                stats[actor] = dataclasses.replace(stats[actor], load_error=problem)
        return stats


def age_query(namespace: str, actor: str, index: int, period: int) -> dict[str, Any]:
    """`GetMetricData`'s query for the oldest message's age in the actor's queue (`age<index>`)."""
    metric = {
        "Namespace": "AWS/SQS",
        "MetricName": "ApproximateAgeOfOldestMessage",
        "Dimensions": [{"Name": "QueueName", "Value": resource_name(namespace, actor)}],
    }
    return {"Id": f"age{index}", "MetricStat": {"Metric": metric, "Period": period, "Stat": "Maximum"}}


def work_queries(namespace: str, actor: str, index: int, period: int) -> list[dict[str, Any]]:
    """`GetMetricData`'s queries for the actor's envelopes processed (`processed<index>`) and failed
    (`failed<index>`), each summed over every outcome or reason it was published with."""
    queries = []
    for key, metric, split in (("processed", "MessagesProcessed", "outcome"), ("failed", "MessagesFailed", "reason")):
        schema = f"{{{METRIC_NAMESPACE},{MESH_DIMENSION},actor,{split}}}"  # as the sidecar publishes it
        search = (
            f'SEARCH(\'{schema} MetricName="{metric}" {MESH_DIMENSION}="{namespace}" '
            f"actor=\"{actor}\"', 'Sum', {period})"
        )
        queries.append({"Id": f"{key}{index}", "Expression": f"SUM({search})", "ReturnData": True})
    return queries


def open_batches(dynamodb: Any, table: str | None, namespace: str, actors: Iterable[str]) -> dict[str, tuple[int, int]]:
    """Each Spark actor's open batches and the envelopes in them, from the batches table's sparse
    `open` index (what its reconciler reads, every attribute projected): one query per actor, none
    without the table."""
    if not table:
        return {}
    counts = {}
    for actor in actors:
        pages = dynamodb.get_paginator("query").paginate(
            TableName=table,
            IndexName=OPEN_INDEX,
            KeyConditionExpression="open_actor = :actor",
            ExpressionAttributeValues={":actor": {"S": key_prefix(namespace, actor)}},
            ProjectionExpression="#size",
            ExpressionAttributeNames={"#size": "size"},  # a word DynamoDB reserves
        )
        sizes = [int(item["size"]["N"]) for page in pages for item in page.get("Items", [])]
        if sizes:
            counts[actor] = (len(sizes), sum(sizes))
    return counts


class AwsStats:
    """A deployed mesh's stats through the caller's AWS credentials (`session`): SQS and DynamoDB at
    each call, CloudWatch at most every `metrics_seconds`."""

    def __init__(
        self,
        session: Any,
        namespace: str,
        *,
        actors: list[str],
        spark_actors: list[str],
        batches_table: str | None,
        places: dict[str, ServicePlace] | None = None,
        metrics_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.namespace = namespace
        self.actors = actors
        self.spark_actors = spark_actors
        self.batches_table = batches_table
        self.sqs = session.client("sqs")
        self.cloudwatch = session.client("cloudwatch")
        self.dynamodb = session.client("dynamodb")
        self.places = places or {}
        self.ecs = session.client("ecs") if self.places else None
        self.metrics_seconds = metrics_seconds
        self.clock = clock
        self._metrics: tuple[dict[str, float], dict[str, Activity]] = ({}, {})
        self._metrics_at: float | None = None

    def actor_stats(self) -> dict[str, ActorStats]:
        prefix = resource_name(self.namespace, "")
        depths = {name.removeprefix(prefix): depth for name, depth in queue_depths(self.sqs, self.namespace).items()}
        now = self.clock()
        if self._metrics_at is None or now - self._metrics_at >= self.metrics_seconds:
            self._metrics, self._metrics_at = self._read_metrics(), now
        ages, work = self._metrics
        batches = open_batches(self.dynamodb, self.batches_table, self.namespace, self.spark_actors)
        tasks = task_counts(self.ecs, self.places) if self.ecs is not None else None
        return combine(self.actors, depths, ages, work, batches, tasks=tasks)

    def _read_metrics(self) -> tuple[dict[str, float], dict[str, Activity]]:
        """One `GetMetricData`: per actor the oldest message's age, and its envelopes processed and
        failed summed over every outcome and reason (SEARCH expressions), over the window."""
        queries: list[dict[str, Any]] = []
        for index, actor in enumerate(self.actors):
            queries.append(age_query(self.namespace, actor, index, 60))
            queries += work_queries(self.namespace, actor, index, 60)
        end = dt.datetime.now(dt.UTC)
        start = end - dt.timedelta(seconds=WINDOW_SECONDS)
        found: dict[str, list[float]] = {}
        for begin in range(0, len(queries), 500):  # GetMetricData's most per call
            pages = self.cloudwatch.get_paginator("get_metric_data").paginate(
                MetricDataQueries=queries[begin : begin + 500], StartTime=start, EndTime=end
            )
            for page in pages:
                for result in page.get("MetricDataResults", []):
                    found.setdefault(result["Id"], []).extend(result.get("Values", []))
        ages = {actor: max(found.get(f"age{i}", [0.0]), default=0.0) for i, actor in enumerate(self.actors)}
        work = {
            actor: Activity(int(sum(found.get(f"processed{i}", []))), int(sum(found.get(f"failed{i}", []))))
            for i, actor in enumerate(self.actors)
        }
        return ages, work
