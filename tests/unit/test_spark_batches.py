"""A Spark actor's dispatcher and collector against moto in process: staging, idempotent starts,
hop claims against regrouped redeliveries, routing a finished job once, failed and canceled jobs
through resiliency, and the reconciler's duties. The job itself is played by the core's batch
pipeline (what the entry script runs), its output written where Spark would write it.

EMR Serverless is moto's own: it keeps the job runs it is asked to start and runs none (it calls each
SUCCESS at once), so each test ends a run itself (`job_ends`: the state and the output the job would
have left). What the local endpoint adds to it (`asya_local.endpoint.moto_emr`: a start repeated with
its client token returns its run, a new run goes to the Spark runner) is proven on the endpoint, in
tests/integration/test_spark_updates.py."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from unittest.mock import patch

import boto3
import pytest
from moto import mock_aws
from moto.emrserverless.models import JobRun, emrserverless_backends

from asya.batch import BatchHops
from asya.claims import REF_FIELD, Claims
from asya.config import SidecarConfig
from asya.dynamo import from_item
from asya.task_record import hop_times
from asya.task_store import TaskStore
from asya.tracecontext import new_trace_id, trace_header
from asya.transport import MemoryTransport, SqsTransport
from asya.variables import ConfigError
from asya_local.console.activity import ActivityCounter
from asya_local.console.history import HOUR
from asya_local.console.stats import open_batches
from asya_local.functions.lambda_shapes import ACCOUNT, REGION, LambdaContext, sqs_record
from asya_local.testing.tables import SPARK_BATCHES, TASKS, create_spark_batches_table, create_tables
from asya_spark.collect import JOB_STATE_CHANGE, Collector
from asya_spark.dispatch import Dispatcher
from asya_spark.jobs import client_token
from asya_spark.ledger import State
from asya_spark.parts import SparkParts
from asya_spark.settings import SparkSettings, job_environment
from tests.support.mesh import NS, envelope

BUCKET = "asya-staging"
ACTOR = "a"


class SparkActorHarness:
    def __init__(self, **env: str) -> None:
        self.sqs = boto3.client("sqs", region_name=REGION)
        self.s3 = boto3.client("s3", region_name=REGION)
        for name in (ACTOR, "b", "x-sink", "x-sump"):
            self.sqs.create_queue(QueueName=f"asya-{NS}-{name}")
        self.s3.create_bucket(Bucket=BUCKET)
        emr = boto3.client("emr-serverless", region_name=REGION)
        application = emr.create_application(
            name="asya-unit-a", releaseLabel="emr-7.12.0", type="SPARK", clientToken="asya-unit-a"
        )
        variables = {
            "ASYA_NAMESPACE": NS,
            "ASYA_ACTOR_NAME": ACTOR,
            "ASYA_HANDLER": "tests.support.handlers.enrich",
            "ASYA_SPARK_STAGING_BUCKET": BUCKET,
            "ASYA_SPARK_BATCHES_TABLE": SPARK_BATCHES,
            "ASYA_SPARK_APPLICATION_ID": application["applicationId"],
            "ASYA_SPARK_JOB_ROLE_ARN": f"arn:aws:iam::{ACCOUNT}:role/job",
            "ASYA_SPARK_ENTRY_POINT": "s3://assets/entry.py",
            "ASYA_SPARK_SUBMIT_PARAMETERS": "--py-files s3://assets/code.zip",
            "ASYA_SPARK_STYLE": "payload",
            "MODEL": "small",
            "ASYA_SPARK_JOB_VARIABLES": "MODEL",
            **env,
        }
        self.variables = variables
        self.settings = SparkSettings.from_env(variables)
        self.parts = SparkParts.build(self.settings, SqsTransport(self.sqs))
        self.dispatcher = Dispatcher(self.parts)
        self.collector = Collector(self.parts)

    @property
    def runs(self) -> list[JobRun]:
        """The job runs EMR Serverless was asked to start, in order, as moto keeps them."""
        return list(emrserverless_backends[ACCOUNT][REGION].job_runs.get(self.settings.application_id, []))

    def dispatch(self, *messages: tuple[str, Any]) -> dict[str, Any]:
        queue = f"asya-{NS}-{ACTOR}"
        records = [
            sqs_record(queue, body if isinstance(body, str) else json.dumps(body), mid) for mid, body in messages
        ]
        return self.dispatcher.handle({"Records": records}, LambdaContext(queue))

    def job_ends(
        self,
        run: JobRun,
        state: str = "SUCCESS",
        details: str | None = None,
        output: bool = True,
        config: SidecarConfig | None = None,
    ) -> None:
        """What the job would leave behind: its output (from the same hop pipeline) and its state."""
        if state == "SUCCESS" and output:
            batch_id = run.name
            assert batch_id is not None
            records = self.parts.staging.read_input(batch_id)
            config = config or SidecarConfig.from_env(
                {"ASYA_NAMESPACE": NS, "ASYA_ACTOR_NAME": ACTOR, "ASYA_HANDLER": "x.y"}
            )
            hops = BatchHops(config, handler=lambda payload: {**payload, "seen": True})
            lines = "".join(routed.to_json() + "\n" for routed in hops.run(records))
            prefix = self.parts.staging.output_prefix(batch_id)
            self.s3.put_object(Bucket=BUCKET, Key=f"{prefix}part-00000", Body=lines.encode())
            self.s3.put_object(Bucket=BUCKET, Key=f"{prefix}_SUCCESS", Body=b"")
        run.state = state
        run.state_details = details

    def event(self, run: JobRun, state: str | None = None) -> dict[str, int]:
        detail = {"jobRunId": run.id, "applicationId": run.application_id, "state": state or run.state}
        return self.collector.handle(
            {"detail-type": JOB_STATE_CHANGE, "source": "aws.emr-serverless", "detail": detail}
        )

    def reconcile(self) -> dict[str, int]:
        return self.collector.handle({"detail-type": "Scheduled Event", "source": "aws.events", "detail": {}})

    def messages(self, actor: str) -> list[dict[str, Any]]:
        url = self.sqs.get_queue_url(QueueName=f"asya-{NS}-{actor}")["QueueUrl"]
        found: list[dict[str, Any]] = []
        while batch := self.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", []):
            for message in batch:
                found.append(json.loads(message["Body"]))
                self.sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        return found

    def delayed(self, actor: str) -> int:
        url = self.sqs.get_queue_url(QueueName=f"asya-{NS}-{actor}")["QueueUrl"]
        attributes = self.sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesDelayed"])
        return int(attributes["Attributes"]["ApproximateNumberOfMessagesDelayed"])

    def staged_ids(self, run: JobRun) -> list[str]:
        assert run.name is not None
        return [json.loads(body)["id"] for _, body in self.parts.staging.read_input(run.name)]


@pytest.fixture
def harness() -> Iterator[SparkActorHarness]:
    with mock_aws():
        dynamodb = boto3.client("dynamodb", region_name=REGION)
        create_spark_batches_table(dynamodb)
        create_tables(dynamodb)
        yield SparkActorHarness()


def numbered(*numbers: int) -> list[tuple[str, dict[str, Any]]]:
    return [(f"m{n}", envelope({"n": n}, id=f"env-{n}")) for n in numbers]


def test_a_batch_is_staged_and_starts_one_job_with_the_actors_settings(harness: SparkActorHarness) -> None:
    assert harness.dispatch(*numbered(1, 2, 3)) == {"batchItemFailures": []}
    [run] = harness.runs
    assert harness.staged_ids(run) == ["env-1", "env-2", "env-3"]
    driver = run.job_driver["sparkSubmit"]  # type: ignore[index]
    arguments = driver["entryPointArguments"]
    assert driver["entryPoint"] == "s3://assets/entry.py"
    assert arguments[arguments.index("--input") + 1] == f"s3://{BUCKET}/spark/{NS}/{ACTOR}/{run.name}/input.jsonl"
    assert arguments[arguments.index("--output") + 1] == f"s3://{BUCKET}/spark/{NS}/{ACTOR}/{run.name}/output/"
    # the job's variables come from the function's own: the handler's settings and the actor's, no tables
    assert json.loads(arguments[arguments.index("--actor-env") + 1]) == {
        "ASYA_NAMESPACE": NS,
        "ASYA_ACTOR_NAME": ACTOR,
        "ASYA_HANDLER": "tests.support.handlers.enrich",
        "ASYA_SPARK_STYLE": "payload",
        "MODEL": "small",
    }
    assert driver["sparkSubmitParameters"] == "--py-files s3://assets/code.zip"
    assert (run.client_token, run.execution_role_arn) == (
        client_token(str(run.name), harness.settings),
        f"arn:aws:iam::{ACCOUNT}:role/job",
    )
    assert harness.parts.ledger.get(str(run.name)) is not None
    assert harness.messages("b") == []  # nothing is routed before the job ends


def test_a_redelivered_batch_does_not_start_a_second_job_or_route_twice(harness: SparkActorHarness) -> None:
    harness.dispatch(*numbered(1, 2))
    harness.dispatch(*reversed(numbered(1, 2)))  # the same messages again, in another order
    [run] = harness.runs
    harness.job_ends(run)
    assert harness.event(run) == {"succeeded": 1}
    assert sorted(m["id"] for m in harness.messages("b")) == ["env-1", "env-2"]
    assert harness.event(run) == {"already-routed": 1}
    assert harness.reconcile() == {}
    harness.dispatch(*numbered(1, 2))  # even after routing
    assert len(harness.runs) == 1
    assert harness.messages("b") == []


def test_a_regrouped_redelivery_runs_each_hop_in_one_batch_only(harness: SparkActorHarness) -> None:
    harness.dispatch(*numbered(1, 2))
    harness.dispatch(*numbered(2, 3))  # m2 came back with a new neighbour
    first, second = harness.runs
    assert harness.staged_ids(first) == ["env-1", "env-2"]
    assert harness.staged_ids(second) == ["env-3"]
    for run in (first, second):
        harness.job_ends(run)
        harness.event(run)
    assert sorted(m["id"] for m in harness.messages("b")) == ["env-1", "env-2", "env-3"]


def test_a_batch_whose_hops_are_all_claimed_starts_nothing(harness: SparkActorHarness) -> None:
    harness.dispatch(*numbered(1))
    copy = [("m-copy", envelope({"n": 1}, id="env-1"))]  # the same hop sent twice upstream
    harness.dispatch(*copy, *copy)
    assert len(harness.runs) == 1


def test_an_envelope_redriven_from_x_sump_runs_its_spark_hop_again(harness: SparkActorHarness) -> None:
    """A redrive is a new run of the envelope's hops (`x-asya-redrive`), as at a Lambda actor: its
    claim is not the failed run's, so the batch that failed does not swallow it."""
    harness.dispatch(*numbered(1))
    [failed] = harness.runs
    harness.job_ends(failed, "FAILED", "Executor lost")
    harness.event(failed)
    [sunk] = harness.messages("x-sink")
    redriven = envelope({"n": 1}, id="env-1", headers={"x-asya-redrive": 1})
    harness.dispatch(("m-redriven", redriven))
    _, again = harness.runs
    assert sunk["id"] == "env-1"
    assert harness.staged_ids(again) == ["env-1"]


