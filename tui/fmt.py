"""Short, fixed-width renderings of latencies, durations and settings for narrow panes."""

from __future__ import annotations

# One latency formatter for the CLI and the TUI lives in core; re-exported for the widgets.
from warmscope.core.base.units import ms as ms
from warmscope.core.base.units import num3 as num3
from warmscope.core.base.units import rate as rate


def seconds(value: float) -> str:
    """Elapsed time: 4.2 s, 1:05, 1:02:03."""
    if value < 60:
        return f"{value:.1f} s"
    minutes, secs = divmod(int(value), 60)
    if minutes < 60:
        return f"{minutes}:{secs:02d}"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"


def count(n: int) -> str:
    return f"{n:,}"


ITEM_SEPARATORS = (" · ", ", ")


def cut_whole(text: str, width: int, ellipsis: str = "…") -> str:
    """``text`` in ``width`` cells, cut with ``ellipsis`` after the last whole item that fits
    (items are separated by `` · `` or ``, ``), or else after the last whole word, so that a
    figure is not cut in half; a cut that would drop more than half the room cuts anywhere."""
    if len(text) <= width:
        return text
    room = max(0, width - len(ellipsis))
    for seps in (ITEM_SEPARATORS, (" ",)):
        at = max(text.rfind(sep, 0, room + len(sep)) for sep in seps)
        if at >= room // 2 and at > 0:
            return text[:at].rstrip(" ·,") + ellipsis
    return text[:room] + ellipsis


def shared_head(keys: list[str]) -> int:
    """How much of every key is the same, up to an opening bracket: a watched program's
    groups ``Net(float32[1,64])`` and ``Net(float32[8,64])`` differ after ``Net(float32[``,
    and that is what the narrow column shows. 0 for one key, and for keys such as ``T=300``."""
    if len(keys) < 2:
        return 0
    first, last = min(keys), max(keys)  # the head all keys share is these two's
    n = next((k for k, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first))
    head = first[:n]
    return max(head.rfind("("), head.rfind("[")) + 1
