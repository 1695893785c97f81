"""Placeholder: commit_external_store is being written."""
