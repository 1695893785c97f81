"""``LanceFragment`` methods that wrap its scan, and the typed refusals of the pylance fragment
names lance_fw does not implement (uncommitted fragment rewrites: ``delete``, ``merge_columns`` ...).

Why a module of its own: ``api/fragment.py`` holds the fragment's scan options; these are thin
conveniences and a list of refusals. ``FragmentExtras`` is a mixin of ``LanceFragment``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lance_fw._util.refusals import NotImplementedInPylanceError, refusing
from lance_fw.api.dataset_extras import without_blob_mode
from lance_fw.errors import InvalidArgumentError
from lance_fw.options import Columns, Filter

if TYPE_CHECKING:
    import pandas as pd

    from lance_fw.api.fragment import LanceFragment

_UNCOMMITTED = "writing uncommitted fragment changes is not implemented; use the LanceDataset method"
_NOT_IN_PYLANCE = "pylance does not implement it either"


@refusing(
    {
        "creating fragments outside a commit is not implemented; use write_fragments": ("create",),
        "registering existing files is not implemented; use write_fragments": ("create_from_file",),
        _UNCOMMITTED: ("delete", "delete_rows", "merge", "merge_columns", "update_columns"),
        "fragment sessions are not implemented; use take or scanner": ("open_session",),
        "fragment validation is not implemented": ("validate",),
    }
)
@refusing(
    {},
    properties={_NOT_IN_PYLANCE: ("physical_schema", "partition_expression")},
    error=NotImplementedInPylanceError,
)
class FragmentExtras:
    """pylance conveniences of ``LanceFragment`` built on its scan."""

    _ds: Any

    def _fragment(self) -> LanceFragment:
        return self  # type: ignore[return-value]

    @property
    def schema(self) -> pa.Schema:
        """The dataset version's schema (every fragment reads as all of its columns)."""
        return self._ds.schema

    def take(self, indices: Any, columns: Columns | None = None) -> pa.Table:
        """Rows at positions ``indices`` over this fragment's live rows (any order, repeats)."""
        wanted = np.asarray(indices, dtype=np.int64)
        table = self._fragment().scanner(columns=columns).to_table()
        if len(wanted) and (wanted.min() < 0 or wanted.max() >= table.num_rows):
            raise InvalidArgumentError(
                f"take: indices must lie in [0, {table.num_rows}), got {indices!r:.80}"
            )
        return table.take(pa.array(wanted, pa.int64()))

    def to_pandas(
        self,
        columns: Columns | None = None,
        filter: Filter | None = None,
        limit: int | None = None,
        offset: int | None = None,
        batch_size: int | None = None,
        with_row_id: bool = False,
        with_row_address: bool = False,
        blob_mode: str = "lazy",
        order_by: Any = None,
    ) -> pd.DataFrame:
        """``scanner(...).to_table().to_pandas()`` with pylance's options (``blob_mode`` lazy only)."""
        options = without_blob_mode({k: v for k, v in locals().items() if k != "self"})
        return self._fragment().scanner(**options).to_table().to_pandas()


__all__ = ["FragmentExtras"]
