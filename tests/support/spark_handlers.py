"""DataFrame-style handlers for the Spark job tests: each takes and returns a DataFrame of payloads."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


def doubled(rows: DataFrame) -> DataFrame:
    """A vectorised column, and rows with a negative `n` dropped (their envelopes: nothing more to do)."""
    from pyspark.sql import functions as f

    return rows.filter(f.col("n") >= 0).withColumn("double", f.col("n") * 2)


def split_words(rows: DataFrame) -> DataFrame:
    """One output row per word: several rows with one key fan out."""
    from pyspark.sql import functions as f

    return rows.select("_asya_key", f.explode(f.split(f.col("text"), " ")).alias("word"))


def fails_at_plan_time(rows: DataFrame) -> DataFrame:
    return rows.select("no_such_column")


def raises_value_error(rows: DataFrame) -> DataFrame:
    raise ValueError("catalogue is malformed")


def drops_the_key(rows: DataFrame) -> DataFrame:
    return rows.groupBy().count()


def scalar_values(rows: DataFrame) -> DataFrame:
    """Payloads that are not objects arrive in a `value` column; a row of only `value` leaves as it."""
    from pyspark.sql import functions as f

    return rows.select("_asya_key", (f.col("value") + 1).alias("value"))
