"""The cost bench's arithmetic on tiny known inputs, so it cannot print a wrong bill without failing here."""

from __future__ import annotations

import sys
from decimal import Decimal
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from asya_gateway import api
from asya_local.testing.metering import (
    ItemLookup,
    Measurement,
    Meter,
    Usage,
    dynamodb_usage,
    item_bytes,
    metered,
    per_million,
    read_units,
    sqs_usage,
    step_functions,
    write_units,
)


def test_an_item_is_sized_as_dynamodb_bills_it() -> None:
    # names count; a string is its UTF-8 bytes; 123 is 2 digit pairs + 1; a map adds 3 + 1 per entry
    item = {"id": {"S": "abc"}, "n": {"N": "123"}, "m": {"M": {"k": {"BOOL": True}}}}
    assert item_bytes(item) == (2 + 3) + (1 + 3) + (1 + 3 + 1 + 1 + 1)


@pytest.mark.parametrize(
    ("old", "new", "transactional", "units"),
    [(0, 100, False, 1), (0, 1024, False, 1), (0, 1025, False, 2), (3000, 100, False, 3), (0, 1500, True, 4)],
)
def test_a_write_pays_per_started_kilobyte_of_the_larger_image(
    old: int, new: int, transactional: bool, units: int
) -> None:
    assert write_units(old, new, transactional) == units


def test_a_read_pays_per_started_4_kb_and_half_when_eventually_consistent() -> None:
    assert read_units(0, consistent=True) == 1.0
    assert read_units(5000, consistent=True) == 2.0
    assert read_units(5000, consistent=False) == 1.0


def test_sqs_bills_a_batch_per_64_kb_chunk_and_names_empty_receives() -> None:
    batch = {"Entries": [{"Id": str(n), "MessageBody": "x" * 10_000} for n in range(10)]}
    assert sqs_usage("SendMessageBatch", batch, {}) == [Usage("sqs", "SendMessageBatch", "request", 2)]
    assert sqs_usage("ReceiveMessage", {}, {}) == [Usage("sqs", "ReceiveMessage (empty)", "request", 1)]


def test_a_batch_get_charges_the_minimum_for_a_key_not_found() -> None:
    params = {"RequestItems": {"t": {"Keys": [{"id": {"S": "a"}}, {"id": {"S": "b"}}], "ConsistentRead": True}}}
    parsed = {"Responses": {"t": [{"id": {"S": "a"}}]}}
    assert dynamodb_usage("BatchGetItem", params, parsed, {}, {}) == [Usage("dynamodb", "BatchGetItem t", "RRU", 2.0)]


def test_the_meter_counts_what_a_client_sends_not_its_own_lookups() -> None:
    lookups = ItemLookup()
    meter = Meter(lookups.size, lookups.key_of)
    with mock_aws(), metered(meter):
        dynamodb = boto3.client("dynamodb", region_name="us-east-1")
        with meter.paused():
            dynamodb.create_table(
                TableName="t",
                KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                BillingMode="PAY_PER_REQUEST",
            )
        dynamodb.put_item(TableName="t", Item={"id": {"S": "a"}, "v": {"S": "x" * 1500}})
        dynamodb.update_item(
            TableName="t",
            Key={"id": {"S": "a"}},
            UpdateExpression="SET v = :v",
            ExpressionAttributeValues={":v": {"S": "y"}},
        )
    assert meter.usage == [Usage("dynamodb", "PutItem t", "WRU", 2), Usage("dynamodb", "UpdateItem t", "WRU", 2)]
    assert dict(meter.calls) == {"dynamodb PutItem": 1, "dynamodb UpdateItem": 1}


def test_one_hop_is_priced_per_million() -> None:
    one = Measurement(
        tasks=1, hops=1, usage=[Usage("sqs", "SendMessage", "request", 1)], empty_polls=0, queues=1, hop_seconds=0.01
    )
    one.usage.append(Usage("dynamodb", "UpdateItem t", "WRU", 1))
    assert per_million(one.dollars(), one.hops) == Decimal("1.025")  # $0.40 + $0.625