def test_a_failed_job_without_a_policy_fails_every_envelope_to_x_sink(harness: SparkActorHarness) -> None:
    harness.dispatch(*numbered(1, 2), ("m-raw", "{not an envelope"))
    [run] = harness.runs
    harness.job_ends(run, "FAILED", "Executor lost")
    assert harness.event(run) == {"failed": 1}
    failed = {m["id"]: m for m in harness.messages("x-sink")}
    assert sorted(failed) == ["env-1", "env-2"]
    details = failed["env-1"]["payload"]["details"]
    assert details["type"] == "SparkJobError"
    assert details["message"] == f"Spark job {run.id} ended FAILED: Executor lost"
    assert failed["env-1"]["payload"]["original_payload"] == {"n": 1}
    assert [m["status"]["reason"] for m in harness.messages("x-sump")] == ["ParseError"]
    assert harness.messages("b") == []


def test_a_canceled_job_is_retried_under_the_actors_policy(harness: SparkActorHarness) -> None:
    policy = {
        "rules": [{"errors": ["SparkJobError"], "policy": "job"}],
        "policies": {"job": {"max_attempts": 3, "initial_delay": "30s"}},
    }
    harness.parts.settings = replace(
        harness.settings, sidecar=replace(harness.settings.sidecar, resiliency=_resiliency(policy))
    )
    harness.dispatch(*numbered(1))
    [run] = harness.runs
    harness.job_ends(run, "CANCELLED")
    assert harness.event(run) == {"cancelled": 1}
    assert harness.delayed(ACTOR) == 1  # back on its own queue, 30 s later, for a new batch
    assert harness.messages("x-sink") == []


