"""A flow program at the hop (`asya.hop` with `asya.flows`): an actor's output goes where the program
says, with the route ahead and the program's place in the header; failures go to its `except`, after
the retries; a loop over its bound, a program the envelope cannot carry, a resumed pause, a Spark job's
batch."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from asya.batch import BatchHops, raising
from asya.config import SidecarConfig
from asya.headers import CAUGHT_HEADER, FLOW_HEADER, JOIN_HEADER, JOINED_HEADER
from asya.names import PAUSE
from asya.telemetry import Telemetry
from asya_crew import resume
from asya_local.functions.lambda_shapes import sqs_record
from asya_spark.jobs import SparkJobError
from tests.support.flow_hops import REFINING, arriving, hop, sent
from tests.support.flow_programs import compiled

GUARDED = """
def flow(p):
    try:
        p = draft(p)
        p = evaluate(p)
    except {caught}:
        p = fallback(p)
    return accept(p)
"""
SIDE_BY_SIDE = """
def flow(p):
    p = classify(p)
    p = pick(parallel(model_a(p), escalate(model_b(p))))
    return p
"""
REVIEWED = """
def flow(p):
    p = draft(p)
    while bounded(p["score"] < 8, max_iterations=1):
        p = pause(p)
        if p["approved"] > 0:
            break
    return accept(p)
"""
RETRY = '{"policies": {"retry": {"max_attempts": 3}}, "rules": [{"errors": ["ValueError"], "policy": "retry"}]}'


def _program(tmp_path: Path, source: str) -> dict[str, Any]:
    return compiled(tmp_path, source)


def _loop_node(program: dict[str, Any]) -> str:
    return str(next(index for index, node in enumerate(program["nodes"]) if "while" in node))


def _at(program: dict[str, Any], envelope: dict[str, Any]) -> str:
    """The actor the envelope's header says it was sent to."""
    header = envelope["headers"][FLOW_HEADER]
    assert header["program"] == program, "the program travels unchanged"
    return str(program["nodes"][header["at"]]["call"])


def test_an_output_goes_to_the_programs_next_actor_with_the_shortest_route_ahead(tmp_path: Path) -> None:
    program = _program(tmp_path, REFINING)
    [out] = hop("draft", lambda p: {**p, "score": 3}, arriving(program, {"score": 0}, "draft"))
    assert out["route"] == {"prev": ["draft"], "curr": "refine", "next": ["evaluate", "accept"]}
    assert out["payload"] == {"score": 3}
    assert _at(program, out) == "refine"
    assert out["headers"][FLOW_HEADER]["loops"] == {_loop_node(program): 1}


def test_an_output_that_ends_the_program_goes_to_x_sink_without_the_header(tmp_path: Path) -> None:
    program = _program(tmp_path, REFINING)
    [out] = hop("draft", lambda p: {**p, "score": 9}, arriving(program, {"score": 0}, "draft"))
    assert out["route"]["curr"] == "accept", "the loop is not entered: on to accept"
    [(to, end)] = sent("accept", lambda p: {**p, "ok": True}, out)
    assert to == "x-sink"
    assert end["status"]["phase"] == "succeeded"
    assert end["payload"] == {"score": 9, "ok": True}
    assert FLOW_HEADER not in end["headers"]


def test_a_loop_over_its_bound_fails_with_the_output_it_decided_on(tmp_path: Path) -> None:
    program = _program(tmp_path, REFINING)
    document = arriving(program, {"score": 1}, "evaluate", done=3, loops={_loop_node(program): 2})
    [(to, out)] = sent("evaluate", lambda p: {**p, "score": 2, "evaluated": True}, document)
    assert to == "x-sink"
    assert (out["status"]["phase"], out["status"]["reason"]) == ("failed", "LoopLimit")
    assert out["payload"]["original_payload"] == {"score": 2, "evaluated": True}
    assert "went round 2 times (max_iterations)" in out["payload"]["details"]["message"]


def test_a_condition_the_output_cannot_answer_fails_the_flow_naming_it(tmp_path: Path) -> None:
    program = _program(tmp_path, REFINING)
    [(to, out)] = sent("draft", lambda _: {"no_score": True}, arriving(program, {"score": 0}, "draft"))
    assert (to, out["status"]["reason"]) == ("x-sink", "FlowError")
    assert "flows.py line 5: p['score'] < 8: no field 'score'" in out["payload"]["details"]["message"]


def _second_unreadable(_payload: Any) -> Iterator[Any]:
    yield {"score": 2}
    yield {"no_score": True}


