"""What the built-in scalar index types share: the column types pylance indexes by value, and the
empty answer (the argument shapes of the index-type protocol, ``Batches`` and ``Params``, are the
kernel's: ``lance_fw.interfaces``).

Why one module: BTREE, BITMAP/LABEL_LIST and ZONEMAP implement the same ``ScalarIndexType``
protocol (``lance_fw.interfaces``) over the same key types; their type lists must not drift apart.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

#: No row: an index answer that matches nothing.
EMPTY_ADDRESSES = np.zeros(0, dtype=np.uint64)


def is_bytes_type(t: pa.DataType) -> bool:
    """Strings and binaries, ordered bytewise by pylance's indices."""
    return (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
    )


def is_key_type(t: pa.DataType) -> bool:
    """The column types pylance 14 builds BTREE and BITMAP indices over (LABEL_LIST: its items)."""
    return (
        pa.types.is_integer(t)
        or pa.types.is_floating(t)
        or pa.types.is_boolean(t)
        or is_bytes_type(t)
        or pa.types.is_decimal(t)
        or pa.types.is_date(t)
        or pa.types.is_time(t)
        or pa.types.is_timestamp(t)
        or pa.types.is_duration(t)
    )