def test_a_success_without_a_complete_output_counts_as_a_failure(harness: SparkActorHarness) -> None:
    harness.dispatch(*numbered(1))
    [run] = harness.runs
    harness.job_ends(run, "SUCCESS", output=False)
    assert harness.reconcile() == {"failed": 1}
    [failed] = harness.messages("x-sink")
    assert "left no complete output" in failed["payload"]["details"]["message"]


def test_the_reconciler_waits_for_running_jobs_and_cancels_overdue_ones(harness: SparkActorHarness) -> None:
    harness.dispatch(*numbered(1))
    [run] = harness.runs
    run.state = "RUNNING"
    assert harness.reconcile() == {"running": 1}
    assert harness.event(run) == {}  # a non-terminal state change is not the collector's business
    harness.parts.settings = replace(harness.settings, job_timeout_minutes=-10)
    assert harness.reconcile() == {"canceled": 1}
    assert run.state == "CANCELLED"
    harness.parts.settings = harness.settings
    assert harness.reconcile() == {"cancelled": 1}  # and its envelopes meet the policy (none: failed)
    assert [m["id"] for m in harness.messages("x-sink")] == ["env-1"]


def test_the_reconciler_starts_a_batch_whose_dispatcher_stopped_after_staging(harness: SparkActorHarness) -> None:
    ledger = harness.parts.ledger
    harness.parts.staging.put_input("orphan", [("m1", json.dumps(envelope({"n": 1})))])
    ledger.stage("orphan", 1, {})
    assert harness.reconcile() == {"staged": 1}  # within the grace period a dispatcher may still be at it
    harness.parts.settings = replace(harness.settings, start_grace_seconds=0)
    assert harness.reconcile() == {"started": 1}
    [run] = harness.runs
    batch = ledger.get("orphan")
    assert batch is not None
    assert (run.name, batch.state, batch.job_run_id) == ("orphan", State.STARTED, run.id)


