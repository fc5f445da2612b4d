"""`asya check --account`, which `asya deploy` runs too: a mesh whose reservations or provisioned
concurrency an account cannot grant, or that switches a deployed actor's package type, is refused
before the deploy rolls back; an account limit below what the event sources start with is a warning
with the quota request; without credentials it says what it skipped."""

from __future__ import annotations

from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from rich.console import Console

from asya_cdk.loading import load_mesh
from asya_local.account import account_findings
from asya_local.check import check
from tests.support.lambda_account import Account, NoCredentials


@pytest.fixture
def mesh(tmp_path: Path) -> Path:
    (tmp_path / "mod.py").write_text("def fn(p):\n    return p\n")
    path = tmp_path / "mesh.yaml"
    path.write_text(
        "namespace: acct\nactors:\n"
        "  a: {handler: mod.fn, reserved_concurrency: 20}\n"
        "  b: {handler: mod.fn, reserved_concurrency: 10}\n"
        "  c: {handler: mod.fn}\n"
    )
    return path


def _edit(mesh: Path, line: str, instead: str) -> None:
    mesh.write_text(mesh.read_text().replace(line, instead))


def test_a_roomy_account_passes(mesh: Path) -> None:
    findings = account_findings(load_mesh(mesh), Account(limit=1000, unreserved=1000))
    assert (findings.problems, findings.warnings, findings.skipped) == ([], [], None)


def test_reservations_past_the_unreserved_minimum_are_refused(mesh: Path) -> None:
    findings = account_findings(load_mesh(mesh), Account(limit=120, unreserved=120))
    (problem,) = findings.problems
    assert problem.startswith(
        "the mesh reserves 30 concurrent executions (actors.a.reserved_concurrency 20, "
        "actors.b.reserved_concurrency 10), but the account's limit of 120 leaves 20 to reserve"
    )
    assert "--quota-code L-B99A9384" in problem


def test_what_the_mesh_reserves_today_counts_as_available_again(mesh: Path) -> None:
    """A stack deployed before holds 30 already: the deploy replaces it, so 130 of 160 is enough."""
    held = Account(limit=160, unreserved=130, reserved={"asya-acct-a": 20, "asya-acct-b": 10})
    assert account_findings(load_mesh(mesh), held).problems == []


def test_a_new_accounts_low_limit_is_a_warning_naming_the_quota(mesh: Path) -> None:
    findings = account_findings(load_mesh(mesh), Account(limit=10, unreserved=10))
    assert findings.problems, "a limit of 10 leaves nothing to reserve"
    (warning,) = findings.warnings
    assert warning.startswith(
        "the account's Lambda concurrency is 10; the mesh's 7 queue event sources start 5 batches"
    )
    assert "set max_concurrency on the actors" in warning


def test_without_credentials_it_says_what_it_skipped(mesh: Path) -> None:
    console = Console(record=True, width=300)
    assert check(mesh, console, account=NoCredentials(0, 0)) == 0
    said = console.export_text()
    assert "the account's Lambda concurrency was not checked (NoCredentialsError" in said
    assert "the deployed functions' package types were not checked (NoCredentialsError" in said
    assert "passes every check" in said


@pytest.mark.parametrize(
    ("deployed", "checked", "refused"),
    [
        ("red-prod", "red", "'red' is a prefix of the deployed mesh 'red-prod'"),
        ("red", "red-prod", "the deployed mesh 'red' is a prefix of 'red-prod'"),
        ("blue", "red", None),
        ("red", "red", None),  # its own queues: a mesh deployed again
        ("redder", "red", None),  # asya-red-* does not cover asya-redder-*
    ],
)
def test_a_namespace_that_prefixes_a_deployed_meshs_or_that_one_prefixes_is_refused(
    tmp_path: Path, deployed: str, checked: str, refused: str | None
) -> None:
    (tmp_path / "mod.py").write_text("def fn(p):\n    return p\n")
    path = tmp_path / "mesh.yaml"
    path.write_text(f"namespace: {checked}\nactors:\n  a: {{handler: mod.fn}}\n")
    with mock_aws():
        sqs = boto3.client("sqs", region_name="us-east-1")
        for name in ("a", "x-sink", "x-sump"):
            sqs.create_queue(QueueName=f"asya-{deployed}-{name}")
        findings = account_findings(load_mesh(path), Account(limit=1000, unreserved=1000), sqs)
    if refused is None:
        assert findings.problems == []
    else:
        [problem] = findings.problems
        assert problem.startswith("namespace: ")
        assert refused in problem