def test_of_several_outputs_the_failure_keeps_the_one_the_program_could_not_read(tmp_path: Path) -> None:
    program = _program(tmp_path, REFINING)
    [(to, out)] = sent("draft", _second_unreadable, arriving(program, {"score": 0}, "draft"))
    assert (to, out["status"]["reason"]) == ("x-sink", "FlowError")
    assert out["payload"]["original_payload"] == {"no_score": True}


def _fails(error: Exception) -> Callable[[Any], Any]:
    def handler(_payload: Any) -> Any:
        raise error

    return handler


@pytest.mark.parametrize("caught", ["ValueError", "Exception", "(TypeError, ValueError)"])
def test_a_failure_inside_try_goes_to_the_except_with_the_actors_input(tmp_path: Path, caught: str) -> None:
    program = _program(tmp_path, GUARDED.format(caught=caught))
    [out] = hop("evaluate", _fails(ValueError("too vague")), arriving(program, {"draft": 1}, "evaluate", done=1))
    assert out["route"] == {"prev": ["done-0", "evaluate"], "curr": "fallback", "next": ["accept"]}
    assert out["payload"] == {"draft": 1}, "p as it was before the call that raised"
    assert out["status"]["phase"] != "failed"
    caught_header = out["headers"][CAUGHT_HEADER]
    assert (caught_header["actor"], caught_header["type"]) == ("evaluate", "ValueError")
    assert caught_header["message"] == "too vague"
    assert _at(program, out) == "fallback"


def test_a_caught_failure_leaves_a_line_in_the_tasks_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The header that carries the error goes with the task's envelopes; its log line stays."""
    logged: list[tuple[str, dict[str, Any]]] = []
    monkeypatch.setattr(Telemetry, "log_failure", lambda _, message, **fields: logged.append((message, fields)))
    program = _program(tmp_path, GUARDED.format(caught="ValueError"))
    hop("evaluate", _fails(ValueError("too vague")), arriving(program, {"draft": 1}, "evaluate", done=1))
    [fields] = [fields for message, fields in logged if message == "the flow's except takes the failure"]
    assert fields == {"error_type": "ValueError", "error_message": "too vague", "goes_to": "fallback"}


def test_a_failure_the_except_does_not_name_fails_as_before(tmp_path: Path) -> None:
    program = _program(tmp_path, GUARDED.format(caught="KeyError"))
    [(to, out)] = sent("evaluate", _fails(ValueError("too vague")), arriving(program, {"draft": 1}, "evaluate"))
    assert to == "x-sink"
    assert (out["status"]["phase"], out["status"]["reason"]) == ("failed", "HandlerError")
    assert out["payload"]["original_payload"] == {"draft": 1}
    assert CAUGHT_HEADER not in out["headers"]


@pytest.mark.parametrize("caught", ["PolicyExhausted", "ValueError"])
def test_with_a_retry_policy_only_the_last_failure_is_caught(tmp_path: Path, caught: str) -> None:
    program = _program(tmp_path, GUARDED.format(caught=caught))
    failing = _fails(ValueError("still vague"))
    [retry] = hop("evaluate", failing, arriving(program, {"draft": 1}, "evaluate"), ASYA_RESILIENCY=RETRY)
    assert retry["route"]["curr"] == "evaluate"
    assert retry["status"]["phase"] == "retrying"
    assert retry["headers"][FLOW_HEADER]["at"] == arriving(program, {}, "evaluate")["headers"][FLOW_HEADER]["at"]
    last = arriving(program, {"draft": 1}, "evaluate", status={"attempt": 3, "max_attempts": 3})
    [out] = hop("evaluate", failing, last, ASYA_RESILIENCY=RETRY)
    assert out["route"]["curr"] == "fallback"
    assert out["headers"][CAUGHT_HEADER]["reason"] == "PolicyExhausted"
    assert out["payload"] == {"draft": 1}
    assert out["status"]["attempt"] == 1, "the except's actor has all its own attempts"


def test_a_policys_on_exhausted_actors_take_the_task_out_of_the_program(tmp_path: Path) -> None:
    """As in a flow of a fixed route, `on_exhausted` replaces the rest of the route: its actors all run,
    then x-sink; the program does not take the task back after the first of them."""
    program = _program(tmp_path, GUARDED.format(caught="KeyError"))
    routed = '{"policies": {"routed": {"max_attempts": 1, "on_exhausted": ["fallback", "classify"]}},'
    routed += ' "rules": [{"errors": ["ValueError"], "policy": "routed"}]}'
    document = arriving(program, {"draft": 1}, "evaluate")
    [(to, out)] = sent("evaluate", _fails(ValueError("no")), document, ASYA_RESILIENCY=routed)
    assert (to, out["status"]["reason"]) == ("fallback", "PolicyRouted")
    assert FLOW_HEADER not in out["headers"]
    [(on, _)] = sent("fallback", lambda p: p, out)
    assert on == "classify"


