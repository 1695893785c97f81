"""lance_fw's built-in plugins (installed as the package ``lance_fw_plugins``).

Each module is one Lance feature, registered through the ``lance_fw`` entry-point group exactly
like a third-party plugin; the kernel never imports these modules by name.
"""
