"""The mesh as an A2A agent on the local stack, driven by the official SDK's own clients (`a2a-sdk`):
its card read without credentials (no flows in it) and its extended card with them, flows run as tasks
by message (waited for, and streamed with their FLY events and output), listed, canceled, resubscribed
to, paused for a person and resumed by a message naming the task, an unknown task refused as A2A says;
A2A 0.3's client too (docs/a2a.md)."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import httpx
import pytest
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.client.card_resolver import A2ACardResolver
from a2a.helpers.proto_helpers import get_data_parts, new_data_part
from a2a.types.a2a_pb2 import (
    AgentCard,
    CancelTaskRequest,
    GetExtendedAgentCardRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageConfiguration,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError

from tests.support.stack import RunningMesh

pytestmark = pytest.mark.integration
T = TypeVar("T")


def run(work: Callable[[], Awaitable[T]]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(work(), timeout=90)

    return asyncio.run(bounded())


@asynccontextmanager
async def agent(
    mesh: RunningMesh, *, streaming: bool = True, legacy: bool = False, headers: dict[str, str] | None = None
) -> AsyncIterator[Client]:
    """The SDK's client of the mesh, from its card; `legacy`: the card's A2A 0.3 interface only, so the
    SDK speaks 0.3 (its `a2a.compat.v0_3` transport). `headers`: the caller's credentials (by default
    the mesh's API key)."""
    assert mesh.stack.gateway_url is not None
    credentials = {"x-api-key": mesh.stack.api_key} if headers is None else headers
    async with httpx.AsyncClient(headers=credentials, timeout=60) as http:
        factory = ClientFactory(ClientConfig(streaming=streaming, httpx_client=http))
        card = await A2ACardResolver(http, mesh.stack.gateway_url).get_agent_card()
        if legacy:
            kept = [face for face in card.supported_interfaces if face.protocol_version == "0.3"]
            del card.supported_interfaces[:]
            card.supported_interfaces.extend(kept)
        client = factory.create(card)
        try:
            yield client
        finally:
            await client.close()


def ask(skill: str, data: Any, *, task_id: str = "", immediately: bool = False) -> SendMessageRequest:
    message = Message(message_id=str(uuid.uuid4()), role=Role.ROLE_USER, parts=[new_data_part(data)], task_id=task_id)
    if not task_id:
        message.metadata.update({"skill": skill})
    return SendMessageRequest(message=message, configuration=SendMessageConfiguration(return_immediately=immediately))


async def answers(stream: AsyncIterator[StreamResponse]) -> list[StreamResponse]:
    return [answer async for answer in stream]


def state(answer: StreamResponse) -> str:
    """What an answer says of the task's state (`artifact` for an artifact update)."""
    kind = answer.WhichOneof("payload")
    if kind == "task":
        return str(TaskState.Name(answer.task.status.state))
    if kind == "status_update":
        return str(TaskState.Name(answer.status_update.status.state))
    return str(kind).removesuffix("_update")


def output(task: Task) -> Any:
    (artifact,) = task.artifacts
    (data,) = get_data_parts(artifact.parts)
    return data


def test_the_card_is_read_without_credentials_and_the_skills_are_the_extended_cards(
    running_mesh: RunningMesh,
) -> None:
    """By default (`gateway.a2a.public_card: minimal`) the card anyone reads names no flow; the SDK's
    client, with the mesh's key, reads the flows as skills from the authenticated extended card."""
    assert running_mesh.stack.gateway_url is not None

    async def card() -> AgentCard:
        async with httpx.AsyncClient(timeout=30) as anonymous:  # no API key
            return await A2ACardResolver(anonymous, running_mesh.stack.gateway_url or "").get_agent_card()

    async def extended() -> AgentCard:
        async with agent(running_mesh, streaming=False) as client:
            return await client.get_extended_agent_card(GetExtendedAgentCardRequest())

    public = run(card)
    assert (list(public.skills), list(public.capabilities.extensions)) == ([], [])
    assert public.capabilities.streaming
    assert public.capabilities.extended_agent_card
    assert {face.url for face in public.supported_interfaces} == {f"{running_mesh.stack.gateway_url}/a2a"}
    found = run(extended)
    flows = httpx.get(
        f"{running_mesh.stack.gateway_url}/api/v1/flows", headers={"x-api-key": running_mesh.stack.api_key}
    ).json()["flows"]
    assert sorted(skill.id for skill in found.skills) == sorted(flows)
    (schemas,) = found.capabilities.extensions
    assert schemas.params["skills"]["pipeline"]["inputSchema"]["required"] == ["n"]


