-- lance_scan(path [, version := n]): reads the dataset lance_fw offers for the statement running it.
-- DuckDB's Python API has no table functions, so this macro names a table,
-- '__lance_' || hex(path) || '_' || hex(version), which lance_fw.duckdb offers as a Python variable of the
-- frame the statement runs from (or registers, where DuckDB does not look there). DuckDB evaluates the
-- arguments itself (literals of every kind, parameters, named arguments, expressions, views, macros), so
-- what lance_fw opens never depends on how the SQL is written.
CREATE OR REPLACE TEMP MACRO lance_scan(p, version := NULL) AS TABLE
    FROM query_table('__lance_' || hex(CAST(p AS VARCHAR)) || '_' || coalesce(hex(CAST(version AS VARCHAR)), ''));
