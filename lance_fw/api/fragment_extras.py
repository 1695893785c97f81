"""``LanceFragment`` methods that wrap its scan, the typed refusals of the pylance fragment
names lance_fw does not implement, and the uncommitted fragment writes (``create``,
``update_columns``, ``merge``, ``merge_columns``, ``delete``, ``delete_rows``: see
``api/fragment_writes.py``), committed later with ``LanceDataset.commit``.

Why a module of its own: ``api/fragment.py`` holds the fragment's scan options; these are thin
conveniences and a list of refusals. ``FragmentExtras`` is a mixin of ``LanceFragment``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from lance_fw._util.refusals import NotImplementedInPylanceError, refusing
from lance_fw.api import fragment_writes
from lance_fw.api.dataset_extras import without_blob_mode
from lance_fw.errors import InvalidArgumentError
from lance_fw.options import Columns, Filter, refuse

if TYPE_CHECKING:
    import pandas as pd

    from lance_fw.api.distributed import FragmentMetadata
    from lance_fw.api.fragment import LanceFragment
    from lance_fw.api.lance_schema import LanceSchema

_NOT_IN_PYLANCE = "pylance does not implement it either"


@refusing(
    {
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

    create = staticmethod(fragment_writes.create)
    create_from_file = staticmethod(fragment_writes.create_from_file)

    def update_columns(
        self,
        data_obj: Any,
        left_on: str = "_rowid",
        right_on: str | None = None,
        schema: pa.Schema | None = None,
        *,
        with_offsets: bool = False,
    ) -> tuple[FragmentMetadata, list[int]] | tuple[FragmentMetadata, list[int], bytes]:
        """pylance's (internal) uncommitted update: this fragment with one new data file of the
        columns of ``data_obj`` other than ``right_on``, holding the joined row's value where a row
        of ``data_obj`` has the key of the fragment's ``left_on`` (row ids for ``_rowid``) and the
        old value elsewhere; and the field ids changed. ``with_offsets`` adds the matched physical
        offsets (a portable roaring bitmap). ``LanceOperation.Update(updated_fragments=...,
        fields_modified=...)`` commits it."""
        return fragment_writes.update_columns(
            self._ds, self._fragment()._message, data_obj, left_on, right_on, schema, with_offsets
        )

    def merge(
        self, data_obj: Any, left_on: str, right_on: str | None = None, schema: pa.Schema | None = None
    ) -> tuple[FragmentMetadata, LanceSchema]:
        """pylance's (internal) per-fragment ``merge``: a left join of this fragment with
        ``data_obj`` on ``left_on`` = ``right_on``, its other columns as a new data file (nulls
        where nothing matches), and the schema with them; ``LanceOperation.Merge`` commits them."""
        return fragment_writes.merge(self._ds, self._fragment()._message, data_obj, left_on, right_on, schema)

    def delete_rows(self, offsets: Any) -> FragmentMetadata | None:
        """pylance's (internal) delete by physical offsets in this fragment: the fragment with a
        new deletion file (itself when each is deleted already; None when no row is left);
        ``LanceOperation.Delete`` commits it."""
        return fragment_writes.delete_rows(self._ds, self._fragment()._message, offsets)

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

        snapshot, metadata = self._ds._snapshot, self._fragment()._message
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
            self._ds._snapshot, fragment._message, value_func, columns, batch_size
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
