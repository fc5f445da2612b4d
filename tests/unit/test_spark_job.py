"""The Spark entry script on a batch, in Spark local mode: every routing outcome of docs/routing.md through the
per-payload style (the shared hop pipeline), the DataFrame style, and the script end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asya.batch import BatchHops, Routed, replay, staged_record
from asya.config import SidecarConfig
from tests.support.mesh import NS, envelope

pyspark = pytest.importorskip("pyspark")
from pyspark.sql import SparkSession  # noqa: E402

from asya_spark_job import styles  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
WORKER_PATH = [ROOT, ROOT / "sidecar_layer", ROOT / "spark_emr"]


@pytest.fixture(scope="module")
def spark() -> Iterator[SparkSession]:
    with pytest.MonkeyPatch.context() as patch:
        # Python workers are started by the JVM: they import the handlers through these variables
        patch.setenv("PYTHONPATH", os.pathsep.join(str(path) for path in WORKER_PATH))
        patch.setenv("PYSPARK_PYTHON", sys.executable)
        patch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
        session = (
            SparkSession.builder.master("local[2]")
            .appName("asya-tests")
            .config("spark.ui.enabled", "false")
            .config("spark.sql.shuffle.partitions", "2")
            .getOrCreate()
        )
        yield session
        session.stop()


def run(
    spark: SparkSession,
    handler: str,
    bodies: list[Any],
    *,
    style: str = "payload",
    known: dict[str, str] | None = None,
    actor: str = "a",
    **env: str,
) -> list[Routed]:
    """The batch through the style's job code; outputs in input order (by message id), then by queue."""
    variables = {
        "ASYA_NAMESPACE": NS,
        "ASYA_ACTOR_NAME": actor,
        "ASYA_HANDLER": f"tests.support.{handler}",
        "POWERTOOLS_METRICS_DISABLED": "true",
        **env,
    }
    records = spark.sparkContext.parallelize(
        [(f"m{index}", body if isinstance(body, str) else json.dumps(body)) for index, body in enumerate(bodies)], 2
    )
    if style == "dataframe":
        routed = styles.dataframe(spark, records, variables, known or {})
    else:
        routed = styles.per_payload(records, variables, known or {})
    found = [Routed.from_json(line) for line in routed.collect()]
    return sorted(found, key=lambda r: (int(r.message_id[1:]), r.queue, r.body))


def wire(routed: Routed) -> dict[str, Any]:
    return dict(json.loads(routed.body))


def queue(actor: str) -> str:
    return f"asya-{NS}-{actor}"


def numbered(count: int, **fields: Any) -> list[dict[str, Any]]:
    return [envelope({"n": n}, id=f"env-{n}", **fields) for n in range(count)]


# Per payload: the same handlers and outcomes as a Lambda actor


def test_a_returned_value_goes_to_the_next_actor_with_the_route_shifted(spark: SparkSession) -> None:
    routed = run(spark, "handlers.enrich", numbered(5))
    assert [r.message_id for r in routed] == ["m0", "m1", "m2", "m3", "m4"]
    assert {r.queue for r in routed} == {queue("b")}
    first = wire(routed[0])
    assert first["payload"] == {"n": 0, "seen": True}
    assert first["route"] == {"prev": ["a"], "curr": "b", "next": []}
    assert first["status"]["phase"] == "processing"


def test_none_sends_the_envelope_to_x_sink_as_it_came(spark: SparkSession) -> None:
    [routed] = run(spark, "handlers.nothing", [envelope({"keep": 1})])
    assert (routed.queue, routed.kind) == (queue("x-sink"), "sink")
    document = wire(routed)
    assert document["route"] == {"prev": [], "curr": "a", "next": ["b"]}
    assert document["payload"] == {"keep": 1}
    assert (document["status"]["phase"], document["status"]["reason"]) == ("succeeded", "Completed")


def test_a_generator_fans_out_with_ids_derived_from_the_hop(spark: SparkSession) -> None:
    body = envelope({"items": ["x", "y", "z"]})
    routed = run(spark, "handlers.fan_out", [body])
    documents = [wire(r) for r in routed]
    assert sorted(d["payload"]["item"] for d in documents) == ["x", "y", "z"]
    assert sum(d["id"] == "env-1" for d in documents) == 1
    children = [d for d in documents if d["id"] != "env-1"]
    assert {d["parent_id"] for d in children} == {"env-1"}
    again = run(spark, "handlers.fan_out", [body])
    assert sorted(wire(r)["id"] for r in again) == sorted(d["id"] for d in documents)  # a rerun repeats the ids


def test_abi_verbs_rewrite_the_route_per_yielded_payload(spark: SparkSession) -> None:
    routed = run(spark, "handlers.reroute", [envelope({}, next=("b",))])
    by_n = {wire(r)["payload"]["n"]: r for r in routed}
    assert by_n[1].queue == queue("b")
    assert by_n[2].queue == queue("c")
    assert wire(by_n[2])["route"]["next"] == ["b"]
    assert by_n[3].queue == queue("x-sink")


