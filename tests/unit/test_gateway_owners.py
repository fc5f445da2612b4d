"""Each caller's own tasks (docs/callers.md), through the gateway's function as API Gateway hands it
IAM-authorized requests: two AWS principals and an admin. A task another caller owns is answered, at
every door, exactly as a task that does not exist; an admin sees and acts on every task."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import boto3
import orjson
import pytest

from asya.results import result_key
from asya.sump import SumpIndex, sump_entry
from asya.task_record import Report
from asya.task_store import TaskStore
from asya_gateway import api
from asya_gateway.callers import AuthSettings, Caller
from asya_gateway.settings import GatewaySettings
from asya_gateway.task_error import TaskError
from asya_local.functions.lambda_shapes import LambdaContext
from asya_local.functions.rest_proxy import HttpRequest, http_response, proxy_event
from asya_local.testing.tables import EVENTS, SUMP, TASKS
from tests.support.gateway_unit import OPERATOR_KEY, function_on_moto

NS = "n"
BUCKET = "results"
ACCOUNT = "arn:aws:iam::111122223333"
ANA, BO = f"{ACCOUNT}:user/ana", f"{ACCOUNT}:user/bo"
ADMIN = "arn:aws:sts::111122223333:assumed-role/MeshAdmin/cy"
ADMINS = "arn:aws:sts::111122223333:assumed-role/MeshAdmin/*"
ADMIN_ROLE = "arn:aws:sts::111122223333:assumed-role/MeshAdmin"
LOADER = "arn:aws:sts::111122223333:assumed-role/Loader"  # a role an ECS service's tasks run as
JSON = ("content-type", "application/json")


class Gateway:
    """The gateway's function, called by AWS principals as API Gateway's IAM authorization names them."""

    def __init__(self, tasks: TaskStore) -> None:
        self.tasks = tasks

    def send(
        self, principal: str | None, method: str, path: str, body: Any = None, key: str | None = None
    ) -> tuple[int, Any]:
        """(status, JSON body) of a request signed by `principal` (None: with the mesh's API key);
        `key`: its `Idempotency-Key`."""
        headers = [JSON] if body is not None else []
        if key is not None:
            headers.append(("Idempotency-Key", key))
        if principal is None:
            headers.append(OPERATOR_KEY)
        content = orjson.dumps(body) if body is not None else b""
        event = proxy_event(HttpRequest(method, path, headers, content), "unit")
        event["requestContext"]["identity"]["userArn"] = principal
        answered = http_response(api.lambda_handler(event, LambdaContext(f"asya-{NS}-gateway", timeout_seconds=29)))
        text = answered.body.decode()
        return answered.status, orjson.loads(text) if text.startswith(("{", "[")) else text

    def create(self, principal: str | None) -> str:
        status, created = self.send(principal, "POST", "/api/v1/mesh", {"route": ["a"], "payload": {"n": 1}})
        assert status == 201, created
        return str(created["id"])

    def record(self, task_id: str) -> dict[str, Any]:
        found = self.tasks.get(task_id)
        assert found is not None, f"no record of {task_id}"
        return found

    def listed(self, principal: str | None) -> set[str]:
        status, page = self.send(principal, "GET", "/api/v1/mesh?limit=100")
        assert status == 200, page
        return {task["id"] for task in page["tasks"]}


@pytest.fixture
def gateway() -> Iterator[Gateway]:
    settings = GatewaySettings(
        namespace=NS,
        tasks_table=TASKS,
        events_table=EVENTS,
        sump_table=SUMP,
        results_bucket=BUCKET,
        auth=AuthSettings(mode="iam", admin_principals=(ADMINS,)),
    )
    with function_on_moto(settings, actors=("a", "x-resume"), bucket=BUCKET) as service:
        yield Gateway(service.tasks)


def unknown(task_id: str) -> dict[str, Any]:
    """The answer to a task id no one ever made."""
    return {"statusCode": 404, "message": f"no task {task_id!r}"}


def test_a_task_belongs_to_its_creator_and_its_creator_sees_it(gateway: Gateway) -> None:
    task_id = gateway.create(ANA)
    assert gateway.record(task_id)["owner"] == f"iam:{ANA}"
    status, task = gateway.send(ANA, "GET", f"/api/v1/mesh/{task_id}")
    assert (status, task["id"]) == (200, task_id)
    assert task["owner"] == f"iam:{ANA}"


DOORS = [
    ("get", "GET", "/api/v1/mesh/{id}", None),
    ("wait", "GET", "/api/v1/mesh/{id}?wait=1", None),
    ("follow", "GET", "/api/v1/mesh/{id}/events", None),
    ("post event", "POST", "/api/v1/mesh/{id}/events", {"type": "status", "status": "failed", "reason": "Nope"}),
    ("cancel", "DELETE", "/api/v1/mesh/{id}", None),
    ("cancel (A2A)", "POST", "/a2a/tasks/{id}:cancel", None),
    ("resume", "POST", "/api/v1/mesh/{id}/resume", {"input": {"ok": True}}),
    ("rerun", "POST", "/api/v1/mesh/{id}/rerun", {}),
    ("follow ticket", "POST", "/api/v1/mesh/{id}/ticket", None),
]


@pytest.mark.parametrize(("door", "method", "path", "body"), DOORS, ids=[door[0] for door in DOORS])
def test_another_callers_task_is_answered_as_a_task_that_does_not_exist(
    gateway: Gateway, door: str, method: str, path: str, body: Any
) -> None:
    task_id = gateway.create(ANA)
    never_made = "6a1d7f7e-0000-4000-8000-000000000000"
    assert gateway.send(BO, method, path.format(id=never_made), body) == (404, unknown(never_made)), door
    assert gateway.send(BO, method, path.format(id=task_id), body) == (404, unknown(task_id)), door
    assert gateway.record(task_id)["status"] == "pending", f"{door} by another caller changed the task"
    assert gateway.listed(ANA) == {task_id}, f"{door} by another caller made a task"


def test_each_caller_lists_its_own_tasks_and_an_admin_every_task(gateway: Gateway) -> None:
    ana, bo = gateway.create(ANA), gateway.create(BO)
    injected = "injected-into-sqs"  # started by a message sent straight to the first actor's queue
    gateway.tasks.report(Report(task_id=injected, actor="a", route={"prev": [], "curr": "a", "next": []},
                                phase="processing", progress=0.0))  # fmt: skip
    assert gateway.listed(ANA) == {ana}
    assert gateway.listed(BO) == {bo}
    assert gateway.listed(ADMIN) == {ana, bo, injected}
    assert gateway.listed(None) == {ana, bo, injected}, "the API key's holder is an admin"
    assert gateway.send(ANA, "GET", f"/api/v1/mesh/{injected}") == (404, unknown(injected))
    assert gateway.send(ADMIN, "GET", f"/api/v1/mesh/{injected}")[0] == 200
    assert gateway.send(None, "GET", f"/api/v1/mesh/{injected}")[0] == 200


def test_a_principal_nobody_declared_sees_nothing(gateway: Gateway) -> None:
    """A request that names no one (it never happens behind IAM authorization) owns and sees nothing."""
    task_id = gateway.create(ANA)
    assert gateway.listed("") == set()
    assert gateway.send("", "GET", f"/api/v1/mesh/{task_id}") == (404, unknown(task_id))


def test_an_admin_acts_on_another_callers_task(gateway: Gateway) -> None:
    task_id = gateway.create(ANA)
    status, task = gateway.send(ADMIN, "DELETE", f"/api/v1/mesh/{task_id}")
    assert (status, task["status"]) == (200, "canceled")
    status, rerun = gateway.send(ADMIN, "POST", f"/api/v1/mesh/{task_id}/rerun", {})
    assert status == 201, rerun
    rerun_record = gateway.record(rerun["id"])
    assert rerun_record["owner"] == f"iam:{ADMIN_ROLE}", "a re-run is its creator's, as any new task"
    assert rerun_record["created_by"] == ADMIN
    assert gateway.listed(ANA) == {task_id}


def test_a_fan_out_branch_is_its_roots_owners(gateway: Gateway) -> None:
    root = gateway.create(ANA)
    branch = f"{root}-1"  # its record is made by the actor that runs it, which does not know the owner
    gateway.tasks.report(Report(task_id=branch, actor="a", route={"prev": [], "curr": "a", "next": []},
                                phase="processing", progress=0.0, parent_id=root, root_id=root))  # fmt: skip
    assert gateway.send(ANA, "GET", f"/api/v1/mesh/{branch}")[0] == 200
    assert gateway.send(BO, "GET", f"/api/v1/mesh/{branch}") == (404, unknown(branch))
    assert gateway.listed(ANA) == {root, branch}
    assert gateway.listed(BO) == set()
    running = {  # the branch runs, its root is pending: its owner is read from the root
        principal: [task["id"] for task in gateway.send(principal, "GET", "/api/v1/mesh?status=running")[1]["tasks"]]
        for principal in (ANA, BO)
    }
    assert running == {ANA: [branch], BO: []}


def test_an_idempotency_key_is_each_callers_own(gateway: Gateway) -> None:
    """Two callers who happen to use the same key make a task each; neither finds the other's."""
    body = {"route": ["a"], "payload": {"n": 1}}
    (ana_status, ana), (bo_status, bo) = (
        gateway.send(who, "POST", "/api/v1/mesh", body, key="k1") for who in (ANA, BO)
    )
    assert (ana_status, bo_status) == (201, 201)
    assert ana["id"] != bo["id"]
    assert not bo["replayed"]


def test_a_roles_task_is_its_next_sessions_too(gateway: Gateway) -> None:
    """An ECS task, an EC2 instance or a CI job assumes its role under a new session name each time it
    starts: restarted, it still finds, lists and cancels the tasks it created, and the record says which
    session created each."""
    first, restarted = f"{LOADER}/ecs-task-0b7c", f"{LOADER}/ecs-task-91fe"
    task_id = gateway.create(first)
    record = gateway.record(task_id)
    assert (record["owner"], record["created_by"]) == (f"iam:{LOADER}", first)
    status, task = gateway.send(restarted, "GET", f"/api/v1/mesh/{task_id}")
    assert (status, task["owner"], task["created_by"]) == (200, f"iam:{LOADER}", first)
    assert gateway.listed(restarted) == {task_id}
    assert gateway.send(restarted, "DELETE", f"/api/v1/mesh/{task_id}")[0] == 200
    other_role = "arn:aws:sts::111122223333:assumed-role/Reporter/ecs-task-0b7c"
    assert gateway.send(other_role, "GET", f"/api/v1/mesh/{task_id}") == (404, unknown(task_id))


def test_a_create_retried_from_a_new_session_of_its_role_finds_the_first_task(gateway: Gateway) -> None:
    """A CI job whose create's answer was lost retries from its next run, under another session name,
    with the same key: one task."""
    body = {"route": ["a"], "payload": {"n": 1}}
    status, made = gateway.send(f"{LOADER}/ci-run-1", "POST", "/api/v1/mesh", body, key="deploy-812")
    assert status == 201
    status, again = gateway.send(f"{LOADER}/ci-run-2", "POST", "/api/v1/mesh", body, key="deploy-812")
    assert (status, again["id"], again["replayed"]) == (200, made["id"], True)
    assert gateway.listed(f"{LOADER}/ci-run-3") == {made["id"]}


def test_with_ownership_session_a_new_session_finds_nothing() -> None:
    """`gateway.ownership: session` keeps each session apart (people sharing a role through IAM
    Identity Center, say, whose session names are their own)."""
    settings = GatewaySettings(
        namespace=NS,
        tasks_table=TASKS,
        events_table=EVENTS,
        auth=AuthSettings.parse('{"mode": "iam", "ownership": "session"}'),
    )
    with function_on_moto(settings) as service:
        gateway = Gateway(service.tasks)
        task_id = gateway.create(f"{LOADER}/ana@example.com")
        assert gateway.record(task_id)["owner"] == f"iam:{LOADER}/ana@example.com"
        assert "created_by" not in gateway.record(task_id)
        assert gateway.send(f"{LOADER}/bo@example.com", "GET", f"/api/v1/mesh/{task_id}") == (404, unknown(task_id))


def failed_in_sump(gateway: Gateway, task_id: str) -> None:
    """The task's envelope failed at `a` and x-sump kept it (its copy in the results bucket)."""
    document = {
        "id": task_id,
        "route": {"prev": [], "curr": "a", "next": []},
        "headers": {},
        "status": {"phase": "failed", "actor": "a", "reason": "HandlerError", "error": {"message": "boom"}},
        "payload": {"n": 1},
    }
    key = result_key(NS, task_id, "sump")
    boto3.client("s3").put_object(Bucket=BUCKET, Key=key, Body=orjson.dumps(document))
    SumpIndex(SUMP).add(sump_entry(document, key, dt.datetime.now(dt.UTC), 0))
    gateway.tasks.finish(task_id, task_id, "failed", {"reason": "HandlerError"})


def test_x_sumps_entries_are_their_tasks_owners(gateway: Gateway) -> None:
    ana, bo = gateway.create(ANA), gateway.create(BO)
    for task_id in (ana, bo):
        failed_in_sump(gateway, task_id)
    never = "6a1d7f7e-0000-4000-8000-000000000000"
    for path, body in (("/api/v1/sump/{}", None), ("/api/v1/sump/{}:redrive", {})):
        gone = gateway.send(BO, "POST" if body is not None else "GET", path.format(never), body)
        hidden = gateway.send(BO, "POST" if body is not None else "GET", path.format(ana), body)
        assert gone[0] == hidden[0] == 404
        assert hidden[1] == {**gone[1], "message": gone[1]["message"].replace(never, ana)}
    assert gateway.send(ANA, "GET", f"/api/v1/sump/{ana}")[0] == 200
    listed = {
        principal: {entry["id"] for entry in gateway.send(principal, "GET", "/api/v1/sump")[1]["entries"]}
        for principal in (ANA, BO, ADMIN)
    }
    assert listed == {ANA: {ana}, BO: {bo}, ADMIN: {ana, bo}}
    assert gateway.record(ana)["status"] == "failed", "another caller's redrive did nothing"
    status, redriven = gateway.send(ANA, "POST", f"/api/v1/sump/{ana}:redrive", {})
    assert (status, redriven["to"]) == (202, "a")


def test_mcp_and_the_local_event_stream_are_scoped_too(gateway: Gateway) -> None:
    task_id = gateway.create(ANA)
    failed_in_sump(gateway, task_id)
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "sump_show", "arguments": {"id": task_id}},
    }
    status, answer = gateway.send(BO, "POST", "/mcp", call)
    assert status == 200
    assert answer["result"]["isError"]
    assert f"x-sump kept nothing for {task_id!r}" in answer["result"]["content"][0]["text"]
    assert not gateway.send(ANA, "POST", "/mcp", call)[1]["result"]["isError"]
    with pytest.raises(TaskError) as refused:
        api.open_event_stream(task_id, None, max_seconds=0.1, caller=Caller(owner=f"iam:{BO}"))
    assert (refused.value.status, str(refused.value)) == (404, f"no task {task_id!r}")
    assert api.open_event_stream(task_id, None, max_seconds=0.1) is not None, "the local server's own: the operator"


def test_a_short_id_finds_the_callers_own_tasks_and_branches_of_its_roots_an_admin_every_task(
    gateway: Gateway,
) -> None:
    ana, bo = gateway.create(ANA), gateway.create(BO)
    branch = f"{ana[:8]}-branch"  # shares the root's short id, as a branch named after its root would
    gateway.tasks.report(Report(task_id=branch, actor="a", route={"prev": [], "curr": "a", "next": []},
                                phase="processing", progress=0.0, parent_id=ana, root_id=ana))  # fmt: skip

    def short(principal: str | None, given: str) -> list[str]:
        status, page = gateway.send(principal, "GET", f"/api/v1/mesh?id_prefix={given}")
        assert status == 200, page
        return sorted(task["id"] for task in page["tasks"])

    assert short(ANA, ana[:8].upper()) == sorted([ana, branch]), "its own root and the root's branch"
    assert short(BO, ana[:8]) == [], "another caller's task and its branch are not found"
    assert short(BO, bo[:8]) == [bo]
    assert short(ADMIN, ana[:8]) == sorted([ana, branch])
    assert short(ADMIN, bo[:8]) == [bo]
