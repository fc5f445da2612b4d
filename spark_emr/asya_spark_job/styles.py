"""The two ways a Spark actor's handler meets its batch.

**Per payload** (the default): the handler is any actor handler (return, `None`, generator fan-out,
ABI verbs, raise) and each partition runs it through the core's hop pipeline, one record at a time.

**DataFrame** (`spark.style: dataframe`): the handler takes a DataFrame of the batch's payloads and
returns a DataFrame, for vectorised work (joins, deduplication, window functions, ML transformers).
Each payload object is a row (its fields are columns; any other JSON value is in a `value` column) with
an extra `_asya_key` column that names the envelope it came from. Every output row that keeps its
`_asya_key` becomes an output payload of that envelope (several rows fan out; none means "nothing
more to do"). The rows are then replayed through the same hop pipeline as a generator, so routing,
fan-out ids and status fields are exactly those of the per-payload style. If the function raises (at
plan time or when its output is computed), every envelope of the batch gets that error, and the
actor's resiliency policy decides each one's fate.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import orjson
from pyspark import RDD
from pyspark.sql import DataFrame, SparkSession

from asya.batch import BatchHops, Routed, raising, replay
from asya.config import SidecarConfig
from asya.envelope import EnvelopeError, parse_envelope
from asya.handler import Handler, load_handler

KEY = "_asya_key"
VALUE = "value"

# One pipeline per Python worker and actor: PySpark reuses workers across tasks, so a class handler
# is created once per worker, as a Lambda handler's class is once per execution environment.
_pipelines: dict[str, BatchHops] = {}


def _pipeline(env: Mapping[str, str], known: Mapping[str, str], handler: Handler | None = None) -> BatchHops:
    cache_key = orjson.dumps([sorted(env.items()), sorted(known.items()), handler is None]).decode()
    hops = _pipelines.get(cache_key)
    if hops is None:
        hops = _pipelines[cache_key] = BatchHops(SidecarConfig.from_env(env), handler, known)
    return hops


def per_payload(records: RDD[tuple[str, str]], env: Mapping[str, str], known: Mapping[str, str]) -> RDD[str]:
    """Every record through the handler in its partition; the outputs as `Routed` JSON lines."""
    env, known = dict(env), dict(known)

    def run_partition(partition: Iterable[tuple[str, str]]) -> Iterator[str]:
        return (routed.to_json() for routed in _pipeline(env, known).run(partition))

    return records.mapPartitions(run_partition)


def dataframe(
    spark: SparkSession, records: RDD[tuple[str, str]], env: Mapping[str, str], known: Mapping[str, str]
) -> RDD[str]:
    """The handler over the batch's payloads as one DataFrame; its rows replayed per envelope."""
    env, known = dict(env), dict(known)
    config = SidecarConfig.from_env(env)
    records = records.cache()
    actor = config.actor
    rows = records.flatMap(lambda record: _payload_row(record, actor))
    outputs: RDD[tuple[str, list[str]]] | None = None
    failure: BaseException | None = None
    if not rows.isEmpty():
        try:
            function = load_handler(config.handler)
            result = function(spark.read.json(rows))
            if not isinstance(result, DataFrame):
                raise TypeError(f"a dataframe-style handler must return a DataFrame, not {type(result).__name__}")
            if KEY not in result.columns:
                raise ValueError(
                    f"the returned DataFrame has no {KEY} column: rows must keep the envelope they belong to"
                )
            outputs = result.toJSON().map(_keyed).groupByKey().mapValues(sorted).cache()
            outputs.count()  # compute the user's transformation here, where its errors can be caught
        except Exception as exc:  # noqa: BLE001 - the handler's error: every envelope goes through resiliency
            failure = exc
    error = _portable(failure)

    def run_partition(partition: Iterable[tuple[str, tuple[str, list[str] | None]]]) -> Iterator[str]:
        records = (
            (key, body, raising(error) if error is not None else replay([_payload_of(p) for p in payloads or []]))
            for key, (body, payloads) in partition
        )
        return (routed.to_json() for routed in _pipeline(env, known, handler=replay([])).run_with(records))

    if outputs is None:
        return records.map(lambda record: (record[0], (record[1], None))).mapPartitions(run_partition)
    return records.leftOuterJoin(outputs).mapPartitions(run_partition)


def _payload_row(record: tuple[str, str], actor: str) -> list[str]:
    """The record's payload as a JSON row for the DataFrame, if it is an envelope meant for this actor
    (anything else is routed by the hop pipeline without reaching the handler)."""
    message_id, body = record
    try:
        envelope = parse_envelope(body)
    except EnvelopeError:
        return []
    if envelope.route.curr != actor:
        return []
    payload = envelope.payload
    row = dict(payload) if isinstance(payload, dict) else {VALUE: payload}
    row[KEY] = message_id
    return [orjson.dumps(row).decode()]


def _keyed(row_json: str) -> tuple[str, str]:
    row = orjson.loads(row_json)
    key = row.pop(KEY, None)
    return str(key), orjson.dumps(row, option=orjson.OPT_SORT_KEYS).decode()


def _payload_of(row_json: str) -> Any:
    row = orjson.loads(row_json)
    return row[VALUE] if list(row) == [VALUE] else row


class DataFrameHandlerError(Exception):
    """The DataFrame function failed; carries the original error's type name and message, because
    Spark's own exceptions (Py4J, analysis errors) do not travel to the Python workers."""

    def __init__(self, error_type: str, message: str) -> None:
        super().__init__(error_type, message)  # both in `args`: the error is pickled to the workers
        self.error_type = error_type
        self.message = message

    def __str__(self) -> str:
        return f"{self.error_type}: {self.message}"


def _portable(error: BaseException | None) -> BaseException | None:
    if error is None:
        return None
    try:
        import pickle

        pickle.loads(pickle.dumps(error))
    except Exception:  # noqa: BLE001 - not picklable: keep its name and message
        return DataFrameHandlerError(type(error).__name__, str(error))
    return error


__all__ = ["KEY", "VALUE", "DataFrameHandlerError", "Routed", "dataframe", "per_payload"]