def test_no_job_starts_while_the_application_is_held_for_a_deploy(harness: SparkActorHarness) -> None:
    """StartJobRun on a stopped application starts it again (auto start), and EMR Serverless would
    then refuse the update it was stopped for: while the guard's hold stands, batches wait staged."""
    ledger, application = harness.parts.ledger, harness.settings.application_id
    ledger.hold(application, time.time() + 600)
    assert harness.dispatch(*numbered(1, 2)) == {"batchItemFailures": []}  # the messages are deleted: staged
    assert harness.runs == []
    harness.parts.settings = replace(harness.settings, start_grace_seconds=0)
    assert harness.reconcile() == {"held": 1}
    assert harness.runs == []
    ledger.lift()
    assert harness.reconcile() == {"started": 1}
    [run] = harness.runs
    assert sorted(harness.staged_ids(run)) == ["env-1", "env-2"]
    ledger.hold(application, time.time() - 1)  # a hold whose lifter never ran (a rolled-back deploy) lapses
    harness.dispatch(*numbered(3))
    ledger.hold("replaced-application", time.time() + 600)  # a hold for another application holds nothing
    harness.dispatch(*numbered(4))
    assert len(harness.runs) == 3


def test_a_job_whose_state_change_event_never_came_is_settled_by_the_reconciler(harness: SparkActorHarness) -> None:
    """EventBridge delivers EMR Serverless job-state events best effort; the schedule must not need them."""
    harness.dispatch(*numbered(1, 2))
    [run] = harness.runs
    harness.job_ends(run)  # and no event
    assert harness.reconcile() == {"succeeded": 1}
    assert sorted(m["id"] for m in harness.messages("b")) == ["env-1", "env-2"]
    assert harness.reconcile() == {}  # settled once


