"""Which compile cache a run gets: the one policy (``--compile-cache cold|warm|user``, and the
default where none is asked for). The folders and their environment are the run layer's
(``core/run/compile_cache``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from warmscope.core.data.settings.setting import SettingsError

if TYPE_CHECKING:
    from warmscope.core.data.settings.run_settings import RunSettings


def default_compile_cache(*, repeated: bool) -> str:
    """The compile cache of a compile run that asked for none: where processes repeat (a sweep,
    ``--repeat``) each gets a cold one, so that no cold start depends on the process before it;
    one run uses the user's own, as torch alone would."""
    return "cold" if repeated else "user"


def compiles(settings: RunSettings) -> bool:
    """Whether these settings run torch.compile (the mode knob, else the target's own)."""
    if settings.knobs.get("mode") == "compile":
        return True
    try:
        return settings.effective_mode(settings.resolve()) == "compile"
    except SettingsError:  # a bad target is refused where the run is built
        return False


YOURS = "user"
"""The cache a warm-up measures beside the cold one, where the user keeps one."""


def warmup_compile_caches(settings: RunSettings, *, user_has_entries: bool) -> list[str]:
    """The caches a warm-up of a compile measures in, the one its verdicts are on first. Where
    none is asked for: a cold one for every process, the way a fresh server starts (a warm
    cache on this machine would hide the compile a new one pays), and beside it the user's own
    where it has entries, as a server started here would find it. Asked for one
    (``--compile-cache``): that one alone. Not a compile: none."""
    if not compiles(settings):
        return []
    if settings.compile_cache is not None:
        return [settings.compile_cache]
    return ["cold", YOURS] if user_has_entries else ["cold"]


def compile_cache_mode(settings: RunSettings, *, repeated: bool) -> str | None:
    """The cache asked for, else the default for a compile run; ``None`` for one that asked
    for none and does not compile."""
    if settings.compile_cache is not None:
        return settings.compile_cache
    return default_compile_cache(repeated=repeated) if compiles(settings) else None