def test_a_message_runs_its_skill_and_answers_with_the_output(running_mesh: RunningMesh) -> None:
    async def send() -> list[StreamResponse]:
        async with agent(running_mesh, streaming=False) as client:
            return await answers(client.send_message(ask("pipeline", {"n": 2})))

    (answer,) = run(send)
    assert state(answer) == "TASK_STATE_COMPLETED", running_mesh.errors()
    assert output(answer.task) == {"n": 2, "prepped": True, "label": "even", "done": True}


def test_a_stream_has_the_task_its_fly_events_its_output_and_ends_completed(running_mesh: RunningMesh) -> None:
    async def stream() -> list[StreamResponse]:
        async with agent(running_mesh) as client:
            return await answers(client.send_message(ask("chat", {"q": "hi"})))

    streamed = run(stream)
    states = [state(answer) for answer in streamed]
    assert streamed[0].HasField("task"), states
    assert states[-2:] == ["artifact", "TASK_STATE_COMPLETED"], states
    order = ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]
    seen = [order.index(found) for found in states if found in order]
    assert seen == sorted(seen), f"the states go forward only: {states}"
    flown = [
        get_data_parts(answer.status_update.status.message.parts)[0]
        for answer in streamed
        if answer.HasField("status_update") and answer.status_update.status.message.parts
    ]
    assert flown == [{"token": "thinking"}, {"token": "about"}, {"token": "it"}], states
    assert output(Task(artifacts=[streamed[-2].artifact_update.artifact])) == {"q": "hi", "said": 3, "done": True}


def test_tasks_are_listed_and_a_running_one_is_canceled(running_mesh: RunningMesh) -> None:
    async def cancel() -> tuple[list[str], Task]:
        async with agent(running_mesh, streaming=False) as client:
            (started,) = await answers(client.send_message(ask("sleepy", {"sleep": 5}, immediately=True)))
            listed = await client.list_tasks(ListTasksRequest(page_size=20))
            canceled = await client.cancel_task(CancelTaskRequest(id=started.task.id))
            return [task.id for task in listed.tasks], canceled

    listed, canceled = run(cancel)
    assert canceled.id in listed
    assert TaskState.Name(canceled.status.state) == "TASK_STATE_CANCELED"


def test_a_resubscription_follows_the_task_from_where_it_is_to_its_end(running_mesh: RunningMesh) -> None:
    async def resubscribe() -> list[StreamResponse]:
        async with agent(running_mesh, streaming=False) as client:
            (started,) = await answers(client.send_message(ask("sleepy", {"sleep": 2}, immediately=True)))
        async with agent(running_mesh) as client:  # the SDK resubscribes with a client that streams
            return await answers(client.subscribe(SubscribeToTaskRequest(id=started.task.id)))

    followed = run(resubscribe)
    states = [state(answer) for answer in followed]
    assert followed[0].HasField("task"), states
    assert states[-2:] == ["artifact", "TASK_STATE_COMPLETED"], states
    assert output(Task(artifacts=[followed[-2].artifact_update.artifact])) == {"sleep": 2, "done": True}