def test_an_error_without_a_policy_fails_to_x_sink_with_the_error(spark: SparkSession) -> None:
    [routed] = run(spark, "handlers.explode", [envelope({"n": 7})])
    assert routed.queue == queue("x-sink")
    document = wire(routed)
    assert document["status"]["phase"] == "failed"
    assert document["payload"]["error"] == "handler_error"
    assert document["payload"]["details"]["type"] == "ValueError"
    assert document["payload"]["original_payload"] == {"n": 7}


def test_an_error_with_a_retry_policy_goes_back_to_the_actor_delayed(spark: SparkSession) -> None:
    resiliency = {
        "rules": [{"errors": ["ConnectionError"], "policy": "net"}],
        "policies": {"net": {"max_attempts": 3, "backoff": "constant", "initial_delay": "7s"}},
    }
    [routed] = run(spark, "handlers.flaky", [envelope()], ASYA_RESILIENCY=json.dumps(resiliency))
    assert (routed.queue, routed.kind, routed.delay) == (queue("a"), "self", 7)
    status = wire(routed)["status"]
    assert (status["phase"], status["attempt"], status["max_attempts"]) == ("retrying", 2, 3)


def test_the_last_attempt_fails_as_policy_exhausted(spark: SparkSession) -> None:
    resiliency = {"policies": {"default": {"max_attempts": 2, "initial_delay": 0}}}
    last = envelope(status={"phase": "retrying", "actor": "a", "attempt": 2, "max_attempts": 2})
    [routed] = run(spark, "handlers.flaky", [last], ASYA_RESILIENCY=json.dumps(resiliency))
    assert routed.queue == queue("x-sink")
    assert wire(routed)["status"]["reason"] == "PolicyExhausted"


def test_infrastructure_errors_go_to_x_sump_and_the_rest_of_the_batch_is_routed(spark: SparkSession) -> None:
    bodies: list[Any] = ["{not json", envelope({"n": 1}, curr="elsewhere"), envelope({"n": 2}, id="env-ok")]
    routed = run(spark, "handlers.enrich", bodies)
    reasons = {r.message_id: (r.queue, wire(r)["status"].get("reason")) for r in routed}
    assert reasons == {
        "m0": (queue("x-sump"), "ParseError"),
        "m1": (queue("x-sump"), "RouteMismatch"),
        "m2": (queue("b"), None),
    }


def test_a_handler_past_its_time_limit_goes_to_x_sump(spark: SparkSession) -> None:
    bodies = [envelope({"sleep": 5}, id="slow"), envelope({"sleep": 0}, id="quick")]
    routed = run(spark, "handlers.slow", bodies, ASYA_ACTOR_TIMEOUT_SECONDS="0.3")
    outcomes = {wire(r)["id"]: (r.queue, wire(r)["status"].get("reason")) for r in routed}
    assert outcomes == {"slow": (queue("x-sump"), "HandlerTimeout"), "quick": (queue("b"), None)}


def test_canceled_and_paused_tasks_are_halted_without_calling_the_handler(spark: SparkSession) -> None:
    bodies = [envelope(id="stop"), envelope(id="wait"), envelope(id="go")]
    routed = run(spark, "handlers.enrich", bodies, known={"stop": "canceled", "wait": "paused"})
    phases = {wire(r)["id"]: (r.queue, wire(r)["status"]["phase"]) for r in routed}
    assert phases == {
        "stop": (queue("x-sink"), "canceled"),
        "wait": (queue("x-sink"), "paused"),
        "go": (queue("b"), "processing"),
    }
    assert "seen" not in wire(routed[0])["payload"]


# The DataFrame style


def test_dataframe_rows_become_each_envelopes_next_payload(spark: SparkSession) -> None:
    bodies = [envelope({"n": n}, id=f"env-{n}") for n in (1, -1, 3)]
    routed = run(spark, "spark_handlers.doubled", bodies, style="dataframe")
    outcomes = {wire(r)["id"]: (r.queue, wire(r)["payload"]) for r in routed}
    assert outcomes == {
        "env-1": (queue("b"), {"n": 1, "double": 2}),
        "env--1": (queue("x-sink"), {"n": -1}),  # filtered out: nothing more to do, unshifted
        "env-3": (queue("b"), {"n": 3, "double": 6}),
    }
    assert wire(routed[0])["route"] == {"prev": ["a"], "curr": "b", "next": []}


def test_dataframe_rows_sharing_a_key_fan_out(spark: SparkSession) -> None:
    routed = run(spark, "spark_handlers.split_words", [envelope({"text": "red green blue"})], style="dataframe")
    documents = [wire(r) for r in routed]
    assert sorted(d["payload"]["word"] for d in documents) == ["blue", "green", "red"]
    assert sorted(d.get("parent_id") or "" for d in documents) == ["", "env-1", "env-1"]


