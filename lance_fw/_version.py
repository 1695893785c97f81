"""The package version, in a leaf module.

Why a leaf: ``table/transaction.py`` stamps the writer version into every manifest, and importing it
from the package root made an import circle (``lance_fw`` -> api -> table -> ``lance_fw``) that only
worked because ``__init__`` assigned the version before its imports. Kept equal to pyproject.toml's
``version`` (tests/test_layers.py checks it against the installed distribution's metadata).
"""

__version__ = "0.1.0"
