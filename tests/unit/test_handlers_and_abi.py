"""Handler styles, handler loading errors, and the ABI verbs with their read-only rules (docs/actors.md)."""

from __future__ import annotations

import threading

import pytest

from asya.abi import AbiError, EnvelopeState
from asya.handler import HandlerConfigError, load_handler
from tests.support import handlers
from tests.support.mesh import Mesh, envelope


def test_sync_function(mesh: Mesh) -> None:
    mesh.actor("enrich")
    mesh.deliver(envelope(payload={"x": 1}))
    assert mesh.only("b")["payload"] == {"x": 1, "seen": True}


def test_class_method_instantiated_once_per_environment(mesh: Mesh) -> None:
    handlers.Model.instances = 0
    mesh.actor("Model.predict")
    mesh.deliver(envelope(payload={"x": 2}, id="e1"), envelope(payload={"x": 3}, id="e2"))
    mesh.deliver(envelope(payload={"x": 4}, id="e3"))
    outs = sorted(mesh.messages("b"), key=lambda e: e["id"])
    assert [o["payload"] for o in outs] == [
        {"prediction": 4, "instances": 1},
        {"prediction": 6, "instances": 1},
        {"prediction": 8, "instances": 1},
    ]


def test_async_function(mesh: Mesh) -> None:
    mesh.actor("async_enrich")
    mesh.deliver(envelope(payload={"x": 1}))
    assert mesh.only("b")["payload"] == {"x": 1, "async": True}


def test_sync_generator(mesh: Mesh) -> None:
    mesh.actor("fan_out")
    mesh.deliver(envelope(payload={"items": [1, 2]}))
    assert sorted(e["payload"]["item"] for e in mesh.messages("b")) == [1, 2]


def test_async_generator_with_verbs(mesh: Mesh) -> None:
    mesh.actor("async_fan_out")
    mesh.deliver(envelope(payload={"items": ["p", "q"]}, next=("b", "c")))
    outs = mesh.messages("b")
    assert sorted(e["payload"]["item"] for e in outs) == ["p", "q"]
    assert all(e["payload"]["next"] == ["b", "c"] for e in outs)


def test_async_handler_timeout_is_stopped(mesh: Mesh) -> None:
    mesh.actor("async_slow", ASYA_ACTOR_TIMEOUT_SECONDS="0.2")
    mesh.deliver(envelope(payload={"sleep": 5}))
    assert mesh.only("x-sump")["status"]["reason"] == "HandlerTimeout"
    mesh.actor("async_enrich")
    mesh.deliver(envelope(payload={"x": 1}))
    assert mesh.only("b")["payload"]["async"] is True, "the next async handler runs on a fresh loop"


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        ("", "must be 'module.function' or 'module.Class.method'"),
        ("nodots", "must be 'module.function' or 'module.Class.method'"),
        ("tests.support.handlers.", "must be 'module.function' or 'module.Class.method'"),
        ("no_such_module.fn", "no module named 'no_such_module' (ASYA_HANDLER='no_such_module.fn')"),
        ("tests.support.handlers.missing", "module 'tests.support.handlers' has no attribute 'missing'"),
        (
            "tests.support.handlers.enrch",
            "module 'tests.support.handlers' has no attribute 'enrch' (did you mean 'enrich'?)",
        ),
        ("tests.support.handlers.Model.missing", "class 'tests.support.handlers.Model' has no attribute 'missing'"),
        ("tests.support.handlers.NOT_CALLABLE", "names int, not a function or method"),
        ("tests.support.handlers.Model", "names type, not a function or method"),
        ("tests.support.handlers.NeedsArgs.run", "could not be created with no arguments"),
        ("tests.support.broken_module.fn", "importing 'tests.support.broken_module' failed"),
    ],
)
def test_bad_handler_strings_give_clear_errors(spec: str, fragment: str) -> None:
    with pytest.raises(HandlerConfigError) as caught:
        load_handler(spec)
    assert fragment in str(caught.value)


def test_verbs_get_set_del_fly(mesh: Mesh) -> None:
    mesh.actor("verbs")
    mesh.deliver(envelope(next=("b",), headers={"keep": 1, "drop-me": 2}))

    out = mesh.only("b")
    assert out["route"] == {"prev": ["a"], "curr": "b", "next": ["c"]}, "SET .route.next[999:] appends"
    assert out["payload"] == {
        "seen_next": ["b", "c"],
        "seen_headers": ["drop-me", "keep", "traceparent", "x-asya-first-attempt"],  # the hop's span
        "id": "env-1",
    }
    assert out["headers"]["priority"] == "high"
    assert out["headers"]["keep"] == 1
    assert "drop-me" not in out["headers"]
    assert out["status"]["note"] == "checked"
    assert "token" not in str(out["payload"]), "FLY events are not routed"
    mesh.assert_empty("c", "x-sink")


@pytest.mark.parametrize("path", [".id", ".parent_id", ".route.prev", ".route.curr", ".route.prev[0]"])
def test_writing_read_only_paths_is_an_abi_error(mesh: Mesh, path: str) -> None:
    mesh.actor("write_path")
    mesh.deliver(envelope(payload={"path": path}))

    out = mesh.only("x-sink")
    assert out["status"]["phase"] == "failed"
    assert out["payload"]["details"]["type"] == "AbiError"
    assert f"{path} is read-only" in out["payload"]["details"]["message"]
    mesh.assert_empty("b")


