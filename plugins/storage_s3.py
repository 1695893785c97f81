"""Placeholder: storage_s3 is being written."""
