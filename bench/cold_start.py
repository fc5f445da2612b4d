"""Cold start: what a new execution environment spends before its first answer, the mesh's functions
against hand-written Powertools functions doing the same validation and send.

Each measurement is a new Python process (`bench.cold_start_run`) timed from inside: importing the
function's handler module (Lambda's init: for an actor, `asya.actor`, which also reads its secrets and
files and loads its handler) and its first invocation, where whatever is imported lazily and the
first AWS clients are paid. The interpreter's own start is the same for every function and is left
out. Every AWS call is answered in process (`bench.cold_start_run.answer_aws_in_process`): clients and
requests are built as on AWS, and nothing is sent.

- actor: `asya.actor.lambda_handler` with the variables the CDK app gives a plain actor
  (`asya_cdk.environment.lambda_actor_environment`: tasks, events and idempotency tables, the claim
  bucket, the mesh's seal), one SQS event of one sealed envelope: it checks the seal (the secret's
  first read), claims the hop, runs the handler and sends the envelope on.
- Powertools: `bench.powertools_sqs`, the same hop written by hand (boto3, a pydantic model of the
  envelope, Logger, Metrics, BatchProcessor): validates, calls the same function, sends on.
- gateway: `asya_gateway.api.lambda_handler` with the gateway's variables
  (`asya_cdk.environment.gateway_environment`), one `GET /health`.
- Powertools API: `bench.powertools_api`, one route on `APIGatewayRestResolver`, validation on.

The cases run interleaved (one process of each per round) and each figure is the best of its rounds,
so a busy moment of the machine costs every case alike. A first round, not counted, leaves every
copy's bytecode compiled, so no side pays for compiling its sources (on AWS the layer carries no
bytecode: docs/performance.md says what that adds). `--before DIR` runs the mesh's two functions
from another copy of the code as well (DIR holds its `sidecar_layer`, `gateway_api`, `cdk` and
`lambdas`, e.g. `git archive <commit> sidecar_layer gateway_api cdk lambdas | tar -x -C DIR`), in the
same rounds, so a change is measured side by side with what it changed.

    python -m bench.cold_start [--rounds 9] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from asya.names import GATEWAY
from asya.seal import SEAL_ATTRIBUTE, EnvelopeSeal
from asya_cdk.environment import MeshNames, gateway_environment, lambda_actor_environment
from asya_cdk.loading import load_mesh
from asya_local.functions.lambda_shapes import ACCOUNT, REGION, sqs_record
from asya_local.functions.rest_proxy import HttpRequest, proxy_event
from bench.cold_start_run import SEAL_TEXT

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sidecar_layer", "gateway_api", "cdk", "lambdas")  # the mesh's code, of this copy or `--before`'s
MESH_CASES = ("actor", "gateway")
LABELS = {
    "actor": "actor (asya.actor)",
    "powertools": "Powertools SQS hop",
    "gateway": "gateway (GET /health)",
    "powertools-api": "Powertools API (GET /health)",
}
MESH = """
namespace: bench
actors:
  ingest: {handler: bench.cold_start_work.work}
  hop: {handler: bench.cold_start_work.work}
  post: {handler: bench.cold_start_work.work}
flows:
  main: {route: [ingest, hop, post]}