@pytest.mark.parametrize(
    ("path", "value", "fragment"),
    [
        (".payload", 1, "is not writable"),
        (".route", {}, "is not writable"),
        (".headers", {}, "is not writable"),
        (".route.next", "b", "needs a list of actor names"),
        (".route.next[0]", 5, "needs an actor name"),
        ("route.next", ["b"], "must be a string starting with '.'"),
        (".route.next[x]", ["b"], "cannot parse path"),
        (".route.next", ["b", "x-sink"], "x-sink may not be named in a route"),
        (".route.next[999:]", ["x-sump"], "x-sump may not be named in a route"),
        (".route.next[0]", "x-sink", "needs an actor name: x-sink may not be named"),
        (".route.next[0]", "two words", "'two words' is not an actor name"),
        (".status.attempt", "2", "status attempt: Input should be a valid integer"),
        (".status.deadline_at", 1700000000, "status deadline_at: must be an RFC 3339 timestamp"),
        (".status.phase", "done", "status phase: Input should be 'pending'"),
    ],
)
def test_invalid_writes_are_abi_errors(mesh: Mesh, path: str, value: object, fragment: str) -> None:
    mesh.actor("write_path")
    mesh.deliver(envelope(payload={"path": path, "value": value}))
    details = mesh.only("x-sink")["payload"]["details"]
    assert details["type"] == "AbiError"
    assert fragment in details["message"]


def test_abi_error_is_raised_inside_the_generator(mesh: Mesh) -> None:
    mesh.actor("catches_abi_error")
    mesh.deliver(envelope())
    assert mesh.only("b")["payload"] == {"caught": "AbiError", "message": ".route.curr is read-only"}


def test_envelope_mode_receives_and_returns_the_whole_envelope(mesh: Mesh) -> None:
    mesh.actor("whole_envelope", ASYA_HANDLER_MODE="envelope")
    mesh.deliver(envelope(next=("b",), headers={"x": 1}))
    out = mesh.only("b")
    assert out["payload"] == {"saw_id": "env-1", "saw_prev": []}
    assert out["route"] == {"prev": ["a"], "curr": "b", "next": ["c"]}
    assert out["headers"]["mode"] == "envelope"
    assert out["headers"]["x"] == 1


@pytest.mark.parametrize(
    ("handler", "fragment"),
    [
        ("envelope_changes_id", ".id is read-only"),
        ("envelope_bad_status", "the returned envelope's .status: status attempt"),
    ],
)
def test_envelope_mode_enforces_the_abi_rules(mesh: Mesh, handler: str, fragment: str) -> None:
    mesh.actor(handler, ASYA_HANDLER_MODE="envelope")
    mesh.deliver(envelope())
    details = mesh.only("x-sink")["payload"]["details"]
    assert details["type"] == "AbiError"
    assert fragment in details["message"]
    mesh.assert_empty("b", "x-sump")


def test_handler_in_a_worker_thread_is_abandoned_on_timeout(mesh: Mesh) -> None:
    """Outside the main thread there are no signals: the handler's thread is abandoned instead."""
    mesh.actor("slow", ASYA_ACTOR_TIMEOUT_SECONDS="0.2")
    responses: list[object] = []
    thread = threading.Thread(target=lambda: responses.append(mesh.deliver(envelope(payload={"sleep": 30}))))
    thread.start()
    thread.join(timeout=15)
    assert not thread.is_alive(), "the sidecar must not wait for an overrunning handler"
    assert responses == [{"batchItemFailures": []}]
    assert mesh.only("x-sump")["status"]["reason"] == "HandlerTimeout"


def test_status_changes_by_the_handler_travel_on(mesh: Mesh) -> None:
    mesh.actor("rewrites_status")
    mesh.deliver(envelope(status={"phase": "processing", "note": "old", "reason": "was"}))
    status = mesh.only("b")["status"]
    assert status["reason"] == "handler-said"
    assert "note" not in status


@pytest.mark.parametrize(
    "verb", [("SET", ".headers.k", {1, 2}), ("FLY", {"at": object()}), ("SET", ".status.note", b"x")]
)
def test_a_value_that_is_not_json_is_an_abi_error_at_its_yield(verb: tuple[object, ...]) -> None:
    state = EnvelopeState("e", None, [], "a", ["b"], {}, {}, None, on_fly=lambda _: None)
    with pytest.raises(AbiError, match="the value is not JSON the envelope can carry"):
        state.apply(verb)
    assert state.headers == {}
    assert state.status == {}
    assert state.flies == []


def test_a_status_write_that_is_refused_leaves_the_status_as_it_was() -> None:
    state = EnvelopeState("e", None, [], "a", [], {}, {"attempt": 2}, None, on_fly=lambda _: None)
    with pytest.raises(AbiError):
        state.apply(("SET", ".status.attempt", 0))
    assert state.status == {"attempt": 2}
