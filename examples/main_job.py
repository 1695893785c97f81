"""The main job (README command 1): Spark writes a Lance dataset, analysts query it without Spark.

1. A local embedded SparkSession generates taxi-trip-like rows (timestamps, categories, amounts,
   free text and an 8-dimensional embedding) and writes them with ``df.write.format("lance")``
   in several appends (one Lance version each).
2. Spark reads the dataset back through the same data source (a count and an aggregate).
3. Spark stops. DuckDB answers analyst queries (``FROM 'path.lance'``, ``lance_scan('path')``), and the
   official pylance opens the same dataset and must agree on rows and totals.
4. The analyst writes in SQL: ``COPY (…) TO 'lake/card_trips.lance' (FORMAT lance)``, ``ATTACH 'lake'
   AS lake (TYPE LANCE)`` and an ``UPDATE`` (``lake/`` sits next to the dataset); pylance checks both.

``python examples/main_job.py [--rows N] [--appends K] [--out PATH]``; the defaults are embedded.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

DEFAULT_ROWS = 2_000_000
DEFAULT_APPENDS = 4

TRIPS_SQL = """
SELECT id AS trip_id,
       timestamp_seconds(1767225600 + CAST(rand({seed}) * 86400 * 30 AS BIGINT)) AS pickup_at,
       element_at(array('CMT', 'VTS', 'DDS', 'NYC'), CAST(rand({seed} + 1) * 4 AS INT) + 1) AS vendor,
       element_at(array('card', 'cash', 'no charge', 'dispute'),
                  CAST(pow(rand({seed} + 2), 3) * 4 AS INT) + 1) AS payment,
       CAST(1 + floor(pow(rand({seed} + 3), 2) * 6) AS TINYINT) AS passengers,
       round(0.3 + rand({seed} + 4) * rand({seed} + 5) * 25, 2) AS distance_km,
       CAST(round(2.5 + rand({seed} + 6) * 60, 2) AS DECIMAL(9, 2)) AS fare,
       IF(rand({seed} + 7) < 0.1, NULL, concat('pickup zone ', CAST(id % 263 AS STRING), ', driver note ',
                                               sha2(CAST(id AS STRING), 224))) AS note,
       array({embedding}) AS embedding
