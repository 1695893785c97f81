"""Placeholder: commit_put_if_absent is being written."""
