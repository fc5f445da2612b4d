"""`asya check --account`: the account's Lambda concurrency against what the mesh reserves and starts,
and (`asya_local.namespaces`) its namespace against the meshes the account already has.

Two ways a real account's concurrency breaks a mesh that is right on paper:

- **Reserved concurrency.** Lambda lets a function reserve concurrency only while the account keeps a
  minimum unreserved (100, or the whole limit of an account whose limit is lower): a reservation past
  it fails `CreateFunction`, and the stack rolls back. What this mesh's functions already reserve (a
  stack deployed before) is counted as available again, since the deploy replaces it.
- **A low account limit.** An SQS event source starts five concurrent batches as soon as messages are
  there. Batches throttled by the account's limit return to their queue after the visibility timeout,
  and each return counts as a receive: after `max_receive_count` of them a healthy envelope reaches
  x-sump as `Redriven`. New accounts may start at a limit of 10.

The account's settings are read with `lambda:GetAccountSettings` (and `GetFunctionConcurrency` per
function), its meshes with `sqs:ListQueues`, with the caller's credentials; without them, or without
the rights, it says what it skipped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from asya.names import CREW, GATEWAY, resource_name
from asya_cdk.loaded_mesh import LoadedMesh
from asya_local.namespaces import namespace_problems

UNRESERVED_MINIMUM = 100  # Lambda keeps at least this much unreserved (all of a smaller account limit)
BATCHES_PER_EVENT_SOURCE = 5  # what an SQS event source starts with when messages are there
CONCURRENCY_QUOTA = "L-B99A9384"  # Service Quotas' code for Lambda's concurrent executions


@dataclass
class AccountFindings:
    """What the account means for the mesh: problems stop a deploy, warnings do not."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: str | None = None  # what could not be checked, and why


def account_findings(mesh: LoadedMesh, lambda_client: Any, sqs: Any = None) -> AccountFindings:
    """The account's concurrency against the mesh; with `sqs`, its namespace against the meshes
    deployed (`asya_local.namespaces`). Each is checked apart: one the credentials cannot read is
    skipped, saying why, and the other still checked."""
    from botocore.exceptions import BotoCoreError, ClientError

    findings = AccountFindings()
    try:
        findings.problems += namespace_problems(mesh, sqs) if sqs is not None else []
    except (BotoCoreError, ClientError) as exc:
        findings.warnings.append(
            f"the deployed namespaces were not checked ({type(exc).__name__}: {exc}); it needs sqs:ListQueues"
        )
    try:
        settings = lambda_client.get_account_settings()
        reserved_now = _reserved_now(mesh, lambda_client)
    except (BotoCoreError, ClientError) as exc:
        findings.skipped = (
            f"the account's Lambda concurrency was not checked ({type(exc).__name__}: {exc}); it needs "
            "credentials allowed lambda:GetAccountSettings and lambda:GetFunctionConcurrency"
        )
        return findings
    limit = int(settings["AccountLimit"]["ConcurrentExecutions"])
    unreserved = int(settings["AccountLimit"]["UnreservedConcurrentExecutions"])
    reserving = {
        f"actors.{name}.reserved_concurrency": actor.reserved_concurrency
        for name, actor in mesh.config.actors.items()
        if actor.reserved_concurrency
    }
    if mesh.config.gateway.reserved_concurrency:
        reserving["gateway.reserved_concurrency"] = mesh.config.gateway.reserved_concurrency
    minimum = min(UNRESERVED_MINIMUM, limit)
    available = unreserved + sum(reserved_now.values()) - minimum
    wanted = sum(reserving.values())
    if wanted > available:
        fields = ", ".join(f"{name} {value}" for name, value in reserving.items())
        findings.problems.append(
            f"the mesh reserves {wanted} concurrent executions ({fields}), but the account's limit of {limit} "
            f"leaves {max(available, 0)} to reserve (Lambda keeps {minimum} unreserved): CreateFunction would "
            f"fail and the stack roll back; lower the reservations, or ask for more ({_quota_request(limit)})"
        )
    sources = len(mesh.config.actors) + len(CREW)  # every actor's queue (a Spark actor's feeds its dispatcher)
    starting = sources * BATCHES_PER_EVENT_SOURCE
    if limit < starting:
        findings.warnings.append(
            f"the account's Lambda concurrency is {limit}; the mesh's {sources} queue event sources start "
            f"{BATCHES_PER_EVENT_SOURCE} batches each ({starting}) when work arrives, and throttled batches "
            "return to their queues as receives, so healthy envelopes may be redriven to x-sump; set "
            f"max_concurrency on the actors, or ask for more ({_quota_request(max(1000, starting))})"
        )
    return findings


def _reserved_now(mesh: LoadedMesh, lambda_client: Any) -> dict[str, int]:
    """What this mesh's functions reserve today (a stack deployed before): its deploy replaces it."""
    reserved = {}
    for name in [*mesh.config.actors, GATEWAY]:
        function = resource_name(mesh.config.namespace, name)
        try:
            answer = lambda_client.get_function_concurrency(FunctionName=function)
        except lambda_client.exceptions.ResourceNotFoundException:
            continue
        if answer.get("ReservedConcurrentExecutions") is not None:
            reserved[function] = int(answer["ReservedConcurrentExecutions"])
    return reserved


def _quota_request(value: int) -> str:
    return (
        f"aws service-quotas request-service-quota-increase --service-code lambda --quota-code "
        f"{CONCURRENCY_QUOTA} --desired-value {value}"
    )
