"""Helpers below every other layer of lance_fw: each idea the layers above share, written once.

Nothing here imports from the rest of lance_fw except ``errors``.
"""
