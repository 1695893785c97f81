"""pylance's ``lance.fragment`` names lance_fw refuses by name: ``RowIdSequence`` and
``FragmentSession``.

Why refused: ``RowIdSequence`` hand-builds the stable row ids of a fragment a caller assembles for
a transaction (``to_inline_metadata``), which lance_fw's commits do not take from callers (they
assign stable row ids themselves); ``FragmentSession`` is what the refused
``LanceFragment.open_session`` returns. (``DeletionFile``, ``RowIdMeta`` and
``RowDatasetVersionMeta`` are records ``FragmentMetadata`` shows: ``lance_fw.api.fragment_metadata``.)
"""

from __future__ import annotations

from lance_fw._util.refusals import refused_function

#: The module pylance users import these from
_MODULE = "lance.fragment"
#: Why hand-built row id sequences are refused
ROW_ID_SEQUENCE = (
    "hand-built stable row id sequences for manually assembled fragments are not implemented "
    "(lance_fw assigns stable row ids itself when it commits)"
)
#: Why fragment sessions are refused
FRAGMENT_SESSION = "fragment sessions are not implemented; use LanceFragment.take or scanner"

RowIdSequence = refused_function(_MODULE, "RowIdSequence", ROW_ID_SEQUENCE)
FragmentSession = refused_function(_MODULE, "FragmentSession", FRAGMENT_SESSION)

__all__ = ["FragmentSession", "RowIdSequence"]
