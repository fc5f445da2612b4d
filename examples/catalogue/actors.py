"""The actors of the catalogue example. `clean` runs on Spark over a DataFrame of a whole batch;
`score` is a plain per-payload function that Spark applies; the others are Lambda actors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

CATEGORIES = {"kettle": "kitchen", "mug": "kitchen", "toaster": "kitchen", "lamp": "lighting", "chair": "furniture"}


def ingest(feed: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """One envelope per row of a supplier's feed, each carrying its supplier."""
    for row in feed["rows"]:
        yield {"supplier": feed["supplier"], **row}


def clean(rows: DataFrame) -> DataFrame:
    """Normalise SKUs, names and prices; drop rows without a SKU or a positive price; keep one row
    per SKU across the whole batch (the cheapest offer). A dropped row's envelope has nothing more to
    do, so it ends at x-sink as it came."""
    from pyspark.sql import Window
    from pyspark.sql import functions as f

    cleaned = (
        rows.withColumn("sku", f.upper(f.trim(f.col("sku"))))
        .withColumn("name", f.initcap(f.regexp_replace(f.trim(f.col("name")), r"\s+", " ")))
        .withColumn("price", f.regexp_replace(f.col("price").cast("string"), ",", ".").cast("double"))
        .filter(f.col("sku").isNotNull() & (f.col("sku") != "") & (f.col("price") > 0))
    )
    cheapest_first = Window.partitionBy("sku").orderBy(f.col("price").asc(), f.col("_asya_key"))
    return cleaned.withColumn("offer", f.row_number().over(cheapest_first)).filter("offer = 1").drop("offer")


def enrich(item: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A category from the name, and one envelope per colour variant."""
    name = item["name"].lower()
    category = next((category for word, category in CATEGORIES.items() if word in name), "other")
    colours = [colour.strip() for colour in str(item.get("colors") or "").split("|") if colour.strip()]
    for colour in colours or ["standard"]:
        yield {
            "sku": f"{item['sku']}-{colour[:3].upper()}",
            "name": item["name"],
            "supplier": item["supplier"],
            "category": category,
            "colour": colour,
            "price": item["price"],
        }


def score(variant: dict[str, Any]) -> dict[str, Any]:
    """A price band and a listing-quality score, per variant."""
    price = float(variant["price"])
    band = "budget" if price < 20 else "mid" if price < 60 else "premium"
    quality = min(100, 40 + 10 * len(variant["name"].split()) + (20 if variant["category"] != "other" else 0))
    return {**variant, "band": band, "quality": quality}


def summarise(variant: dict[str, Any]) -> dict[str, Any]:
    """The listing line a storefront shows."""
    line = f"{variant['sku']}: {variant['name']} ({variant['colour']}), {variant['price']:.2f} [{variant['band']}]"
    return {"sku": variant["sku"], "category": variant["category"], "quality": variant["quality"], "listing": line}
