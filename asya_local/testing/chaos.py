"""Envelopes through a mesh under every fault the local stack injects, counted: the harness of
`make chaos` (bench/chaos.py) and of tests/integration/test_local_faults.py.

The mesh (`chaos_mesh/mesh.yaml`) fans each task out into three branches, retries a flaky
actor, fails some branches for good at another, and passes the rest through a Spark actor. Its
workers are killed mid-batch, get messages delivered twice while their batch runs, and see
throttling, server errors, resets, timeouts and partial batch failures on their AWS calls; the
gateway, the stream poller and the schedule are restarted every few seconds. Tasks are created
through the gateway, so the task table tracks them. Once every queue is idle, `run_chaos` counts:

- lost: envelopes with neither a final result nor a final status;
- duplicated: envelopes with more than one final outcome, or whose result object was written twice;
- re-executed: handler executions beyond one per (envelope id, actor, attempt);
- stuck: task records (roots and branches) whose status is not terminal;
- disagreeing: task records whose final status is not the outcome of their results, and (flow
  `joined`) joined results that miss or repeat a branch;

and the run is good when lost, duplicated, stuck and disagreeing are all 0. Re-executions are
reported, not failed: a worker killed after its handler ran and before its outputs were sent runs
that handler again on redelivery, which at-least-once delivery allows (docs/faults.md).
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asya.fans import FAN_ROOT
from asya_cdk.loading import load_mesh
from asya_local.endpoint.process import LocalEndpoint
from asya_local.functions.faults import AwsFaults, FaultSpec, Restarts
from asya_local.gateway_client import GatewayClient, GatewayError, GatewayUnreachableError
from asya_local.stack import LocalStack
from asya_local.testing.chaos_mesh.actors import PARTS

MESH = Path(__file__).resolve().parent / "chaos_mesh" / "mesh.yaml"
LEDGER = "CHAOS_LEDGER"  # read by the chaos mesh's actors (chaos_mesh/actors.py)
FINAL_OUTCOMES = ("succeeded", "failed", "canceled")  # x-sink's objects; x-sump's `sump.json` is a copy
CREW = ["x-sink", "x-sump"]
ACCESS_LOG = re.compile(r"[A-Z]+ /")  # the gateway's one line per request
ACTORS = ["split", "flaky", "judge", "crunch", "box", "post", "tally"]  # box: a container actor
# What each `fault:` line a worker prints counts as.
FAULT_KINDS = {
    "throttled": "throttle",
    "server": "server error",
    "reset": "connection reset",
    "timeout": "timeout (applied, answer lost)",
    "partial": "partial batch",
    "killed": "worker killed mid-batch",
    "duplicate": "duplicate delivery",
    "restart": "restart (gateway, stream poller, schedule)",
}
GATEWAY_DOWN_SECONDS = 60.0  # the gateway is down for a few seconds at each restart
# The gateway is restarted less often than the other long-lived workers: it takes seconds to start on a
# busy machine, and one killed before it answers again would refuse every task until the run gives up.
RESTART_GATEWAY_SECONDS = 30.0


def chaos_faults(seed: int) -> FaultSpec:
    """Every fault, at rates that make each one happen several times in a run of a few dozen tasks.
    The crew gets every fault but kills: its function timeout (60 s) puts a killed crew batch six
    minutes away, longer than the rest of a short run (docs/faults.md)."""
    return FaultSpec(
        seed=seed,
        kill_worker_rate=0.05,
        duplicate_delivery_rate=0.2,
        aws=AwsFaults(throttle=0.02, server_error=0.01, reset=0.01, timeout=0.01, partial_batch=0.2),
        restart_every=Restarts(gateway=RESTART_GATEWAY_SECONDS, stream=10, schedule=10),
        functions=[*ACTORS, *CREW],
        kill_functions=ACTORS,
    )


@dataclass
class WorkerLines:
    """What the workers print: `fault:` lines counted by kind, the rest kept for a failure's message."""

    faults: Counter[str] = field(default_factory=Counter)
    killed: Counter[str] = field(default_factory=Counter)  # kills by worker: a container actor's consumers too
    tail: list[str] = field(default_factory=list)

    def __call__(self, source: str, line: str) -> None:
        _, marker, fault = line.partition("fault: ")
        if marker:
            kind = FAULT_KINDS.get(fault.split(" ", 1)[0], fault)
            self.faults[kind] += 1
            if kind == FAULT_KINDS["killed"]:
                self.killed[source] += 1
        elif " in, " not in line and not ACCESS_LOG.match(line):
            self.tail = [*self.tail[-200:], f"{source}: {line}"]


