"""`asya check`: what `cdk deploy` would meet, found before it meets it.

The mesh file is loaded with every AWS quota and naming rule (`asya_cdk.rules`); each Lambda actor's
handler is imported where its local worker would import it (`asya_local.handler_imports`); its
libraries are installed for its platform (cached, as `cdk synth` installs them; no Docker) and its
function measured against Lambda's size limit (`asya_cdk.packaging`); then the stack is synthesized
in this process with bundling skipped (no AWS credentials, no local stack) and summarised: how many
resources of each type it creates, each function's environment at its longest (`asya_cdk.limits`)
and each actor's unzipped size beside Lambda's limits, and the IAM actions each function's role gets.
"""

from __future__ import annotations

import json
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jsii.errors import JSIIError
from rich.console import Console
from rich.table import Table

from asya.names import resource_name
from asya_cdk.cautions import mesh_warnings
from asya_cdk.libraries import LibrariesError
from asya_cdk.limits import LAMBDA_ENVIRONMENT_MAX_BYTES
from asya_cdk.loaded_mesh import LoadedMesh
from asya_cdk.loading import MeshConfigError, load_mesh
from asya_cdk.longest import longest_environments
from asya_cdk.packaging import FunctionSize, function_sizes
from asya_cdk.plan import STACK_BUDGET, plan_stacks
from asya_local.account import account_findings
from asya_local.deploy import synthesize
from asya_local.handler_imports import import_handlers

FUNCTION = "AWS::Lambda::Function"
TASK_DEFINITION = "AWS::ECS::TaskDefinition"  # a container actor's: its task role's actions are listed as a function's
POLICY = "AWS::IAM::Policy"
ROLE = "AWS::IAM::Role"


@dataclass(frozen=True)
class Plan:
    """What `cdk deploy` would create for a mesh."""

    stacks: list[str]  # one line per stack: the main one, then its nested stacks of actors
    resources: dict[str, int]  # CloudFormation type → how many, in every stack
    environments: dict[str, int]  # function name → its environment's bytes at their longest
    actions: dict[str, list[str]]  # function name → the IAM actions its role allows
    sizes: dict[str, FunctionSize]  # an actor's function name → what it unzips to
    tasks: frozenset[str] = frozenset()  # the container actors' task families among `actions`


def plan(mesh: LoadedMesh, stack_budget: int = STACK_BUDGET) -> Plan:
    """`stack_budget`: resources per stack before actors move to nested stacks (`asya_cdk.plan`)."""
    with tempfile.TemporaryDirectory(prefix="asya-check-") as outdir:
        templates = synthesize(mesh, Path(outdir), stack_budget).templates
        # counted as CDK wrote them: `synthesize` leaves out what only AWS runs (`asya_local.deploy.local_template`)
        written = [json.loads(path.read_text()) for path in Path(outdir).glob("*.template.json")]
    counts = Counter(resource["Type"] for template in written for resource in template["Resources"].values())
    environments = {function.function: size for function, size in longest_environments(mesh)}
    actions = {name: found for template in templates for name, found in role_actions(template["Resources"]).items()}
    stacks = plan_stacks(mesh.config, budget=stack_budget).describe()
    sizes = {resource_name(mesh.config.namespace, size.actor): size for size in function_sizes(mesh)}
    tasks = frozenset(
        resource_name(mesh.config.namespace, name)
        for name, actor in mesh.config.actors.items()
        if actor.runtime == "container"
    )
    return Plan(stacks, dict(sorted(counts.items())), environments, dict(sorted(actions.items())), sizes, tasks)


def role_actions(resources: dict[str, Any]) -> dict[str, list[str]]:
    """Each function's name (and each container actor's task family) → the actions of every policy
    attached to its role (inline or separate), in one template (a role and its functions are always in
    the same stack)."""
    by_role: dict[str, set[str]] = {}
    for logical_id, resource in resources.items():
        properties = resource.get("Properties", {})
        if resource["Type"] == POLICY:
            for role in properties.get("Roles", []):
                by_role.setdefault(role.get("Ref", ""), set()).update(_actions(properties["PolicyDocument"]))
        elif resource["Type"] == ROLE:
            for policy in properties.get("Policies", []):
                by_role.setdefault(logical_id, set()).update(_actions(policy["PolicyDocument"]))
    actions = {}
    for resource in resources.values():
        properties = resource.get("Properties", {})
        if resource["Type"] == FUNCTION:
            role = properties["Role"].get("Fn::GetAtt", [""])[0]
            actions[str(properties.get("FunctionName"))] = sorted(by_role.get(role, set()))
        elif resource["Type"] == TASK_DEFINITION:
            role = properties["TaskRoleArn"].get("Fn::GetAtt", [""])[0]
            actions[str(properties.get("Family"))] = sorted(by_role.get(role, set()))
    return dict(sorted(actions.items()))


