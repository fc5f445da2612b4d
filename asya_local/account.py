"""`asya check --account`: the account's Lambda concurrency against what the mesh reserves and starts,
and (`asya_local.namespaces`) its namespace against the meshes the account already has.

Two ways a real account's concurrency breaks a mesh that is right on paper:

- **Reserved and provisioned concurrency.** Lambda lets a function reserve concurrency only while the
  account keeps a minimum unreserved (100, or the whole limit of an account whose limit is lower): a
  reservation past it fails `CreateFunction`, and the stack rolls back. Provisioned concurrency of a
  function without a reservation comes out of the same unreserved pool, so past it the actor's `live`
  alias fails instead, with the same rollback. What this mesh's functions already reserve or keep
  provisioned (a stack deployed before) is counted as available again, since the deploy replaces it.
- **A low account limit.** An SQS event source starts five concurrent batches as soon as messages are
  there. Batches throttled by the account's limit return to their queue after the visibility timeout,
  and each return counts as a receive: after `max_receive_count` of them a healthy envelope reaches
  x-sump as `Redriven`. New accounts may start at a limit of 10.

A third check (`asya_local.package_types`) compares each deployed actor's package type with the mesh's.

The account's settings are read with `lambda:GetAccountSettings` (and, per function,
`GetFunctionConcurrency`, `GetProvisionedConcurrencyConfig` and `GetFunctionConfiguration`), its
meshes with `sqs:ListQueues`, with the caller's credentials; without them, or without the rights, it
says what it skipped. `asya check --account` and `asya deploy` run it alike (`asya_local.check`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from asya.names import CREW, GATEWAY, resource_name
from asya_cdk.actor import LIVE_ALIAS
from asya_cdk.loaded_mesh import LoadedMesh
from asya_local.namespaces import namespace_problems
from asya_local.package_types import package_type_problems

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
    """The account's concurrency against the mesh, and its deployed functions' package types
    (`asya_local.package_types`); with `sqs`, its namespace against the meshes deployed
    (`asya_local.namespaces`). Each is checked apart: one the credentials cannot read is skipped,
    saying why, and the others still checked."""
    from botocore.exceptions import BotoCoreError, ClientError

    findings = AccountFindings()
    try:
        findings.problems += namespace_problems(mesh, sqs) if sqs is not None else []
    except (BotoCoreError, ClientError) as exc:
        findings.warnings.append(
            f"the deployed namespaces were not checked ({type(exc).__name__}: {exc}); it needs sqs:ListQueues"
        )
    try:
        findings.problems += package_type_problems(mesh, lambda_client)
    except (BotoCoreError, ClientError) as exc:
        findings.warnings.append(
            f"the deployed functions' package types were not checked ({type(exc).__name__}: {exc}); it needs "
            "lambda:GetFunctionConfiguration"
        )
    try:
        settings = lambda_client.get_account_settings()
        held_now = _held_now(mesh, lambda_client)
    except (BotoCoreError, ClientError) as exc:
        findings.skipped = (
            f"the account's Lambda concurrency was not checked ({type(exc).__name__}: {exc}); it needs "
            "credentials allowed lambda:GetAccountSettings, lambda:GetFunctionConcurrency and "
            "lambda:GetProvisionedConcurrencyConfig"
        )
        return findings
    limit = int(settings["AccountLimit"]["ConcurrentExecutions"])
    unreserved = int(settings["AccountLimit"]["UnreservedConcurrentExecutions"])
    drawing = _drawing(mesh)
    minimum = min(UNRESERVED_MINIMUM, limit)
    available = unreserved + sum(held_now.values()) - minimum
    wanted = sum(drawing.values())
    if wanted > available:
        fields = ", ".join(f"{name} {value}" for name, value in drawing.items())
        findings.problems.append(
            f"the mesh reserves {wanted} concurrent executions ({fields}), but the account's limit of {limit} "
            f"leaves {max(available, 0)} to reserve (Lambda keeps {minimum} unreserved, and an actor's provisioned "
            "concurrency without reserved_concurrency comes out of the unreserved): CreateFunction or the actor's "
            f"live alias would fail and the stack roll back; lower them, or ask for more ({_quota_request(limit)})"
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


def _drawing(mesh: LoadedMesh) -> dict[str, int]:
    """What the mesh takes out of the account's unreserved pool, by field: every reservation, and the
    provisioned concurrency of an actor without one (with one, it is kept within the reservation)."""
    drawing = {}
    for name, actor in mesh.config.actors.items():
        if actor.reserved_concurrency:
            drawing[f"actors.{name}.reserved_concurrency"] = actor.reserved_concurrency
        elif actor.provisioned_concurrency:
            drawing[f"actors.{name}.provisioned_concurrency"] = actor.provisioned_concurrency
    if mesh.config.gateway.reserved_concurrency:
        drawing["gateway.reserved_concurrency"] = mesh.config.gateway.reserved_concurrency
    return drawing


def _held_now(mesh: LoadedMesh, lambda_client: Any) -> dict[str, int]:
    """What this mesh's functions take out of the unreserved pool today (a stack deployed before): a
    reservation, or else the provisioned concurrency of the actor's `live` alias. The deploy replaces
    both, so they count as available again."""
    held = {}
    for name in [*mesh.config.actors, GATEWAY]:
        function = resource_name(mesh.config.namespace, name)
        try:
            answer = lambda_client.get_function_concurrency(FunctionName=function)
        except lambda_client.exceptions.ResourceNotFoundException:
            continue
        if answer.get("ReservedConcurrentExecutions") is not None:
            held[function] = int(answer["ReservedConcurrentExecutions"])
        elif name in mesh.config.actors:
            held[function] = _provisioned_now(lambda_client, function)
    return held


def _provisioned_now(lambda_client: Any, function: str) -> int:
    """The provisioned concurrency a function's `live` alias asks for today; 0 without the alias or a
    configuration on it."""
    missing = (
        lambda_client.exceptions.ResourceNotFoundException,
        lambda_client.exceptions.ProvisionedConcurrencyConfigNotFoundException,
    )
    try:
        answer = lambda_client.get_provisioned_concurrency_config(FunctionName=function, Qualifier=LIVE_ALIAS)
    except missing:
        return 0
    return int(answer.get("RequestedProvisionedConcurrentExecutions", 0))


def _quota_request(value: int) -> str:
    return (
        f"aws service-quotas request-service-quota-increase --service-code lambda --quota-code "
        f"{CONCURRENCY_QUOTA} --desired-value {value}"
    )
