"""How a commit places the fragments it adds: their ids, their stable row ids, and the checks a
caller's fragments (``LanceDataset.commit``) must pass before a manifest names them.

Why a module of its own: the rules are pylance's, shared by every operation that adds fragments
(``Append``, ``Overwrite``, ``Update`` and the column-rewriting ``Update``), and kept apart from
the commit loop in ``transaction``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from lance_fw._proto import rowids_pb2, table_pb2
from lance_fw.errors import InvalidArgumentError, InvalidUserInputError, UnsupportedFeatureError
from lance_fw.io.storage import unsafe_path_reason

#: The field id a data file records for a column a later data file of its fragment replaced.
TOMBSTONE = -2
#: ``TOMBSTONE`` as protobuf writes an int32 field id (sign-extended, a 10-byte varint): a manifest
#: whose bytes hold no such run holds no tombstone (checking 1000 fragments' field ids one by one
#: through protobuf's Python objects cost ~4 ms a commit).
TOMBSTONE_VARINT = bytes.fromhex("feffffffffffffffff01")
#: The id of a fragment no commit has placed yet (what writers give new fragments): pylance
#: assigns such a fragment the next free id, and keeps any other id a caller gave.
UNASSIGNED_ID = 0


def next_fragment_id(base: table_pb2.Manifest | None) -> int:
    """The first fragment id no fragment of ``base`` has ever used (``max_fragment_id`` + 1)."""
    if base is None or (not base.HasField("max_fragment_id") and not len(base.fragments)):
        return 0
    known = max([f.id for f in base.fragments], default=-1)
    return max(known, base.max_fragment_id if base.HasField("max_fragment_id") else -1) + 1


def assign_ids(
    manifest: table_pb2.Manifest, fragments: list, next_id: int, keep_given: bool = True
) -> list[table_pb2.DataFragment]:
    """Add ``fragments`` to ``manifest`` (copies: the caller's messages, which the transaction
    records as given, stay untouched) and return the copies in the manifest.

    As pylance: with ``keep_given`` (``Append``, ``Update``) a fragment keeps a non-zero id its
    caller chose and each unassigned one takes the next id from ``next_id`` on (whatever ids the
    others keep); without it (``Overwrite``) every fragment is numbered from ``next_id``."""
    out = []
    for frag in fragments:
        added = manifest.fragments.add()  # a reference into the manifest, so later edits stick
        added.CopyFrom(frag)
        if not keep_given or frag.id == UNASSIGNED_ID:
            added.id = next_id
            next_id += 1
        out.append(added)
    return out


def assign_row_ids(manifest: table_pb2.Manifest, fragments: list) -> None:
    """With stable row ids on, each new fragment owns the next ``physical_rows`` ids. A fragment
    that already carries row ids (a caller's ``row_id_meta``: rows moved, keeping their ids) is
    refused: pylance keeps and completes those, which lance_fw does not do yet."""
    for frag in fragments:
        if frag.WhichOneof("row_id_sequence") is not None:
            raise UnsupportedFeatureError(
                f"fragment {frag.id} carries stable row ids (row_id_meta); committing such fragments "
                "is not supported yet"
            )
        start = manifest.next_row_id
        seq = rowids_pb2.RowIdSequence()
        seq.segments.add().range.CopyFrom(
            rowids_pb2.U64Segment.Range(start=start, end=start + frag.physical_rows)
        )
        frag.inline_row_ids = seq.SerializeToString()
        manifest.next_row_id = start + frag.physical_rows


def check_new_fragments(manifest: table_pb2.Manifest, added: list) -> None:
    """Refuse, before anything is published, what a caller's fragments could break:

    * a file path that could leave the dataset root (``InvalidArgumentError``);
    * a fragment id the new version would hold twice (a caller's id that an existing or another
      new fragment has): pylance's ``OSError("Invalid user input: ...")``."""
    for frag in added:
        paths = [f.path for f in frag.files]
        if frag.WhichOneof("row_id_sequence") == "external_row_ids":
            paths.append(frag.external_row_ids.path)
        for path in paths:
            reason = unsafe_path_reason(path)
            if reason is not None:
                raise InvalidArgumentError(
                    f"fragment file path {path!r} {reason}: it points outside the dataset"
                )
    counts = Counter(f.id for f in manifest.fragments)
    twice = sorted({f.id for f in added if counts[f.id] > 1})  # (old duplicates are not ours to judge)
    if twice:
        raise InvalidUserInputError(
            f"The commit would produce two fragments with id {twice[0]}. Fragment ids must be unique."
        )


def _keep_files(frag: table_pb2.DataFragment, keep: Callable[[table_pb2.DataFile], bool]) -> None:
    if all(keep(f) for f in frag.files):
        return
    kept = [table_pb2.DataFile() for f in frag.files if keep(f)]
    for copy, data_file in zip(kept, [f for f in frag.files if keep(f)], strict=True):
        copy.CopyFrom(data_file)  # copies: what a cleared repeated field held is not ours to keep
    del frag.files[:]
    frag.files.extend(kept)


def tidy_fragments(manifest: table_pb2.Manifest) -> None:
    """What pylance does to the fragments of every manifest a commit builds (a restore aside):
    orders them by id (an appended caller id, or an id reserved before a concurrent append, may
    be lower than one already there) and drops each data file that names only ``TOMBSTONE``s
    (every column it held was replaced: it holds no live data)."""
    if TOMBSTONE_VARINT in manifest.SerializeToString():  # (else none to drop: ~0.2 ms, not ~4)
        for frag in manifest.fragments:
            _keep_files(frag, lambda f: any(fid != TOMBSTONE for fid in f.fields))
    ids = [f.id for f in manifest.fragments]
    if ids != sorted(ids):
        ordered = sorted(manifest.fragments, key=lambda f: f.id)
        copies = [table_pb2.DataFragment() for _ in ordered]
        for copy, frag in zip(copies, ordered, strict=True):
            copy.CopyFrom(frag)
        del manifest.fragments[:]
        manifest.fragments.extend(copies)


def drop_files_without_fields(manifest: table_pb2.Manifest, field_ids: set[int]) -> None:
    """pylance's ``Project`` (``drop_columns``): a data file none of whose fields the new schema
    keeps leaves its fragments (the file stays on disk until ``cleanup_old_versions``); a file
    keeping any of its fields stays whole, its field list unchanged."""
    for frag in manifest.fragments:
        _keep_files(frag, lambda f: bool(field_ids.intersection(f.fields)))
