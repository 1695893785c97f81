"""Protobuf modules generated from ``protos/*.proto``; do not edit by hand.

Regenerate with ``python tools/gen_protos.py``.
"""