def _actions(document: dict[str, Any]) -> set[str]:
    found: set[str] = set()
    for statement in document.get("Statement", []):
        if statement.get("Effect", "Allow") == "Allow":
            action = statement.get("Action", [])
            found.update([action] if isinstance(action, str) else action)
    return found


def check(path: Path, console: Console, account: Any = None, queues: Any = None) -> int:
    """Print the plan for the mesh file at `path`; 0 when it is clean, 1 (with the problems) when not.
    With `account` (a Lambda client with the caller's credentials), the account's concurrency is
    checked against the mesh too (`asya_local.account`); with `queues` (an SQS client), the
    namespace against the meshes deployed in the account (`asya_local.namespaces`)."""
    try:
        mesh = load_mesh(path)
    except MeshConfigError as exc:
        for line in str(exc).splitlines():
            console.print(f"[red]asya: {line}[/red]", highlight=False, soft_wrap=True)
        return 1
    handlers = import_handlers(mesh)  # first: a handler that cannot load is a common mistake, and quick to find
    _say(console, path, handlers.warnings, "yellow")
    if handlers.problems:
        _say(console, path, handlers.problems, "red")
        return 1
    try:
        planned = plan(mesh)
    except LibrariesError as exc:
        for line in str(exc).splitlines():
            console.print(f"[red]asya: {path}: {line}[/red]", highlight=False)
        return 1
    except (RuntimeError, JSIIError) as exc:  # what the CDK raised, with its JavaScript stack appended
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        console.print(f"[red]asya: {path}: cdk synth failed: {first}[/red]", highlight=False)
        return 1
    too_large = [problem for size in planned.sizes.values() if (problem := size.problem())]
    if too_large:
        for problem in too_large:
            console.print(f"[red]asya: {path}: {problem}[/red]", highlight=False)
        console.print(_function_table(planned))
        return 1
    warnings, problems = mesh_warnings(mesh), []  # the mesh's own (`asya_cdk.cautions`), then the account's
    if account is not None:
        findings = account_findings(mesh, account, queues)
        warnings += [*findings.warnings, *([findings.skipped] if findings.skipped else [])]
        problems = findings.problems
    _say(console, path, warnings, "yellow")
    if problems:
        _say(console, path, problems, "red")
        return 1
    console.print(f"[green]{path}: mesh '{mesh.config.namespace}' passes every check[/green]", highlight=False)
    for line in planned.stacks:
        console.print(line, highlight=False)
    console.print(_resource_table(planned.resources))
    console.print(_function_table(planned))
    return 0


def _say(console: Console, path: Path, lines: list[str], colour: str) -> None:
    for line in lines:
        console.print(f"[{colour}]asya: {path}: {line}[/{colour}]", highlight=False, soft_wrap=True)


def check_against_account(path: Path, console: Console) -> int:
    """`check` with the account it would deploy to (the caller's credentials and region): what
    `asya check --account` and `asya deploy` run alike. Without a region there is no account to ask:
    it says so and checks the mesh alone, as it does without credentials."""
    import boto3
    from botocore.exceptions import NoRegionError

    try:
        account, queues = boto3.client("lambda"), boto3.client("sqs")
    except NoRegionError as exc:
        console.print(f"[yellow]asya: {path}: the account was not checked ({exc})[/yellow]", highlight=False)
        return check(path, console)
    return check(path, console, account=account, queues=queues)


def _resource_table(resources: dict[str, int]) -> Table:
    table = Table(title=f"cdk deploy creates {sum(resources.values())} resources")
    table.add_column("type")
    table.add_column("count", justify="right")
    for kind, count in resources.items():
        table.add_row(kind, str(count))
    return table


def _function_table(planned: Plan) -> Table:
    table = Table(
        title="functions (and container actors' tasks): environment at its longest, unzipped size, and what the "
        "role may do"
    )
    table.add_column("function")
    table.add_column("environment (bytes)", justify="right")
    table.add_column("unzipped")
    table.add_column("IAM actions")
    for function, actions in planned.actions.items():
        size = planned.environments.get(function)
        shown = f"{size:,} / {LAMBDA_ENVIRONMENT_MAX_BYTES:,}" if size is not None else "?"
        if function in planned.tasks:
            shown = "a task's, no 4 KB limit"
        unzipped = planned.sizes.get(function)
        table.add_row(function, shown, unzipped.describe() if unzipped else "", ", ".join(actions))
    return table
