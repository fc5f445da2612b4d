"""One hop of a flow program at the sidecar, for tests: the envelope a task of a program brings to an
actor, and what the hop there sends."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from asya.config import SidecarConfig
from asya.dedup import HopLedger
from asya.flow_program import Program, digest
from asya.flows import start
from asya.headers import FLOW_HEADER
from asya.hop import HopRunner
from asya.telemetry import Telemetry

REFINING = """
def flow(p):
    p = draft(p)
    try:
        while bounded(p["score"] < 8, max_iterations=2):
            p = refine(p)
            p = evaluate(p)
    except (PolicyExhausted, KeyError):
        p = fallback(p)
    return accept(p)
"""


def arriving(program: dict[str, Any], payload: Any, at: str, *, done: int = 0, **fields: Any) -> dict[str, Any]:
    """The envelope a task of `program` on `payload` brings to actor `at`, after `done` actors (the
    program's own header, moved to `at`'s call: the first call of that actor in the program)."""
    _, header, _ = start(program, payload)
    node = next(index for index, node in enumerate(program["nodes"]) if node.get("call") == at)
    header = {**header, "at": node, **({"loops": fields.pop("loops")} if "loops" in fields else {})}
    prev = [f"done-{index}" for index in range(done)]
    document = {
        "id": "task-1",
        "route": {"prev": prev, "curr": at, "next": Program(program).shortest(node)[1:]},
        "headers": {FLOW_HEADER: header},
        "payload": payload,
    }
    document.update(fields)
    return document


def hop(actor: str, handler: Callable[[Any], Any], document: dict[str, Any], **env: str) -> list[dict[str, Any]]:
    """The envelopes one hop at `actor` sends, as sent."""
    return [out for _, out in sent(actor, handler, document, **env)]


def sent(
    actor: str, handler: Callable[[Any], Any], document: dict[str, Any], **env: str
) -> list[tuple[str, dict[str, Any]]]:
    """What one hop at `actor` sends: (destination, envelope) for each output. The sidecar knows the
    envelope's program as deployed, as the mesh tells it (`ASYA_FLOW_VERSIONS`), unless `env` says."""
    header = document.get("headers", {}).get(FLOW_HEADER)
    program = header.get("program") if isinstance(header, dict) else None
    deployed = digest(program) if isinstance(program, dict) else ""
    config = SidecarConfig.from_env(
        {
            "ASYA_NAMESPACE": "unit",
            "ASYA_ACTOR_NAME": actor,
            "ASYA_HANDLER": "tests.support.handlers.echo",
            "ASYA_FLOW_VERSIONS": deployed,
            **env,
        }
    )
    runner = HopRunner(config, handler, HopLedger(), Telemetry("unit", actor))
    runner.ledger.start_batch()
    plan = runner.run("m-1", json.dumps(document), None)
    return [(out.destination, json.loads(body)) for out, body in zip(plan.outbound, plan.bodies, strict=True)]