def test_routing_that_cannot_send_is_retried_by_the_next_reconciliation(harness: SparkActorHarness) -> None:
    harness.dispatch(*numbered(1))
    [run] = harness.runs
    harness.job_ends(run)
    working = harness.parts.transport
    harness.parts.transport = SqsTransport(boto3.client("sqs", region_name="eu-west-1"))  # no such queues there
    with pytest.raises(RuntimeError, match="could not be sent"):
        harness.event(run)
    harness.parts.transport = working
    assert harness.reconcile() == {"succeeded": 1}
    assert [m["id"] for m in harness.messages("b")] == ["env-1"]


def test_a_batch_whose_collector_died_while_routing_waits_only_for_its_lease(harness: SparkActorHarness) -> None:
    """A collector killed mid-routing cannot give its lease back: the batch is routed by the first
    reconciliation after a lease sized to it (seconds for a small batch), not after minutes."""
    harness.dispatch(*numbered(1, 2))
    [run] = harness.runs
    harness.job_ends(run)
    assert run.name is not None
    lease = harness.settings.routing_lease_seconds(2)
    assert 30 <= lease <= 31
    assert harness.parts.ledger.lease(run.name, lease)  # and the collector that took it dies
    assert harness.reconcile() == {"leased": 1}
    with patch("asya_spark.ledger.time.time", return_value=time.time() + lease + 1):
        assert harness.reconcile() == {"succeeded": 1}
    assert sorted(m["id"] for m in harness.messages("b")) == ["env-1", "env-2"]


def test_an_output_for_an_actor_with_no_queue_sends_its_envelope_to_x_sump(harness: SparkActorHarness) -> None:
    """The job cannot see the mesh's queues; the collector can: the stray envelope goes to x-sump with
    `UnknownActor`, the rest of the batch goes on, and the batch is routed once."""
    harness.dispatch(("m1", envelope({"n": 1}, id="env-1")), ("m2", envelope({"n": 2}, id="astray", next=("ghost",))))
    [run] = harness.runs
    harness.job_ends(run)
    assert harness.reconcile() == {"succeeded": 1}
    assert [m["id"] for m in harness.messages("b")] == ["env-1"]
    [sumped] = harness.messages("x-sump")
    assert (sumped["id"], sumped["status"]["reason"], sumped["status"]["actor"]) == ("astray", "UnknownActor", ACTOR)
    assert f"asya-{NS}-ghost" in sumped["status"]["error"]["message"]
    assert harness.reconcile() == {}


def test_a_large_payload_reaches_the_job_whole_and_its_large_output_travels_in_s3(harness: SparkActorHarness) -> None:
    """The job never calls AWS: the dispatcher stages the payload itself, and the collector claim-checks
    the job's large outputs before it sends them (`asya.claims`)."""
    claims = Claims(BUCKET, NS, 65_536)
    large = envelope({"blob": "s" * 200_000}, id="env-1")
    checked_in = claims.check_in(large, json.dumps(large))
    settings = SparkSettings.from_env(
        {**harness.variables, "ASYA_CLAIM_BUCKET": BUCKET, "ASYA_CLAIM_CHECK_BYTES": "65536"}
    )
    harness.parts = SparkParts.build(settings, SqsTransport(harness.sqs))
    harness.dispatcher, harness.collector = Dispatcher(harness.parts), Collector(harness.parts)
    harness.dispatch(("m1", checked_in))
    [run] = harness.runs
    [(_, staged)] = harness.parts.staging.read_input(str(run.name))
    assert json.loads(staged)["payload"] == {"blob": "s" * 200_000}  # whole, for the job
    job = job_environment({**harness.variables, "ASYA_CLAIM_BUCKET": BUCKET})
    assert int(job["ASYA_MAX_MESSAGE_BYTES"]) >= 5 * 1024**3  # the job holds no large output back
    harness.job_ends(run, config=SidecarConfig.from_env(job))
    assert harness.reconcile() == {"succeeded": 1}
    [sent] = harness.messages("b")
    assert REF_FIELD in sent
    assert claims.restore(sent)["payload"] == {"blob": "s" * 200_000, "seen": True}


