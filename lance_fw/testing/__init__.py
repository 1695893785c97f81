"""Conformance kit for plugin authors (being written)."""
