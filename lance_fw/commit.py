"""``lance_fw.commit``: pylance's ``lance.commit`` module, where ``CommitConflictError`` (an
``OSError`` there and here) is imported from."""

from lance_fw.errors import CommitConflictError

__all__ = ["CommitConflictError"]