@dataclass
class ChaosReport:
    submitted: int
    envelopes: int  # roots and branches the task table knows
    outcomes: Counter[str]
    lost: list[str]
    duplicated: list[str]
    reexecuted: Counter[str]  # by actor
    executions: int
    stuck: list[str]
    disagreeing: list[str]
    explained: dict[str, str]  # each lost or stuck envelope: its record, and the handler runs it had
    faults: Counter[str]
    killed: Counter[str]
    seconds: float
    create_retries: int
    idle: bool  # False: the wait ran out first, and what is still under way counts as lost and stuck

    @property
    def ok(self) -> bool:
        return self.idle and not (self.lost or self.duplicated or self.stuck or self.disagreeing)

    def lines(self) -> Iterator[str]:
        yield f"tasks submitted                {self.submitted}"
        yield f"envelopes (roots + branches)   {self.envelopes}   outcomes {dict(sorted(self.outcomes.items()))}"
        yield f"lost                           {len(self.lost)}"
        yield f"duplicated results             {len(self.duplicated)}"
        yield f"stuck (non-terminal)           {len(self.stuck)}"
        yield f"disagreeing status/result      {len(self.disagreeing)}"
        by_actor = dict(sorted(self.reexecuted.items()))
        yield f"re-executed handlers           {self.reexecuted.total()} of {self.executions} executions   {by_actor}"
        yield f"wall time                      {self.seconds:.0f} s (create to idle)"
        yield f"mesh went idle                 {'yes' if self.idle else 'no: the wait ran out (--timeout)'}"
        yield f"gateway create retries         {self.create_retries}"
        yield "faults fired:"
        for kind in FAULT_KINDS.values():
            yield f"  {kind:<42} {self.faults.get(kind, 0)}"
        yield f"killed, by worker              {dict(sorted(self.killed.items()))}"
        for envelope_id, why in sorted(self.explained.items())[:10]:
            yield f"lost or stuck: {envelope_id}: {why}"

    def problems(self) -> str:
        """The first few ids of each kind of failure, for an assertion message."""
        found = {"lost": self.lost, "duplicated": self.duplicated, "stuck": self.stuck, "disagree": self.disagreeing}
        return "; ".join(f"{name}: {ids[:5]}" for name, ids in found.items() if ids)


def create_tasks(gateway: GatewayClient, flow: str, count: int, parts: int = PARTS) -> tuple[list[str], int]:
    """Task ids, created one by one through the gateway, waiting out its restarts; and the retries.
    Each task fans out into `parts` envelopes: more than a root keeps itself are counted in buckets."""
    ids: list[str] = []
    retries = 0
    for n in range(count):
        deadline = time.monotonic() + GATEWAY_DOWN_SECONDS
        while True:
            try:
                payload = {"n": n} if parts == PARTS else {"n": n, "parts": parts}
                ids.append(gateway.create_task({"flow": flow, "payload": payload})["id"])
                break
            except (GatewayUnreachableError, GatewayError):
                if time.monotonic() > deadline:
                    raise
                retries += 1
                time.sleep(0.2)
    return ids, retries