def test_a_handler_timeout_is_caught_by_except_handler_timeout(tmp_path: Path) -> None:
    program = _program(tmp_path, GUARDED.format(caught="HandlerTimeout"))
    [out] = hop(
        "evaluate",
        lambda _: time.sleep(2),
        arriving(program, {"draft": 1}, "evaluate"),
        ASYA_ACTOR_TIMEOUT_SECONDS="0.2",
    )
    assert out["route"]["curr"] == "fallback"
    assert out["headers"][CAUGHT_HEADER]["reason"] == "HandlerTimeout"


def test_a_handler_timeout_not_caught_goes_to_x_sump_as_before(tmp_path: Path) -> None:
    program = _program(tmp_path, GUARDED.format(caught="ValueError"))
    document = arriving(program, {"draft": 1}, "evaluate")
    [(to, out)] = sent("evaluate", lambda _: time.sleep(2), document, ASYA_ACTOR_TIMEOUT_SECONDS="0.2")
    assert (to, out["status"]["reason"]) == ("x-sump", "HandlerTimeout")


def _routes_itself(payload: Any) -> Iterator[Any]:
    yield ("SET", ".route.next", ["audit"])
    yield {**payload, "routed": True}


def test_a_handler_that_sets_its_route_leaves_the_program(tmp_path: Path) -> None:
    program = _program(tmp_path, REFINING)
    [out] = hop("draft", _routes_itself, arriving(program, {"score": 0}, "draft"))
    assert out["route"] == {"prev": ["draft"], "curr": "audit", "next": []}
    assert FLOW_HEADER not in out["headers"]


def _twice(payload: Any) -> Iterator[Any]:
    yield {"score": 2}
    yield {"score": 9}


def test_each_output_of_a_handler_goes_on_through_the_program(tmp_path: Path) -> None:
    program = _program(tmp_path, REFINING)
    low, high = hop("draft", _twice, arriving(program, {"score": 0}, "draft"))
    assert (low["route"]["curr"], high["route"]["curr"]) == ("refine", "accept")
    assert _at(program, low) == "refine"
    assert _at(program, high) == "accept"
    assert low["id"] == "task-1", "the first output goes on as the task"
    assert (high["id"] != "task-1", high["parent_id"]) == (True, "task-1"), "the second is a child of it"


def test_a_parallel_fans_out_one_branch_each_framed_for_the_join(tmp_path: Path) -> None:
    program = _program(tmp_path, SIDE_BY_SIDE)
    first, second = hop("classify", lambda p: {**p, "kind": "q"}, arriving(program, {}, "classify"))
    assert first["route"] == {"prev": ["classify"], "curr": "model-a", "next": ["pick"]}
    assert second["route"] == {"prev": ["classify"], "curr": "model-b", "next": ["escalate", "pick"]}
    assert first["payload"] == second["payload"] == {"kind": "q"}
    assert (first["id"], second["parent_id"]) == ("task-1", "task-1")
    assert second["id"] != "task-1"
    assert [_at(program, first), _at(program, second)] == ["model-a", "model-b"]
    hop_outputs = hop("classify", lambda p: p, arriving(program, {}, "classify"), ASYA_JOINED_BY="pick")
    frames = [out["headers"][JOIN_HEADER][-1] for out in hop_outputs]
    assert [frame["join"] for frame in frames] == ["pick", "pick"]
    assert sorted(frame["slot"] for frame in frames) == [0, 1]
    assert {frame["width"] for frame in frames} == {2}


def test_a_join_whose_first_branch_failed_goes_on_after_the_join(tmp_path: Path) -> None:
    """A join that collects failures goes on as its first branch's envelope, which failed at model-a
    and is placed there: the program goes on after the join all the same, not into it again."""
    program = _program(tmp_path, SIDE_BY_SIDE)
    document = arriving(program, {}, "model-a")
    document["route"] = {"prev": ["classify", "model-a"], "curr": "pick", "next": []}
    document["headers"][JOINED_HEADER] = {"fan": "f", "width": 2, "failed": [0]}
    document["payload"] = [{"error": "x"}, {"answer": "b"}]
    [(to, out)] = sent("pick", lambda candidates: candidates[1], document)
    assert (to, out["status"]["phase"]) == ("x-sink", "succeeded")
    assert out["payload"] == {"answer": "b"}


def test_no_output_before_a_parallel_ends_the_task_instead_of_joining_nothing(tmp_path: Path) -> None:
    """The join would get an empty list still at the source's place in the program, and its own output
    would fan out again: with no output to decide on, the program goes no further."""
    program = _program(tmp_path, SIDE_BY_SIDE)
    [(to, out)] = sent("classify", lambda _: None, arriving(program, {}, "classify"), ASYA_JOINED_BY="pick")
    assert (to, out["status"]["phase"], out["status"]["reason"]) == ("x-sink", "succeeded", "Completed")


