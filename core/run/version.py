"""warmscope's own version, as installed."""

from __future__ import annotations


def warmscope_version() -> str:
    """The installed warmscope's version (``unknown`` from a bare checkout)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("warmscope")
    except PackageNotFoundError:
        return "unknown"