def task_records(stack: LocalStack) -> dict[str, dict[str, Any]]:
    """Every task record (roots and branches) by id: its status, its root (a branch's) and the branch
    ids it registered (a root's, or a wide fan-out's bucket's, whose root is `fan_root`)."""
    pages = stack.client("dynamodb").get_paginator("scan").paginate(TableName=stack.outputs["TasksTable"])
    return {
        item["id"]["S"]: {
            "status": item.get("status", {}).get("S"),
            "root": item.get("root_id", item.get(FAN_ROOT, {})).get("S"),
            "bucket": FAN_ROOT in item,
            "branch_ids": item.get("branch_ids", {}).get("SS", []),
            "holds_result": "output" in item,
            "joined": "joined_into" in item,
            "output": item.get("output", {}).get("S"),  # a joined task's: the parts it gathered (flow joined)
            "own_outcome": item.get("own_outcome", {}).get("S"),  # a fan-out root's own envelope
            # where it stood, to tell what became of an envelope that is lost or stuck
            "seen": {name: item[name].get("S", item[name].get("N")) for name in SEEN if name in item}
            | {
                "done_ids": item.get("done_ids", {}).get("SS", []),
                "branches": len(item.get("branch_ids", {}).get("SS", [])),
            },
        }
        for page in pages
        for item in page["Items"]
    }


SEEN = (
    "actor",
    "phase",
    "attempt",
    "hop_position",
    "hop_held_until",
    "created_at",
    "updated_at",
    "reason",
    "own_outcome",
)


def result_writes(stack: LocalStack, records: dict[str, dict[str, Any]]) -> dict[str, list[tuple[str, int]]]:
    """Final outcomes kept per envelope id, each with how many times it was written: an object's
    versions (the bench turns versioning on before the run), and a result held by the task record
    (written once: only the write that records the final status carries it)."""
    s3 = stack.client("s3")
    writes: Counter[tuple[str, str]] = Counter(
        (task_id, record["own_outcome"] or record["status"])
        for task_id, record in records.items()
        if record["holds_result"]
    )
    pages = s3.get_paginator("list_object_versions").paginate(
        Bucket=stack.results_bucket, Prefix=f"results/{stack.namespace}/"
    )
    for page in pages:
        for version in page.get("Versions", []):
            _, _, envelope_id, name = version["Key"].split("/", 3)
            outcome = name.removesuffix(".json")
            if outcome in FINAL_OUTCOMES:
                writes[envelope_id, outcome] += 1
    found: defaultdict[str, list[tuple[str, int]]] = defaultdict(list)
    for (envelope_id, outcome), count in writes.items():
        found[envelope_id].append((outcome, count))
    return dict(found)


def expected_root_status(own_and_branches: list[str]) -> str:
    """docs/status.md: a root fails if any branch failed, else is canceled if any was, else succeeds."""
    for outcome in ("failed", "canceled"):
        if outcome in own_and_branches:
            return outcome
    return "succeeded"


def executions(ledger: Path) -> tuple[int, Counter[str]]:
    """(executions, executions beyond the first per envelope id, actor and attempt, by actor)."""
    lines = ledger.read_text().splitlines() if ledger.exists() else []
    again: Counter[str] = Counter()
    for line, count in Counter(lines).items():
        again[line.split("\t")[1]] += count - 1
    return len(lines), +again


