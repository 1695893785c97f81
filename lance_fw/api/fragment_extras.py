"""``LanceFragment`` methods that wrap its scan, and the typed refusals of the pylance fragment
names lance_fw does not implement (uncommitted fragment rewrites: ``update_columns`` ...),
and ``delete`` / ``merge_columns`` (new columns for one fragment, committed later with ``LanceOperation.Merge``).

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
from lance_fw.options import Columns, Filter, refuse

if TYPE_CHECKING:
    import pandas as pd

    from lance_fw.api.distributed import FragmentMetadata
    from lance_fw.api.fragment import LanceFragment
    from lance_fw.api.lance_schema import LanceSchema

_UNCOMMITTED = "writing uncommitted fragment changes is not implemented; use the LanceDataset method"
_NOT_IN_PYLANCE = "pylance does not implement it either"


@refusing(
    {
        "creating fragments outside a commit is not implemented; use write_fragments": ("create",),
        "registering existing files is not implemented; use write_fragments": ("create_from_file",),
        _UNCOMMITTED: ("delete_rows", "merge", "update_columns"),
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

    def delete(self, predicate: str) -> FragmentMetadata | None:
        """pylance's (internal) uncommitted delete: this fragment with a new deletion file for
        the rows ``predicate`` matches (None when no row is left; the fragment itself when none
        matches); ``LanceOperation.Delete`` commits it."""
        from lance_fw.api.distributed import FragmentMetadata
        from lance_fw.table.delete import expression_matcher, stage_deletions

        snapshot, metadata = self._ds._snapshot, self._fragment().metadata
        staged = stage_deletions(snapshot, expression_matcher(snapshot, predicate), [metadata])
        if staged.removed:
            return None
        return FragmentMetadata(staged.updated[0] if staged.updated else metadata)

    def merge_columns(
        self,
        value_func: Any,
        columns: list[str] | None = None,
        batch_size: int | None = None,
        reader_schema: pa.Schema | None = None,
    ) -> tuple[FragmentMetadata, LanceSchema]:
        """pylance's (internal) distributed ``add_columns``: this fragment with a new data file of
        the columns ``value_func`` computes (``{name: SQL}`` or a UDF, as ``add_columns``), and
        the schema with them; nothing is committed (``LanceOperation.Merge`` commits them). A
        checkpointed ``BatchUDF`` is refused, as in pylance.

        Raises:
            InvalidArgumentError: a checkpointed UDF, or transforms ``add_columns`` refuses.
        """
        from lance_fw.api.distributed import FragmentMetadata
        from lance_fw.api.lance_schema import LanceSchema
        from lance_fw.table.schema_evolution import fragment_columns, udf_checkpoint

        refuse("merge_columns", {"reader_schema": reader_schema})
        if udf_checkpoint(value_func) is not None:
            raise InvalidArgumentError(
                "merge_columns: a BatchUDF with a checkpoint is not supported (as in pylance)"
            )
        fragment = self._fragment()
        updated, schema = fragment_columns(
            self._ds._snapshot, fragment.metadata, value_func, columns, batch_size
        )
        return FragmentMetadata(updated), LanceSchema(schema)

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