def test_a_branch_goes_on_to_the_join_through_its_chain(tmp_path: Path) -> None:
    program = _program(tmp_path, SIDE_BY_SIDE)
    _, second = hop("classify", lambda p: p, arriving(program, {}, "classify"))
    [on] = hop("model-b", lambda _: {"answer": "b"}, second)
    assert on["route"] == {"prev": ["classify", "model-b"], "curr": "escalate", "next": ["pick"]}
    [joining] = hop("escalate", lambda p: p, on)
    assert joining["route"]["curr"] == "pick"
    assert _at(program, joining) == "pick"


def _paused(program: dict[str, Any], payload: Any) -> str:
    """The envelope x-pause kept, as the gateway sends it to x-resume with the person's input merged."""
    document = arriving(program, payload, PAUSE, done=2, loops={_loop_node(program): 1})
    return json.dumps({**document, "route": {**document["route"], "next": ["accept"]}})


def _resumed(body: str, deployed: frozenset[str] | None = None) -> list[tuple[str, dict[str, Any]]]:
    record = SQSRecord(sqs_record("asya-unit-x-resume", body))
    kept = resume.decide(record, Telemetry("unit", "x-resume"), deployed=deployed)
    return [(to, json.loads(out)) for to, out in kept.follow_ups]


def test_x_resume_continues_the_program_on_the_resumed_payload(tmp_path: Path) -> None:
    program = _program(tmp_path, REVIEWED)
    [(to, out)] = _resumed(_paused(program, {"score": 1, "approved": 1}))
    assert to == out["route"]["curr"] == "accept"
    assert _at(program, out) == "accept"
    assert out["payload"] == {"score": 1, "approved": 1}


def test_x_resume_fails_a_loop_over_its_bound_and_a_condition_it_cannot_read(tmp_path: Path) -> None:
    program = _program(tmp_path, REVIEWED)
    [(to, looped)] = _resumed(_paused(program, {"score": 1, "approved": 0}))
    assert (to, looped["status"]["reason"]) == ("x-sink", "LoopLimit")
    [(to, unread)] = _resumed(_paused(program, {"score": 1}))
    assert (to, unread["status"]["reason"]) == ("x-sink", "FlowError")
    assert "p['approved'] > 0: no field 'approved'" in unread["payload"]["details"]["message"]


def test_x_resume_runs_only_a_program_the_mesh_deployed(tmp_path: Path) -> None:
    program = _program(tmp_path, REVIEWED)
    [(to, out)] = _resumed(_paused(program, {"score": 1, "approved": 1}), frozenset({program["version"]}))
    assert to == "accept", "the deployed program goes on"
    [(to, out)] = _resumed(_paused(program, {"score": 1, "approved": 1}), frozenset({"0123456789ab"}))
    assert (to, out["status"]["reason"]) == ("x-sump", "UnknownProgram")


def test_x_resume_sends_an_unreadable_flow_header_to_x_sump(tmp_path: Path) -> None:
    program = _program(tmp_path, REVIEWED)
    document = json.loads(_paused(program, {"score": 1, "approved": 1}))
    document["headers"][FLOW_HEADER]["at"] = "nowhere"
    [(to, out)] = _resumed(json.dumps(document))
    assert (to, out["status"]["reason"]) == ("x-sump", "InvalidEnvelope")


def test_a_spark_jobs_batch_goes_on_through_the_program_and_its_except(tmp_path: Path) -> None:
    """A Spark actor's job runs the same hop with no status store and no queues: the program decides
    there, on the job's output; a job that failed as a whole is caught by the program's `except`."""
    program = _program(tmp_path, GUARDED.format(caught="SparkJobError"))
    env = {"ASYA_NAMESPACE": "unit", "ASYA_ACTOR_NAME": "evaluate", "ASYA_HANDLER": "tests.support.handlers.echo"}
    config = SidecarConfig.from_env({**env, "ASYA_FLOW_VERSIONS": program["version"]})
    body = json.dumps(arriving(program, {"draft": 1}, "evaluate"))
    [done] = BatchHops(config, handler=lambda p: {**p, "evaluated": True}).run([("m-1", body)])
    assert json.loads(done.body)["route"]["curr"] == "accept"
    assert done.queue == "asya-unit-accept"

    [caught] = BatchHops(config, handler=raising(SparkJobError("ended FAILED"))).run([("m-1", body)])
    assert json.loads(caught.body)["route"]["curr"] == "fallback"