def test_the_task_shows_the_spark_actor_from_dispatch_until_the_next_hop_claims_it(
    harness: SparkActorHarness,
) -> None:
    harness = SparkActorHarness(ASYA_TASKS_TABLE=TASKS)
    harness.dispatch(*numbered(1))
    [run] = harness.runs[-1:]
    task = boto3.client("dynamodb", region_name=REGION).get_item(TableName=TASKS, Key={"id": {"S": "env-1"}})["Item"]
    assert (task["status"]["S"], task["actor"]["S"], task["phase"]["S"]) == ("running", ACTOR, "processing")
    [hop] = hop_times(from_item(task))
    assert (hop["actor"], hop["attempt"], hop["seconds"]) == (ACTOR, 1, None), "the Spark hop's start, kept"
    harness.job_ends(run)
    harness.event(run)
    routed = boto3.client("dynamodb", region_name=REGION).get_item(TableName=TASKS, Key={"id": {"S": "env-1"}})["Item"]
    assert routed["updated_at"] == task["updated_at"]  # b's claim reports the next hop, in its own write
    assert [body["id"] for body in harness.messages("b")] == ["env-1"]


def _second_task_canceled(harness: SparkActorHarness) -> TaskStore:
    """Tasks `env-1` (pending, as the gateway creates one) and `env-2` (canceled) in the actor's table."""
    store = harness.parts.reporter.store
    assert store is not None
    for task_id in ("env-1", "env-2"):
        store.create({"id": task_id})
    store.cancel("env-2")
    return store


def test_the_job_is_told_which_tasks_of_its_batch_to_halt(harness: SparkActorHarness) -> None:
    harness = SparkActorHarness(ASYA_TASKS_TABLE=TASKS)
    _second_task_canceled(harness)
    harness.dispatch(*numbered(1, 2))
    run = harness.runs[-1]
    arguments = run.job_driver["sparkSubmit"]["entryPointArguments"]  # type: ignore[index]
    assert json.loads(arguments[arguments.index("--known") + 1]) == {"env-2": "canceled"}
    batch = harness.parts.ledger.get(str(run.name))
    assert batch is not None
    assert batch.known == {"env-2": "canceled"}  # kept for a start by the reconciler


def test_a_task_starting_at_the_spark_actor_shows_it_while_the_job_runs(harness: SparkActorHarness) -> None:
    harness = SparkActorHarness(ASYA_TASKS_TABLE=TASKS)
    store = _second_task_canceled(harness)
    harness.dispatch(*numbered(1, 2))
    first, second = store.get("env-1"), store.get("env-2")
    assert first is not None
    assert second is not None
    assert (first["status"], first["actor"]) == ("running", ACTOR)
    assert second["status"] == "canceled"


def _resiliency(document: dict[str, Any]) -> Any:
    from asya.resiliency import Resiliency

    return Resiliency.model_validate(document)


def test_a_job_variable_the_function_lacks_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="ASYA_SPARK_JOB_VARIABLES names MODEL"):
        job_environment({"ASYA_HANDLER": "m.f", "ASYA_SPARK_JOB_VARIABLES": "MODEL"})


def test_the_client_token_names_the_batch_and_changes_with_the_jobs_definition(harness: SparkActorHarness) -> None:
    """A batch staged before a deploy and started after it must not reuse a token AWS saw with other
    parameters: the token follows the code and archive URLs, and stays within StartJobRun's limits."""
    batch = "0123456789abcdef0123456789abcdef"
    token = client_token(batch, harness.settings)
    redeployed = replace(harness.settings, submit_parameters="--py-files s3://assets/code-2.zip")
    assert token == client_token(batch, harness.settings)  # a redelivery gets the same run back
    assert token.startswith(f"{batch}-")
    assert client_token(batch, redeployed) != token
    assert client_token(batch, replace(harness.settings, entry_point="s3://assets/entry-2.py")) != token
    assert len(token) <= 64
    assert re.fullmatch(r"[A-Za-z0-9._-]+", token)


