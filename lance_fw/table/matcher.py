"""Filter matchers: what evaluates a scan's filter on a batch of the filter's columns.

Apart from ``fragment`` so that each module keeps to one job: ``fragment`` reads a fragment's
rows, this module says which rows of a batch a filter keeps.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyarrow import acero

from lance_fw.errors import InvalidArgumentError
from lance_fw.file.buffers import true_bytes

#: The row columns a filter may name; evaluated over a probe only when the filter names them.
ROW_COLUMN_NAMES = ("_rowid", "_rowaddr")

#: Evaluates a filter on a batch of the filter's columns: the indices of the matching rows.
Matcher = Callable[[pa.RecordBatch], np.ndarray]


class ExpressionMatcher:
    """A ``Matcher`` for a ``pyarrow.compute.Expression`` (null counts as false, as in SQL).

    ``uses_row_columns``: whether the expression may name ``_rowid`` / ``_rowaddr`` (read off its
    text, so a false alarm only costs the columns' computation); a filtered scan builds them for
    every probed row only then, and otherwise only for probes with matches."""

    def __init__(self, expression: pc.Expression) -> None:
        self.expression = expression
        self.uses_row_columns = any(name in str(expression) for name in ROW_COLUMN_NAMES)

    def __call__(self, batch: pa.RecordBatch) -> np.ndarray:
        # One single-threaded Acero projection of the predicate: a threaded plan (``Table.filter``)
        # costs ~0.5 ms to start, which dominated index lookups that probe a handful of rows.
        plan = acero.Declaration.from_sequence(
            [
                acero.Declaration(
                    "table_source", acero.TableSourceNodeOptions(pa.Table.from_batches([batch]))
                ),
                acero.Declaration("project", acero.ProjectNodeOptions([self.expression], ["match"])),
            ]
        )
        try:
            mask = plan.to_table(use_threads=False).column(0)
            if pa.types.is_null(mask.type):
                return np.zeros(0, np.int64)
            if not pa.types.is_boolean(mask.type):  # (pylance: "must return BOOLEAN values")
                raise InvalidArgumentError(
                    f"filter {self.expression} must return boolean values, not {mask.type}"
                )
            # none or every row (a selective filter's usual probe; a filter most rows pass): the
            # count of trues reads the mask's bits, where numpy's indices cost a byte a row
            # and a pass (~0.6 ms a 262144-row probe, 8 a 2M-row scan)
            matches = pc.sum(mask).as_py() or 0
            if matches == 0:
                return np.zeros(0, np.int64)
            if matches == len(mask):
                return np.arange(len(mask), dtype=np.int64)
            parts = [true_bytes(chunk) for chunk in mask.chunks]
            return np.flatnonzero(parts[0] if len(parts) == 1 else np.concatenate(parts))
        except (
            pa.ArrowInvalid,
            pa.ArrowNotImplementedError,
        ) as exc:  # e.g. division by zero, CAST('x' AS INT)
            raise InvalidArgumentError(f"filter {self.expression} failed on the data: {exc}") from None


def matcher_for(expression: pc.Expression) -> Matcher:
    """A ``Matcher`` for a ``pyarrow.compute.Expression`` (``ExpressionMatcher``)."""
    return ExpressionMatcher(expression)
