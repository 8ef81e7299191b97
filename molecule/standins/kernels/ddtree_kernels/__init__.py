"""STAND-IN for a custom kernel package (molecule tests only): no kernels, just a name and a version,
so the sglang role's install-and-check of custom kernel wheels runs for real."""

__version__ = "0.3.1"