"""
NAMES = MeshNames(
    bucket="asya-bench-results",
    tasks_table="asya-bench-tasks",
    events_table="asya-bench-events",
    idempotency_table="asya-bench-idempotency",
    batches_table="",
    sump_table="asya-bench-sump",
    cursor_secret=f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:asya-bench-cursors",
    seal_secret=f"arn:aws:secretsmanager:{REGION}:{ACCOUNT}:secret:asya-bench-seal",
)
ENVELOPE = {
    "version": 1,
    "id": "cold-0001",
    "route": {"prev": ["ingest"], "curr": "hop", "next": ["post"]},
    "headers": {"trace_id": "t-42"},
    "status": {"phase": "processing", "actor": "ingest", "attempt": 1, "created_at": "2026-11-22T00:00:00.000Z"},
    "payload": {"text": "The quick brown fox jumps over the lazy dog", "score": 0.5},
}
# no AWS endpoint is reached: every call is answered in process, and one that was not would find nothing here
AWS = {
    "AWS_DEFAULT_REGION": REGION,
    "AWS_REGION": REGION,
    "AWS_ACCESS_KEY_ID": "cold-start",
    "AWS_SECRET_ACCESS_KEY": "cold-start",
    "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
    "AWS_EC2_METADATA_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "bench",
}


def _sqs_event(seal_arn: str) -> dict[str, Any]:
    """One envelope, sealed as the previous hop sealed it."""
    body = json.dumps(ENVELOPE)
    record = sqs_record("asya-bench-hop", body)
    seal = EnvelopeSeal(seal_arn, read_secret=lambda _: SEAL_TEXT).seal(body)
    record["messageAttributes"] = {SEAL_ATTRIBUTE: {"stringValue": seal, "dataType": "String"}}
    return {"Records": [record]}


def cases() -> dict[str, tuple[dict[str, str], dict[str, Any]]]:
    """Each case's variables and event, the mesh's from the CDK app's own environment builders."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mesh.yaml"
        path.write_text(MESH)
        mesh = load_mesh(path)
    actor = lambda_actor_environment(mesh, "hop", NAMES)
    gateway = gateway_environment(mesh, NAMES, GATEWAY)
    sqs = _sqs_event(NAMES.seal_secret)
    health = proxy_event(HttpRequest("GET", "/health", [("host", "api.example.com")]), "cold-start")
    powertools = {
        "POWERTOOLS_SERVICE_NAME": "hop",
        "QUEUE_URL_PREFIX": f"https://sqs.{REGION}.amazonaws.com/{ACCOUNT}/",
    }
    return {
        "actor": (actor, sqs),
        "powertools": (powertools, sqs),
        "gateway": (gateway, health),
        "powertools-api": ({"ASYA_NAMESPACE": "bench", "POWERTOOLS_SERVICE_NAME": "api"}, health),
    }


def cold_start(case: str, variables: dict[str, str], event: dict[str, Any], code: Path = ROOT) -> float:
    """Milliseconds from a new process's first import of the function to its first answer, the mesh's
    packages taken from `code` (the benches, always from this copy)."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": os.pathsep.join([*(str(code / package) for package in PACKAGES), str(ROOT)]),
        **AWS,
        **variables,
        "COLD_START_EVENT": json.dumps(event),
    }
    command = [sys.executable, "-m", "bench.cold_start_run", case]
    done = subprocess.run(command, env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{case} failed:\n{done.stderr}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    _check(case, result)
    return float(result["ms"])


def _check(case: str, result: dict[str, Any]) -> None:
    """Each function did its work: the hop sent its envelope on, the API answered 200."""
    answer, calls = result["answer"], result["calls"]
    if case in ("actor", "powertools"):
        sent = "SendMessageBatch" if case == "actor" else "SendMessage"
        assert answer == {"batchItemFailures": []}, f"{case}: {answer}"
        assert sent in calls, f"{case} sent nothing: {calls}"
    else:
        assert answer["statusCode"] == 200, f"{case}: {answer}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=9, help="best of this many rounds is reported")
    parser.add_argument("--before", type=Path, help="another copy of the mesh's code, measured in the same rounds")
    args = parser.parse_args()
    setups = cases()
    runs = [(case, case, ROOT) for case in setups]
    if args.before is not None:
        runs += [(f"{case} before", case, args.before.resolve()) for case in MESH_CASES]
    best = {name: float("inf") for name, _, _ in runs}
    for _, case, code in runs:  # a first round, not counted, compiles every copy's bytecode
        cold_start(case, *setups[case], code)
    for _ in range(args.rounds):
        for name, case, code in runs:
            variables, event = setups[case]
            best[name] = min(best[name], cold_start(case, variables, event, code))
    print(f"cold start: import + init + first invocation, best of {args.rounds} interleaved rounds")
    for case, baseline, goal in (("actor", "powertools", "  (goal: at most 1.2)"), ("gateway", "powertools-api", "")):
        _report(best, case, baseline, goal)


def _report(best: dict[str, float], case: str, baseline: str, goal: str) -> None:
    """One of the mesh's functions against its hand-written counterpart (and as it was, if measured)."""
    rows = [(LABELS[case], case, goal)]
    if f"{case} before" in best:
        rows.append(("  before", f"{case} before", ""))
    for label, name, note in rows:
        print(f"{label:<30}{best[name]:8.1f} ms  {best[name] / best[baseline]:5.2f} x{note}")
    print(f"{LABELS[baseline]:<30}{best[baseline]:8.1f} ms")


if __name__ == "__main__":
    main()
