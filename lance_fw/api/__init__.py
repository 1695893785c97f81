"""The user-facing Python API, with pylance's names."""