def count(
    stack: LocalStack, roots: list[str], ledger: Path, joined_parts: list[int]
) -> tuple[dict[str, Any], Counter[str]]:
    """The four counts that must be zero, and the outcomes seen; `joined_parts`: what a join of flow
    `joined` gathers of each task, in branch order."""
    records = task_records(stack)
    results = result_writes(stack, records)
    branches: defaultdict[str, set[str]] = defaultdict(set)
    for task_id, record in records.items():
        if record["bucket"]:  # a wide fan-out's bucket: branches of its root, registered before they were sent
            branches[record["root"]].update(record["branch_ids"])
            continue
        branches[task_id].update(record["branch_ids"])  # registered before the branches were sent
        if record["root"] and record["root"] != task_id:
            branches[record["root"]].add(task_id)
    branches = defaultdict(set, {root: children - {root} for root, children in branches.items() if children})
    envelopes = [*roots, *(child for root in roots for child in sorted(branches[root]))]
    outcome = {envelope_id: found[0][0] for envelope_id, found in results.items() if len(found) == 1}
    lost = [e for e in envelopes if e not in results and records.get(e, {}).get("status") not in FINAL_OUTCOMES]
    duplicated = [  # with what was written, e.g. `<id> succeeded:2`, to tell a rewrite from two outcomes
        f"{e} {' '.join(f'{kept}:{n}' for kept, n in results[e])}"
        for e in envelopes
        if len(results.get(e, [])) > 1 or any(n > 1 for _, n in results.get(e, []))
    ]
    stuck = [e for e in envelopes if records.get(e, {}).get("status") not in FINAL_OUTCOMES]
    runs = ledger.read_text().splitlines() if ledger.exists() else []
    explained = {
        e: f"record {records.get(e, {}).get('seen', 'none')}; handler runs {[r for r in runs if r.startswith(e)]}"
        for e in {*lost, *stuck}
    }
    disagreeing = [  # a join that left a branch out, or gathered one twice
        f"{root} joined {parts}"
        for root in roots
        if (parts := json.loads(records.get(root, {}).get("output") or "{}").get("parts")) not in (None, joined_parts)
    ]
    for envelope_id in envelopes:
        status = records.get(envelope_id, {}).get("status")
        if status not in FINAL_OUTCOMES or envelope_id not in outcome:
            continue  # counted as stuck or lost
        own = [outcome[envelope_id]]
        if envelope_id in branches:
            own += [  # a branch its join gathered is the join's to judge, not its root's
                outcome[child]
                for child in branches[envelope_id]
                if child in outcome and not records.get(child, {}).get("joined")
            ]
        if status != expected_root_status(own):
            disagreeing.append(envelope_id)
    total, again = executions(ledger)
    counts = {
        "envelopes": len(envelopes),
        "lost": lost,
        "explained": explained,
        "duplicated": duplicated,
        "stuck": stuck,
        "disagreeing": disagreeing,
        "executions": total,
        "reexecuted": again,
    }
    return counts, Counter(outcome.get(e, "none") for e in envelopes)


def run_chaos(
    stack: LocalStack, lines: WorkerLines, ledger: Path, *, flow: str, tasks: int, timeout: float, parts: int = PARTS
) -> ChaosReport:
    """Create `tasks` tasks of `flow` through the stack's gateway, each fanning out into `parts`
    envelopes, wait until the mesh is idle, count."""
    assert stack.gateway_url is not None, "the chaos mesh deploys a gateway"
    stack.client("s3").put_bucket_versioning(Bucket=stack.results_bucket, VersioningConfiguration={"Status": "Enabled"})
    gateway = stack.gateway_client()
    started = time.monotonic()
    roots, retries = create_tasks(gateway, flow, tasks, parts)
    idle = stack.wait_until_idle(timeout=timeout, settle=3)
    seconds = time.monotonic() - started
    counts, outcomes = count(stack, roots, ledger, list(range(parts)))
    return ChaosReport(
        submitted=len(roots),
        outcomes=outcomes,
        faults=lines.faults,
        killed=lines.killed,
        seconds=seconds,
        create_retries=retries,
        idle=idle,
        **counts,
    )


@contextmanager
def chaos_stack(
    endpoint: LocalEndpoint, seed: int, on_line: Callable[[str, str], None]
) -> Iterator[tuple[LocalStack, Path]]:
    """The chaos mesh deployed into `endpoint` under every fault, and the ledger its handlers write.
    The ledger's path reaches every worker (and Spark job) through this process's environment."""
    with tempfile.TemporaryDirectory(prefix="asya-chaos-") as folder:
        ledger = Path(folder) / "executions.tsv"
        previous = os.environ.get(LEDGER)
        os.environ[LEDGER] = str(ledger)
        stack = LocalStack(load_mesh(MESH), port=endpoint.port, on_line=on_line, faults=chaos_faults(seed))
        try:
            stack.deploy(stack.synthesize())
            stack.start_workers()
            yield stack, ledger
        finally:
            stack.stop()
            if previous is None:
                os.environ.pop(LEDGER, None)
            else:
                os.environ[LEDGER] = previous