def timed_subscription(
    mesh: RunningMesh, ticks: dict[str, Any], headers: dict[str, str] | None = None, after: float = 0.0
) -> list[tuple[float, StreamResponse]]:
    """A2A's `SubscribeToTask` to a `ticks` task started `after` seconds before, each answer with when
    it arrived (`time.time()`)."""

    async def subscribe() -> list[tuple[float, StreamResponse]]:
        async with agent(mesh, streaming=False, headers=headers) as client:
            (started,) = await answers(client.send_message(ask("ticks", ticks, immediately=True)))
        await asyncio.sleep(after)
        async with agent(mesh, headers=headers) as client:
            subscribed = client.subscribe(SubscribeToTaskRequest(id=started.task.id))
            return [(time.time(), answer) async for answer in subscribed]

    return run(subscribe)


def flown_latencies(followed: list[tuple[float, StreamResponse]]) -> list[tuple[int, float]]:
    """Each FLY event's tick and how long after its emission (`at`) it arrived."""
    flown = [
        (arrived, get_data_parts(answer.status_update.status.message.parts)[0])
        for arrived, answer in followed
        if answer.HasField("status_update") and answer.status_update.status.message.parts
    ]
    return [(fly["tick"], arrived - fly["at"]) for arrived, fly in flown]


def test_a_subscription_to_a_working_task_gets_each_fly_event_within_a_second(running_mesh: RunningMesh) -> None:
    """FLY's fast lane over A2A: `SubscribeToTask` hears the task's channel, so each FLY event reaches
    the subscriber as a status update within a second of its emission, not seconds later in a lump."""
    followed = timed_subscription(running_mesh, {"ticks": 6, "every": 0.3, "wait": 1.0})
    states = [state(answer) for _, answer in followed]
    assert states[-2:] == ["artifact", "TASK_STATE_COMPLETED"], states
    timed = flown_latencies(followed)
    assert [tick for tick, _ in timed] == list(range(6)), states
    latencies = sorted(latency for _, latency in timed)
    print(f"FLY emit to A2A subscriber, seconds: p50 {latencies[3]:.3f}, max {latencies[-1]:.3f}")
    assert latencies[-1] < 1.0, latencies


def test_a_paused_task_requires_input_and_a_message_naming_it_resumes_it(running_mesh: RunningMesh) -> None:
    async def review() -> tuple[Task, Task]:
        async with agent(running_mesh, streaming=False) as client:
            (paused,) = await answers(client.send_message(ask("review", {"n": 3})))
            (resumed,) = await answers(client.send_message(ask("", {"approved": True}, task_id=paused.task.id)))
            return paused.task, resumed.task

    paused, resumed = run(review)
    assert TaskState.Name(paused.status.state) == "TASK_STATE_INPUT_REQUIRED", running_mesh.errors()
    assert paused.status.message.parts[0].text, "the prompt"
    assert resumed.id == paused.id
    assert TaskState.Name(resumed.status.state) == "TASK_STATE_COMPLETED", running_mesh.errors()
    assert output(resumed) == {"n": 3, "prepped": True, "approved": True, "done": True}


def test_an_unknown_task_is_a2a_s_task_not_found(running_mesh: RunningMesh) -> None:
    async def unknown() -> None:
        async with agent(running_mesh) as client:
            await client.get_task(GetTaskRequest(id=f"no-such-task-{uuid.uuid4()}"))

    with pytest.raises(TaskNotFoundError):
        run(unknown)


def test_the_sdk_s_a2a_0_3_client_sends_and_streams(running_mesh: RunningMesh) -> None:
    async def legacy() -> tuple[list[StreamResponse], list[StreamResponse]]:
        async with agent(running_mesh, streaming=False, legacy=True) as client:
            sent = await answers(client.send_message(ask("pipeline", {"n": 5})))
        async with agent(running_mesh, legacy=True) as client:
            streamed = await answers(client.send_message(ask("pipeline", {"n": 6})))
        return sent, streamed

    sent, streamed = run(legacy)
    assert state(sent[0]) == "TASK_STATE_COMPLETED", running_mesh.errors()
    assert output(sent[0].task) == {"n": 5, "prepped": True, "label": "odd", "done": True}
    assert [state(answer) for answer in streamed][-2:] == ["artifact", "TASK_STATE_COMPLETED"]