def test_the_gateways_reservation_counts_with_the_actors(mesh: Path) -> None:
    text = mesh.read_text() + "gateway: {reserved_concurrency: 15}\n"
    mesh.write_text(text)
    findings = account_findings(load_mesh(mesh), Account(limit=140, unreserved=140))
    [problem] = findings.problems
    assert "reserves 45 concurrent executions" in problem
    assert "gateway.reserved_concurrency 15" in problem


def test_provisioned_concurrency_without_a_reservation_counts_against_the_unreserved_pool(mesh: Path) -> None:
    """30 reserved and 15 provisioned on an actor without a reservation: 45 of the 40 a limit of 140
    leaves, so the actor's alias would fail where reservations alone would pass."""
    _edit(mesh, "c: {handler: mod.fn}", "c: {handler: mod.fn, provisioned_concurrency: 15}")
    findings = account_findings(load_mesh(mesh), Account(limit=140, unreserved=140))
    [problem] = findings.problems
    assert problem.startswith("the mesh reserves 45 concurrent executions (")
    assert "actors.c.provisioned_concurrency 15" in problem
    assert "leaves 40 to reserve" in problem
    assert "live alias would fail" in problem


def test_provisioned_concurrency_within_a_reservation_is_not_counted_twice(mesh: Path) -> None:
    _edit(mesh, "reserved_concurrency: 20}", "reserved_concurrency: 20, provisioned_concurrency: 20}")
    assert account_findings(load_mesh(mesh), Account(limit=130, unreserved=130)).problems == []


def test_what_the_mesh_keeps_provisioned_today_counts_as_available_again(mesh: Path) -> None:
    """The stack deployed before keeps 15 warm on c's alias, out of the unreserved pool: its deploy replaces them."""
    _edit(mesh, "c: {handler: mod.fn}", "c: {handler: mod.fn, provisioned_concurrency: 15}")
    held = Account(limit=145, unreserved=130, provisioned={"asya-acct-c": 15})
    assert account_findings(load_mesh(mesh), held).problems == []


@pytest.mark.parametrize(("deployed", "package"), [("Zip", "image"), ("Image", "zip")])
def test_switching_a_deployed_actors_package_type_is_refused_with_the_two_deploys_that_make_it(
    mesh: Path, deployed: str, package: str
) -> None:
    _edit(mesh, "c: {handler: mod.fn}", f"c: {{handler: mod.fn, package: {package}}}")
    account = Account(limit=1000, unreserved=1000, package_types={"asya-acct-c": deployed, "asya-acct-a": "Zip"})
    [problem] = account_findings(load_mesh(mesh), account).problems
    assert problem.startswith(
        f"actors.c.package is {package}, but its function asya-acct-c is deployed with package type {deployed}"
    )
    assert "deploy the mesh without actors.c" in problem
    assert "wait 60 seconds" in problem
    assert "the queue is deleted with the actor" in problem


def test_an_actor_not_deployed_yet_may_take_either_package(mesh: Path) -> None:
    _edit(mesh, "c: {handler: mod.fn}", "c: {handler: mod.fn, package: image}")
    account = Account(limit=1000, unreserved=1000, package_types={"asya-acct-a": "Zip"})
    assert account_findings(load_mesh(mesh), account).problems == []
