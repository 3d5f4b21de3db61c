"""warmscope's own version, as installed."""

from __future__ import annotations


def warmscope_version() -> str:
    """The installed warmscope's version (``unknown`` from a bare checkout)."""
    # importlib.metadata loads only when asked: by --version and a run's environment line
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("warmscope")
    except PackageNotFoundError:
        return "unknown"
