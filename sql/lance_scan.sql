-- lance_scan(path [, version := n]): resolves to the dataset lance_fw registered for this statement.
-- DuckDB has no Python table functions, so the wrapper registers '__lance_' || md5(path@version)
-- before each statement and this macro reads it; projection and filter pushdown pass through.
CREATE OR REPLACE TEMP MACRO lance_scan(p, version := NULL) AS TABLE
    FROM query_table('__lance_' || md5(p || '@' || coalesce(CAST(version AS VARCHAR), 'latest')));
