"""Every change the local endpoint makes to moto, in one list: what each is for, the moto version it
was written against, and the test that proves it (docs/local-stack.md).

A **fidelity** patch makes moto answer as AWS does where the mesh depends on it (a refusal AWS makes,
a stream a poller can read, one DynamoDB request at a time, IAM, EMR Serverless jobs that run).
A **speed** patch makes moto answer the same, faster. `ASYA_LOCAL_SPEED_PATCHES=off` starts the endpoint
with the fidelity patches alone, so `make conformance` can tell whether a new moto still behaves as the
mesh needs without them: the first thing to run when `MOTO_VERSION` no longer matches the installed
moto (`tests/unit/test_local_patches.py` says so).

Patches hold in the process that applies them, and only the endpoint's process does
(`applied_in_this_process`): a test proves a patch through the endpoint, never by applying it beside
the tests, where every later test would run on patched moto.
"""

from __future__ import annotations

import importlib
import inspect
import sys
from dataclasses import dataclass
from enum import StrEnum

MOTO_VERSION = "5.2.5"  # every patch below was written against this moto, and checked with it


class Purpose(StrEnum):
    FIDELITY = "fidelity"
    SPEED = "speed"


@dataclass(frozen=True, slots=True)
class Patch:
    module: str  # under asya_local.endpoint
    function: str  # what applies it, with no argument (but `applied_by` says otherwise)
    purpose: Purpose
    proof: str  # the test that fails without it (speed: that the answers stay the same)
    replaces: str  # a moto attribute it replaces (`module:Class.attribute`), holding its own code once applied
    applied_by: str = ""  # for a patch that needs more than the endpoint's start: who applies it

    def apply(self) -> None:
        getattr(importlib.import_module(f"asya_local.endpoint.{self.module}"), self.function)()

    def applied(self) -> bool:
        """Whether moto runs patched by it in this process: the attribute it replaces is its module's.
        A moto module not imported yet cannot have been patched (and is not imported to find out)."""
        module, _, path = self.replaces.partition(":")
        owner, _, attribute = path.rpartition(".")
        loaded = sys.modules.get(module)
        if loaded is None:
            return False
        found = inspect.getattr_static(getattr(loaded, owner), attribute)
        return getattr(found, "__module__", None) == f"asya_local.endpoint.{self.module}"


PATCHES = (
    Patch(
        "moto_dispatch",
        "apply_dispatch_cache",
        Purpose.SPEED,
        "tests/integration/test_local_mesh.py",
        "moto.moto_server.werkzeug_app:DomainDispatcherApplication.get_backend_for_host",
    ),
    Patch(
        "moto_sqs",
        "apply_depth_fix",
        Purpose.SPEED,
        "tests/integration/test_sqs_conformance.py",
        "moto.sqs.models:Queue.add_message",
    ),
    Patch(
        "moto_sqs_bodies",
        "apply_body_fix",
        Purpose.FIDELITY,
        "tests/unit/test_local_sqs_bodies.py",
        "moto.sqs.models:SQSBackend._validate_message",
    ),
    Patch(
        "moto_sqs_trace",
        "apply_trace_header_fix",
        Purpose.FIDELITY,
        "tests/unit/test_local_sqs_trace.py",
        "moto.sqs.models:SQSBackend.send_message_batch",
    ),
    Patch(
        "moto_xray",
        "apply_segment_check",
        Purpose.FIDELITY,
        "tests/unit/test_local_xray.py",
        "moto.xray.models:XRayBackend.process_segment",
    ),
    Patch(
        "moto_xray",
        "apply_annotation_filter",
        Purpose.FIDELITY,
        "tests/unit/test_trace_cli.py",
        "moto.xray.models:SegmentCollection.summary",
    ),
    Patch(
        "moto_streams",
        "apply_stream_fix",
        Purpose.FIDELITY,
        "tests/unit/test_local_stream_poller.py",
        "moto.dynamodb.models.table:StreamShard.add",
    ),
    Patch(
        "moto_dynamodb",
        "apply_dynamodb_lock",
        Purpose.FIDELITY,
        "tests/unit/test_local_dynamodb_lock.py",
        "moto.dynamodb.responses:DynamoHandler.call_action",
    ),
    Patch(
        "moto_expressions",
        "apply_expression_speedups",
        Purpose.SPEED,
        "tests/unit/test_local_moto_speedups.py",
        "moto.dynamodb.comparisons:ConditionExpressionParser.parse",
    ),
    Patch(
        "moto_items",
        "apply_item_answers",
        Purpose.SPEED,
        "tests/unit/test_local_moto_items.py",
        "moto.dynamodb.responses:DynamoHandler.serialized",
    ),
    Patch(
        "moto_transactions",
        "apply_transaction_fix",
        Purpose.SPEED,
        "tests/unit/test_local_transactions.py",
        "moto.dynamodb.models:DynamoDBBackend.transact_write_items",
    ),
    Patch(
        "moto_iam",
        "apply_iam_fix",
        Purpose.FIDELITY,
        "tests/unit/test_local_iam.py",
        "moto.iam.access_control:IAMRequestBase.check_action_permitted",
    ),
    Patch(
        "moto_cognito",
        "apply_client_rules",
        Purpose.FIDELITY,
        "tests/unit/test_local_cognito_clients.py",
        "moto.cognitoidp.models:CognitoIdpBackend.create_user_pool_client",
    ),
    Patch(
        "moto_roles",
        "apply_managed_policy_fix",
        Purpose.FIDELITY,
        "tests/integration/test_actor_role_scope.py",
        "moto.iam.models:Role.create_from_cloudformation_json",
    ),
    Patch(
        "moto_ecs",
        "apply_task_definition_fix",
        Purpose.FIDELITY,
        "tests/integration/test_container_stack.py",
        "moto.ecs.models:TaskDefinition.create_from_cloudformation_json",
    ),
    Patch(
        "moto_emr",
        "apply_emr_fix",
        Purpose.FIDELITY,
        "tests/integration/test_spark_updates.py",
        "moto.emrserverless.models:EMRServerlessBackend.start_job_run",
        applied_by="asya_local.endpoint.spark_runner.local_spark_runner, with the runner that runs the jobs",
    ),
)


def apply_patches(*, speed: bool) -> list[Patch]:
    """Apply, in the list's order, every patch the endpoint applies at its start (the speed ones only
    if `speed`); returns those applied."""
    chosen = [patch for patch in PATCHES if not patch.applied_by and (speed or patch.purpose is Purpose.FIDELITY)]
    for patch in chosen:
        patch.apply()
    return chosen


def applied_in_this_process() -> list[Patch]:
    """The patches moto runs with in this process: in the endpoint's, every one it applies; in a test
    process, none."""
    return [patch for patch in PATCHES if patch.applied()]