@pytest.mark.parametrize(
    ("handler", "error_type"),
    [
        ("spark_handlers.raises_value_error", "ValueError"),
        ("spark_handlers.fails_at_plan_time", None),  # Spark's analysis error, by name
        ("spark_handlers.drops_the_key", "ValueError"),
    ],
)
def test_a_failing_dataframe_function_fails_every_envelope(
    spark: SparkSession, handler: str, error_type: str | None
) -> None:
    routed = run(spark, handler, numbered(3), style="dataframe")
    assert [r.queue for r in routed] == [queue("x-sink")] * 3
    for document in map(wire, routed):
        assert document["status"]["phase"] == "failed"
        details = document["payload"]["details"]
        assert details["type"] == error_type or (error_type is None and "no_such_column" in details["message"])


def test_a_failing_dataframe_function_is_retried_under_a_policy(spark: SparkSession) -> None:
    resiliency = {"policies": {"default": {"max_attempts": 2, "initial_delay": "3s"}}}
    routed = run(
        spark,
        "spark_handlers.raises_value_error",
        numbered(2),
        style="dataframe",
        ASYA_RESILIENCY=json.dumps(resiliency),
    )
    assert [(r.queue, r.delay) for r in routed] == [(queue("a"), 3), (queue("a"), 3)]


def test_dataframe_payloads_that_are_not_objects_use_a_value_column(spark: SparkSession) -> None:
    routed = run(spark, "spark_handlers.scalar_values", [envelope(41), envelope(1, id="env-2")], style="dataframe")
    assert [wire(r)["payload"] for r in routed] == [42, 2]


def test_dataframe_style_still_routes_what_is_not_for_its_function(spark: SparkSession) -> None:
    bodies: list[Any] = ["nope", envelope({"n": 2}, curr="other"), envelope({"n": 5})]
    routed = run(spark, "spark_handlers.doubled", bodies, style="dataframe")
    assert [(r.queue, wire(r)["status"].get("reason")) for r in routed] == [
        (queue("x-sump"), "ParseError"),
        (queue("x-sump"), "RouteMismatch"),
        (queue("b"), None),
    ]


def test_a_reused_worker_drops_duplicates_within_a_batch_but_not_against_an_earlier_one() -> None:
    """PySpark reuses Python workers across tasks and the pipeline is cached per worker: a later batch
    with the same hop (another job, or another test) is not a duplicate of the earlier one."""
    config = SidecarConfig.from_env({"ASYA_NAMESPACE": NS, "ASYA_ACTOR_NAME": "a", "ASYA_HANDLER": "x.y"})
    hops = BatchHops(config, handler=replay([]))
    body = json.dumps(envelope({"n": 5}))
    first = list(hops.run_with([("m0", body, replay([{"n": 10}])), ("m1", body, replay([{"n": 10}]))]))
    later = list(hops.run_with([("m2", body, replay([{"n": 10}]))]))
    assert [(r.message_id, r.queue) for r in first + later] == [("m0", queue("b")), ("m2", queue("b"))]


# The entry script as EMR Serverless runs it


def _entry(tmp_path: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(str(path) for path in WORKER_PATH)}
    return subprocess.run(
        [sys.executable, str(ROOT / "spark_emr" / "asya_spark_job" / "entry.py"), *arguments],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_entry_script_reads_a_staged_batch_and_writes_routed_envelopes(tmp_path: Path) -> None:
    batch = tmp_path / "input.jsonl"
    bodies = [*numbered(3), envelope({"n": 9}, id="gone")]
    batch.write_text("".join(staged_record(f"m{i}", json.dumps(b)) + "\n" for i, b in enumerate(bodies)))
    actor_env = {"ASYA_NAMESPACE": NS, "ASYA_ACTOR_NAME": "a", "ASYA_HANDLER": "tests.support.handlers.enrich"}
    done = _entry(
        tmp_path,
        *("--input", str(batch), "--output", str(tmp_path / "out"), "--master", "local[2]"),
        *("--actor-env", json.dumps(actor_env), "--known", json.dumps({"gone": "canceled"})),
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert (tmp_path / "out" / "_SUCCESS").exists()
    lines = [line for part in sorted((tmp_path / "out").glob("part-*")) for line in part.read_text().splitlines()]
    routed = {Routed.from_json(line).message_id: Routed.from_json(line) for line in lines}
    assert sorted(routed) == ["m0", "m1", "m2", "m3"]
    assert {routed[m].queue for m in ("m0", "m1", "m2")} == {queue("b")}
    assert wire(routed["m3"])["status"]["phase"] == "canceled"


def test_the_entry_script_refuses_an_unknown_style_naming_it(tmp_path: Path) -> None:
    actor_env = {"ASYA_NAMESPACE": NS, "ASYA_ACTOR_NAME": "a", "ASYA_HANDLER": "m.f", "ASYA_SPARK_STYLE": "sql"}
    done = _entry(tmp_path, "--input", "x", "--output", "y", "--actor-env", json.dumps(actor_env))
    assert done.returncode == 2
    assert "ASYA_SPARK_STYLE must be 'payload' or 'dataframe', got 'sql'" in done.stderr