def test_step_functions_for_a_four_hop_task() -> None:
    standard, express = step_functions(hops_per_task=4, seconds_per_hop=0.01)
    assert standard * 1_000_000 == pytest.approx(Decimal("125.80"))  # 5 transitions + 4 Lambda requests
    # a request, 100 ms at 64 MB, 4 Lambda requests
    assert express * 1_000_000 == pytest.approx(Decimal("1.00") + Decimal("0.1041875") + Decimal("0.80"))


def test_step_functions_enters_a_choice_state_for_each_decision_of_a_flow_program() -> None:
    # 7 Task states and x-sink's hop as the bench counts them, 4 Choice states, the start
    standard, _ = step_functions(hops_per_task=8, seconds_per_hop=0.01, decisions_per_task=4)
    assert standard * 1_000_000 == pytest.approx(Decimal("326.60"))  # 13 transitions + 8 Lambda requests


def test_a_flow_program_s_decisions_cost_no_hop_and_are_counted_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    from bench.cost_per_hop import LogCounter, example, run

    _bench_environment(monkeypatch)
    monkeypatch.setattr(sys, "path", [*sys.path])  # the run puts the example's folder first
    case = example("answers", inputs=slice(0, 1))
    try:
        with mock_aws():
            measured = run(case, 2, LogCounter())
    finally:  # its `actors` is not another test's
        for name in [name for name, module in sys.modules.items() if _under(module, case.mesh.base)]:
            del sys.modules[name]
    # classify → draft → evaluate → (refine → evaluate) twice → x-sink: 8 hops; the confidence's `if`
    # and three tests of the loop's condition are taken inside them
    assert (measured.hops, measured.decisions) == (16, 8)


def test_a_map_costs_2n_plus_2_hops_and_its_gather_runs_its_own_code(monkeypatch: pytest.MonkeyPatch) -> None:
    """The map row: flow-gather's handler is shipped from its own folder (`code:`), not the mesh's; a
    bench that left it out priced every task's trip to x-sump."""
    from bench.cost_per_hop import LogCounter, mapped, run

    _bench_environment(monkeypatch)
    monkeypatch.setattr(sys, "path", [*sys.path])
    case = mapped(3)
    gather = case.mesh.code_dir("flow-gather")
    try:
        with mock_aws():
            measured = run(case, 2, LogCounter())
    finally:
        for name in [name for name, module in sys.modules.items() if _under(module, case.mesh.base)]:
            del sys.modules[name]
        for name in [name for name, module in sys.modules.items() if _under(module, gather)]:
            del sys.modules[name]
    # prepare, 3 x square, 4 arrivals at flow-gather and its own hop, total, x-sink
    assert measured.hops == 2 * 11
    assert not [item for item in measured.usage if "sump" in item.operation], "no task went to x-sump"


def _bench_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "t")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")


def _dollars(measured: Measurement, operation: str) -> Decimal:
    return sum((item.dollars for item in measured.usage if item.operation == operation), Decimal(0))


def _under(module: object, folder: Path) -> bool:
    return str(getattr(module, "__file__", None) or "").startswith(str(folder))


