"""SQL shipped with lance_fw (installed as ``lance_fw.sql``): the DuckDB ``lance_scan`` macro."""
