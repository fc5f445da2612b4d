"""The job one Spark actor batch runs, on EMR Serverless or in Spark local mode.

    entry.py --input <uri> --output <uri> --actor-env <json> [--known <json>] [--master local[2]]

`--input` is the staged batch (JSON lines of message id and body, written by the dispatcher);
`--output` receives `Routed` JSON lines (`part-*` files and Spark's `_SUCCESS` marker), read by the
collector once the job has succeeded. `--actor-env` holds the actor's sidecar variables
(`ASYA_NAMESPACE`, `ASYA_ACTOR_NAME`, `ASYA_HANDLER`, `ASYA_RESILIENCY`, ... and `ASYA_SPARK_STYLE`),
the same ones its Lambda function would get; `--known` the canceled or paused tasks of the batch.
URIs are `s3://` on EMR Serverless and local paths (or `file://`) in local mode.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import orjson

from asya import variables
from asya.names import resource_name


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="asya-spark-job", description=__doc__.splitlines()[0])
    parser.add_argument("--input", required=True, help="the staged batch (JSON lines)")
    parser.add_argument("--output", required=True, help="where the routed envelopes are written")
    parser.add_argument("--actor-env", required=True, type=orjson.loads, help="the actor's variables (JSON)")
    parser.add_argument("--known", default={}, type=orjson.loads, help="canceled or paused tasks (JSON)")
    parser.add_argument("--master", default=None, help="Spark master; EMR Serverless sets its own")
    arguments = parser.parse_args(argv)
    try:
        variables.SPARK_STYLE.read({str(key): str(value) for key, value in arguments.actor_env.items()})
    except variables.ConfigError as exc:
        parser.error(str(exc))
    return arguments


def main(argv: Sequence[str] | None = None) -> int:
    arguments = parse_arguments(sys.argv[1:] if argv is None else argv)
    # Metrics are published by the collector from the job's outputs: EMF lines printed on executors
    # would only reach the job's logs.
    os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "WARNING")
    from pyspark.sql import SparkSession

    from asya.batch import read_staged_record
    from asya_spark_job import styles

    env: dict[str, str] = {str(key): str(value) for key, value in arguments.actor_env.items()}
    builder = SparkSession.builder.appName(resource_name(variables.NAMESPACE.read(env), variables.ACTOR.read(env)))
    if arguments.master:
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers import what the driver imports
        builder = builder.master(arguments.master).config("spark.ui.enabled", "false")
    spark = builder.getOrCreate()
    try:
        context = spark.sparkContext
        records = context.textFile(arguments.input, minPartitions=context.defaultParallelism).map(read_staged_record)
        if variables.SPARK_STYLE.read(env) == "dataframe":
            routed = styles.dataframe(spark, records, env, arguments.known)
        else:
            routed = styles.per_payload(records, env, arguments.known)
        routed.saveAsTextFile(arguments.output)
    finally:
        spark.stop()
    return 0