def test_a_task_sent_to_its_first_queue_pays_no_gateway_and_its_record_is_made_by_the_first_claim(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bench.cost_per_hop import PLAIN, QUEUE_ENTRY, LogCounter, run, synthetic, through_http_api

    _bench_environment(monkeypatch)
    title, route, payload = PLAIN
    with mock_aws():
        queued = run(synthetic(title, route, payload, QUEUE_ENTRY), 2, LogCounter())
    served = api.lambda_handler
    with mock_aws():
        created = run(synthetic(title, route, payload), 2, LogCounter())
    assert api.lambda_handler is served, "the gateway's entry point is put back after the run"
    lines = {operation: amount for (_, operation, _), amount in queued.lines().items()}
    assert "PutItem asya-tasks" not in lines
    assert not any("gateway-api" in op or " API " in op for op in lines)
    # 3 claims (the first makes the record, admitting the producer's envelope) and x-sink's write, per task
    assert lines["UpdateItem asya-tasks"] == 8
    assert lines["SendMessage"] == 2, "the client's own send"
    assert lines["Lambda platform lines (modelled)"] == 0, "every function at WARN, every invocation a success"
    made = {operation: amount for (_, operation, _), amount in created.lines().items()}
    assert (made["PutItem asya-tasks"], made["Invoke gateway-api"], made["REST API request (modelled)"]) == (2, 2, 2)
    http = through_http_api(created)
    assert _dollars(created, "REST API request (modelled)") == Decimal("3.50") * 2 / 1_000_000
    assert _dollars(http, "HTTP API request (modelled)") == Decimal("1.00") * 2 / 1_000_000
    assert {op for (_, op, _) in http.lines()} >= {"HTTP API request (modelled)", "HTTP API access line (modelled)"}
    assert not any(op.startswith("REST API") for (_, op, _) in http.lines())


def test_lambda_writes_a_start_and_a_report_at_info_more_at_debug_and_none_at_warn() -> None:
    from asya_local.testing.platform_lines import LOG_EVENT_OVERHEAD, platform_bytes

    info, debug = platform_bytes("INFO", 1), platform_bytes("DEBUG", 1)
    assert platform_bytes("WARN", 1000) == 0, "a successful invocation's events are all below WARN"
    assert 2 * (100 + LOG_EVENT_OVERHEAD) < info < debug, "two JSON lines at INFO, the runtime's end too at DEBUG"
    assert platform_bytes("INFO", 3) == 3 * info
    with pytest.raises(ValueError, match="not a Lambda system log level: 'ERROR'"):
        platform_bytes("ERROR", 1)  # not a system log level Lambda has


def test_the_bench_prices_platform_lines_only_for_functions_whose_level_lets_them_through() -> None:
    from collections import Counter

    from asya_local.testing.platform_lines import platform_bytes
    from bench.cost_per_hop import PLAIN, log_usage, synthetic, system_log_levels

    title, route, payload = PLAIN
    case = synthetic(title, route, payload)
    invocations = Counter({"prep": 3, "infer": 3, "post": 3, "x-sink": 3, "gateway-api": 30, "gateway-stream": 1})
    default = system_log_levels(case.mesh.config)
    assert set(default.values()) == {"WARN"}, "as the CDK app configures every function by default"
    assert set(invocations) <= set(default)
    platform = {item.operation: item.amount for item in log_usage(default, invocations, 500, 5)}
    assert platform == {"log lines + EMF": (500 + 5 * 26) / 1e9, "Lambda platform lines (modelled)": 0}
    actors = case.mesh.config.actors | {
        "infer": case.mesh.config.actors["infer"].model_copy(update={"system_log_level": "INFO"})
    }
    gateway = case.mesh.config.gateway.model_copy(update={"system_log_level": "DEBUG"})
    levels = system_log_levels(case.mesh.config.model_copy(update={"actors": actors, "gateway": gateway}))
    [_, lines] = log_usage(levels, invocations, 0, 0)
    expected = platform_bytes("INFO", 3) + platform_bytes("DEBUG", 31)
    assert lines.amount == pytest.approx(expected / 1e9), "infer's start and report, all of the gateway's"


def test_an_access_line_traces_a_request_and_carries_nothing_twice() -> None:
    from asya_cdk.access_logs import HTTP_ACCESS_LOG_FIELDS, REST_ACCESS_LOG_FIELDS
    from bench.cost_per_hop import HTTP_API, REST_API, api_requests

    needed = {"requestId", "ip", "user", "requestTime", "httpMethod", "path", "status", "responseLength", "latency"}
    for fields in (REST_ACCESS_LOG_FIELDS, HTTP_ACCESS_LOG_FIELDS):
        assert needed | {"integrationError"} <= set(fields)
        assert len(set(fields.values())) == len(fields)
        said_elsewhere = {"$context.identity.caller", "$context.protocol", "$context.resourcePath"}
        assert not said_elsewhere & set(fields.values()), "the principal again, HTTP/1.1, the greedy proxy"
    assert "authorizerError" in HTTP_ACCESS_LOG_FIELDS, "why a JWT authorizer refused"
    # an IAM caller's create, as the bench sizes it: the line, its newline, CloudWatch's 26 bytes
    sizes = {kind: api_requests(kind, 1)[1].amount * 1e9 for kind in (REST_API, HTTP_API)}
    assert sizes == {REST_API: pytest.approx(263 + 27), HTTP_API: pytest.approx(310 + 27)}