def test_a_spark_actors_hops_count_as_its_work_once_its_job_is_routed(
    harness: SparkActorHarness, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job's own metric lines reach only its logs: the collector counts its hops, so the console
    (and CloudWatch) see a Spark actor's envelopes processed, not 0.0 a minute; while its job runs,
    the console shows the job's envelopes in flight."""
    monkeypatch.delenv("POWERTOOLS_METRICS_DISABLED", raising=False)
    counted = SparkActorHarness()  # its telemetry made with metrics on
    counted.dispatch(*numbered(1, 2), ("m-raw", "{not an envelope"))
    run = counted.runs[-1]
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    working = open_batches(dynamodb, SPARK_BATCHES, NS, [ACTOR, "b"])
    assert working == {ACTOR: (1, 3)}, "while its job runs: one job, its three envelopes in flight"
    counted.job_ends(run)
    capsys.readouterr()  # what the stand-in job printed: the real one's lines never reach the function
    assert counted.event(run) == {"succeeded": 1}
    activity = ActivityCounter(NS)
    lines = capsys.readouterr().out.splitlines()
    assert all(activity.take(line) for line in lines if line.startswith("{")), "metric lines"
    documents = [json.loads(line) for line in lines if line.startswith("{")]
    outcomes = {d["outcome"]: d["MessagesProcessed"] for d in documents if "MessagesProcessed" in d}
    assert outcomes == {"forwarded": [2.0], "sumped": [1.0]}, "by outcome, as the sidecar counts its own"
    work = activity.activity()[ACTOR]
    assert (work.processed, work.failed) == (3, 1), "two forwarded, one sent to x-sump (ParseError)"
    history = activity.history.history(ACTOR, HOUR)
    assert any(point.p50 is not None for point in history.points[-2:]), "the job's duration, this minute"
    assert open_batches(dynamodb, SPARK_BATCHES, NS, [ACTOR]) == {}, "routed: no job open"


def test_an_admitted_envelope_goes_round_with_its_producer_s_trace(harness: SparkActorHarness) -> None:
    """The dispatcher's send carries the envelope's trace as `AWSTraceHeader`, as every send of the mesh does."""
    arn = boto3.client("secretsmanager", region_name=REGION).create_secret(Name="seal", SecretString="s" * 64)["ARN"]
    settings = SparkSettings.from_env({**harness.variables, "ASYA_SEAL_SECRET": arn, "ASYA_TASKS_TABLE": TASKS})
    transport = MemoryTransport()
    harness.parts = SparkParts.build(settings, transport)
    harness.dispatcher = Dispatcher(harness.parts)
    traceparent = f"00-{new_trace_id()}-{'cd' * 8}-01"
    harness.dispatch(("m1", envelope({"n": 1}, id="env-1", headers={"traceparent": traceparent})))
    [again] = transport.queues[f"asya-{NS}-{ACTOR}"]
    assert again.trace == trace_header(traceparent)


def test_an_envelope_from_outside_the_mesh_is_admitted_before_it_joins_a_batch(harness: SparkActorHarness) -> None:
    """A producer's envelope (no seal, `asya.seal`) is made a task and put back on the actor's queue,
    sealed; only then does a batch take it. A forged one never reaches a job."""
    arn = boto3.client("secretsmanager", region_name=REGION).create_secret(Name="seal", SecretString="s" * 64)["ARN"]
    settings = SparkSettings.from_env({**harness.variables, "ASYA_SEAL_SECRET": arn, "ASYA_TASKS_TABLE": TASKS})
    harness.parts = SparkParts.build(settings)
    harness.dispatcher = Dispatcher(harness.parts)
    forged = envelope({"n": 2}, id="env-2")
    forged["route"] = {"prev": ["x"], "curr": ACTOR, "next": ["b"]}
    harness.dispatch(("m1", envelope({"n": 1}, id="env-1")), ("m2", forged))
    assert harness.runs == [], "nothing from outside the mesh is staged as it came"
    url = harness.sqs.get_queue_url(QueueName=f"asya-{NS}-{ACTOR}")["QueueUrl"]
    [again] = harness.sqs.receive_message(QueueUrl=url, MessageAttributeNames=["All"])["Messages"]
    assert json.loads(again["Body"])["id"] == "env-1"
    [refused] = harness.messages("x-sump")
    assert (refused["id"], refused["status"]["reason"]) == ("sqs-m2", "NotAdmitted")
    record = sqs_record(f"asya-{NS}-{ACTOR}", again["Body"], "m3")
    record["messageAttributes"] = {
        name: {"stringValue": value["StringValue"]} for name, value in again["MessageAttributes"].items()
    }
    harness.dispatcher.handle({"Records": [record]}, LambdaContext(f"asya-{NS}-{ACTOR}"))
    [run] = harness.runs
    assert harness.staged_ids(run) == ["env-1"]