FROM range({start}, {stop})
"""


def log(message: str) -> None:
    print(message, flush=True)


def start_spark():
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    import lance_fw.spark

    spark = (SparkSession.builder.master("local[*]").appName("lance_fw main job")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    lance_fw.spark.register(spark)
    return spark


def ingest(spark, uri: str, rows: int, appends: int) -> None:
    per_append = -(-rows // appends)
    embedding = ", ".join(f"CAST(rand({100 + d}) AS FLOAT)" for d in range(8))
    for i in range(appends):
        start, stop = i * per_append, min((i + 1) * per_append, rows)
        t0 = time.perf_counter()
        df = spark.sql(TRIPS_SQL.format(seed=i * 10, embedding=embedding, start=start, stop=stop)) \
            .withMetadata("embedding", {"arrow.fixed-size-list.size": 8})  # stored as a vector
        df.write.format("lance").mode("append").option("max_rows_per_file", 250_000).save(uri)
        took = time.perf_counter() - t0
        log(f"[spark] append {i + 1}/{appends}: {stop - start:,} rows in {took:.1f}s "
            f"({(stop - start) / took:,.0f} rows/s)")


def spark_check(spark, uri: str) -> int:
    t0 = time.perf_counter()
    df = spark.read.format("lance").load(uri)
    count = df.count()
    by_payment = df.groupBy("payment").count().orderBy("payment").collect()
    log(f"[spark] read back {count:,} rows in {time.perf_counter() - t0:.1f}s; by payment: "
        + ", ".join(f"{r['payment']}={r['count']:,}" for r in by_payment))
    return count


QUERIES = {
    "trips and revenue per vendor": """
        SELECT vendor, count(*) AS trips, round(avg(fare), 2) AS avg_fare, sum(fare) AS revenue,
               round(avg(distance_km), 2) AS avg_km
        FROM '{uri}' GROUP BY vendor ORDER BY vendor""",
    "busiest pickup hours (UTC)": """
        SELECT hour(pickup_at) AS hour, count(*) AS trips FROM lance_scan('{uri}')
        GROUP BY hour ORDER BY trips DESC LIMIT 3""",
    "long card trips with many passengers (filter pushdown)": """
        SELECT count(*) AS trips, round(avg(fare), 2) AS avg_fare FROM lance_scan('{uri}')
        WHERE payment = 'card' AND passengers >= 5 AND distance_km > 20""",
    "share of trips without a note, per payment type (join)": """
        WITH kinds(payment, label) AS (VALUES ('card', 'electronic'), ('cash', 'cash'),
                                               ('no charge', 'other'), ('dispute', 'other'))
        SELECT k.label, count(*) AS trips, round(avg(CASE WHEN t.note IS NULL THEN 1 ELSE 0 END), 3) AS no_note
        FROM lance_scan('{uri}') t JOIN kinds k USING (payment) GROUP BY k.label ORDER BY k.label""",
    "one trip by id (point lookup)": """
        SELECT trip_id, vendor, fare, embedding[1] AS emb0 FROM lance_scan('{uri}') WHERE trip_id = 12345""",
}


def analyst_queries(uri: str) -> float:
    from lance_fw.duckdb import connect

    con = connect()
    for title, sql in QUERIES.items():
        t0 = time.perf_counter()
        result = con.sql(sql.format(uri=uri))
        rows = result.fetchall()
        log(f"[duckdb] {title} ({(time.perf_counter() - t0) * 1000:.0f} ms)")
        log("         " + " | ".join(result.columns))
        for row in rows:
            log("         " + " | ".join(str(v) for v in row))
    return float(con.sql(f"SELECT sum(fare) FROM lance_scan('{uri}')").fetchall()[0][0])


def sql_writes(uri: str, lake: str) -> tuple[int, int]:
    """The analyst's writes in SQL: COPY a slice to a new dataset, attach its directory, UPDATE it.
    Returns (rows copied, rows updated) as DuckDB reports them."""
    from lance_fw.duckdb import connect

    con = connect()
    copied = con.execute(
        f"COPY (SELECT trip_id, vendor, fare, note FROM '{uri}' WHERE payment = 'card') "
        f"TO '{lake}/card_trips.lance' (FORMAT lance, mode 'overwrite')"
    ).fetchall()[0][0]
    log(f"[duckdb] COPY … TO '{lake}/card_trips.lance' (FORMAT lance): {copied:,} rows")
    con.execute(f"ATTACH '{lake}' AS lake (TYPE LANCE)")
    updated = con.execute("UPDATE lake.main.card_trips SET note = 'audited' WHERE fare > 60").fetchall()[0][0]
    log(f"[duckdb] UPDATE lake.main.card_trips SET note = 'audited' WHERE fare > 60: {updated:,} rows")
    return copied, updated


def index_and_search(uri: str) -> bool:
    """A B-tree on trip_id built by lance_fw and used by pylance and DuckDB, then a vector search in
    SQL (``lance_vector_search``) checked against pylance's ``nearest``. Returns whether all agree."""
    import lance

    import lance_fw
    from lance_fw.duckdb import connect

    t0 = time.perf_counter()
    lance_fw.dataset(uri).create_scalar_index("trip_id", "BTREE")
    plan = lance.dataset(uri).scanner(filter="trip_id = 12345").explain_plan()
    log(f"[lance_fw] BTREE index on trip_id in {time.perf_counter() - t0:.1f}s; pylance plans "
        + ("with it (ScalarIndexQuery)" if "ScalarIndexQuery" in plan else "WITHOUT it"))
    con = connect()
    t0 = time.perf_counter()
    looked_up = con.sql(f"SELECT trip_id, fare FROM lance_scan('{uri}') WHERE trip_id = 12345").fetchall()
    log(f"[duckdb] point lookup through the index ({(time.perf_counter() - t0) * 1000:.0f} ms): {looked_up}")
    query = [0.5] * 8
    t0 = time.perf_counter()
    nearest = con.sql(
        f"SELECT trip_id, round(_distance, 4) AS d FROM lance_vector_search('{uri}', 'embedding', "
        f"{query}::FLOAT[], k := 5) ORDER BY _distance, trip_id"
    ).fetchall()
    log(f"[duckdb] 5 trips nearest to {query[:2]}... ({(time.perf_counter() - t0) * 1000:.0f} ms): "
        + ", ".join(f"{t} ({d})" for t, d in nearest))
    theirs = lance.dataset(uri).to_table(
        nearest={"column": "embedding", "q": query, "k": 5}, columns=["trip_id", "_distance"]
    )
    same = sorted(t for t, _ in nearest) == sorted(theirs.column("trip_id").to_pylist())
    log(f"[pylance] nearest agrees: {same}")
    t0 = time.perf_counter()
    ds = lance_fw.dataset(uri)
    ds.create_scalar_index("note", "INVERTED")
    hits = ds.to_table(full_text_query="17", columns=["trip_id", "_score"], limit=100_000)
    log(f"[lance_fw] INVERTED index on note and full_text_query '17' in {time.perf_counter() - t0:.1f}s: "
        f"{hits.num_rows:,} trips (pickup zone 17), best {hits.column('trip_id')[0]}")
    theirs_fts = lance.dataset(uri).to_table(full_text_query="17", columns=["trip_id", "_score"], limit=100_000)
    same_fts = sorted(hits.column("trip_id").to_pylist()) == sorted(theirs_fts.column("trip_id").to_pylist())
    log(f"[pylance] full-text search on lance_fw's index agrees: {same_fts}")
    return "ScalarIndexQuery" in plan and len(looked_up) == 1 and same and same_fts and hits.num_rows > 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--appends", type=int, default=DEFAULT_APPENDS)
    parser.add_argument("--out", help="dataset path (default: a temporary directory, removed afterwards)")
    args = parser.parse_args(argv)
    root = None if args.out else tempfile.mkdtemp(prefix="lance_fw_main_job_")
    uri = args.out or os.path.join(root, "trips.lance")
    try:
        t0 = time.perf_counter()
        log(f"[spark] starting a local session; writing {args.rows:,} trips in {args.appends} appends to {uri}")
        spark = start_spark()
        log(f"[spark] session up in {time.perf_counter() - t0:.1f}s")
        ingest(spark, uri, args.rows, args.appends)
        spark_rows = spark_check(spark, uri)
        spark.stop()
        log("[spark] stopped; from here on nothing uses Spark")

        duck_fare = analyst_queries(uri)
        lake = os.path.join(os.path.dirname(os.path.abspath(uri)), "lake")
        copied, updated = sql_writes(uri, lake)

        import lance  # the official pylance opens what Spark wrote
        import pyarrow.compute as pc

        ds = lance.dataset(uri)
        pylance_fare = float(pc.sum(ds.to_table(columns=["fare"]).column("fare")).as_py())
        log(f"[pylance] version {ds.version}, {ds.count_rows():,} rows, {len(ds.get_fragments())} fragments, "
            f"embedding {ds.schema.field('embedding').type}; total fare {pylance_fare:,.2f} "
            f"(DuckDB via lance_scan: {duck_fare:,.2f})")
        card = lance.dataset(os.path.join(lake, "card_trips.lance"))
        audited = card.count_rows("note = 'audited'")
        log(f"[pylance] card_trips: version {card.version}, {card.count_rows():,} rows, {audited:,} audited")
        ok = ds.count_rows() == spark_rows == args.rows and ds.version == args.appends \
            and abs(pylance_fare - duck_fare) < 0.01 \
            and card.count_rows() == copied == ds.count_rows("payment = 'card'") \
            and audited == updated == card.count_rows("fare > 60") and card.version == 2
        ok = index_and_search(uri) and ok
        log(f"[done] {'OK' if ok else 'MISMATCH'} in {time.perf_counter() - t0:.1f}s")
        return 0 if ok else 1
    finally:
        if root:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
