"""``lance_fw.util``: the timestamp helpers of pylance's ``lance.util`` (``ds.checkout_version``
and ``asof=`` take the same timestamp forms through them)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from lance_fw._util.refusals import INDEX_SEGMENTS, refused_function

#: pylance's string form of a timestamp when pandas is not installed
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S"


def td_to_micros(td: timedelta) -> int:
    """The microseconds in ``td``, rounded to the nearest one."""
    return round(td / timedelta(microseconds=1))


def sanitize_ts(ts: Any) -> datetime:
    """A ``datetime`` from a ``datetime``, a pandas ``Timestamp`` or a timestamp string (parsed by
    pandas when installed, else as ``TIMESTAMP_FORMAT``).

    Raises:
        ValueError: a string neither parser reads.
        TypeError: any other type.
    """
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas comes with pyarrow's to_pandas users
        pd = None
    if isinstance(ts, str):
        if pd is not None:
            return pd.to_datetime(ts).to_pydatetime()
        try:
            return datetime.strptime(ts, TIMESTAMP_FORMAT)
        except ValueError:
            raise ValueError(f"Failed to parse timestamp string {ts}. Try installing Pandas.") from None
    if pd is not None and isinstance(ts, pd.Timestamp):
        return ts.to_pydatetime()
    if not isinstance(ts, datetime):
        raise TypeError(f"Unrecognized version timestamp {ts} of type {type(ts)}")
    return ts


#: pylance's in-memory vector index builders (``lance.util``), which lance_fw does not offer
_VECTOR_TOOLS = f"{INDEX_SEGMENTS}; lance_fw's IVF_PQ index trains inside create_index"
HNSW = refused_function("lance_fw.util", "HNSW", _VECTOR_TOOLS)
KMeans = refused_function("lance_fw.util", "KMeans", _VECTOR_TOOLS)
validate_vector_index = refused_function("lance_fw.util", "validate_vector_index", _VECTOR_TOOLS)

__all__ = ["HNSW", "KMeans", "sanitize_ts", "td_to_micros", "validate_vector_index"]
