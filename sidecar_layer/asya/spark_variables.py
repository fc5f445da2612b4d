"""The `ASYA_*` variables a Spark actor's dispatcher and collector read (`asya_spark.settings`), besides the
sidecar's: the Spark table of `docs/configuration.md`. `asya.variables` gathers them with every other
component's."""

from __future__ import annotations

from typing import Any

from asya.env_variable import Component, Variable, choice, integer, text

_SPARK = (Component.SPARK,)

SPARK_STAGING_BUCKET = Variable(
    "ASYA_SPARK_STAGING_BUCKET",
    _SPARK,
    "where batches are staged (`spark/<ns>/<actor>/<batch>/`)",
    "",
    text,
    "required",
)

SPARK_BATCHES_TABLE = Variable(
    "ASYA_SPARK_BATCHES_TABLE", _SPARK, "the Spark batches table (batch records, hop claims)", "", text, "required"
)

SPARK_APPLICATION_ID = Variable(
    "ASYA_SPARK_APPLICATION_ID", _SPARK, "the actor's EMR Serverless application", "", text, "required"
)

SPARK_JOB_ROLE_ARN = Variable("ASYA_SPARK_JOB_ROLE_ARN", _SPARK, "the job's execution role", "", text, "required")

SPARK_ENTRY_POINT = Variable(
    "ASYA_SPARK_ENTRY_POINT", _SPARK, "`s3://` URI of `spark_emr/asya_spark_job/entry.py`", "", text, "required"
)

SPARK_SUBMIT_PARAMETERS = Variable(
    "ASYA_SPARK_SUBMIT_PARAMETERS", _SPARK, "`--py-files`, `--conf` for the job", "", text, "none"
)

SPARK_STYLE = Variable(
    "ASYA_SPARK_STYLE",
    _SPARK,
    "`payload` or `dataframe`: how the job applies the handler",
    "payload",
    choice("payload", "dataframe"),
)

SPARK_JOB_VARIABLES = Variable(
    "ASYA_SPARK_JOB_VARIABLES",
    _SPARK,
    "comma-separated names of the actor's own variables; the job's handler (`--actor-env`) runs with them and "
    "the sidecar's handler settings, forwarded from the function's own environment, never copied (Lambda's 4 KB)",
    "",
    text,
    "none",
)

SPARK_JOB_TIMEOUT_MINUTES = Variable(
    "ASYA_SPARK_JOB_TIMEOUT_MINUTES", _SPARK, "the job's execution timeout", 60, integer(1)
)

VARIABLES: tuple[Variable[Any], ...] = (
    SPARK_STAGING_BUCKET,
    SPARK_BATCHES_TABLE,
    SPARK_APPLICATION_ID,
    SPARK_JOB_ROLE_ARN,
    SPARK_ENTRY_POINT,
    SPARK_SUBMIT_PARAMETERS,
    SPARK_STYLE,
    SPARK_JOB_VARIABLES,
    SPARK_JOB_TIMEOUT_MINUTES,
)
