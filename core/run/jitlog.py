"""Turning the child's stderr lines into events.

The C++ JIT log (``PYTORCH_JIT_LOG_LEVEL``) prefixes every line with ``[LEVEL file:line]``; a
``GRAPH_DUMP`` is a heading line (``Profiled Graph:``) followed by the graph's lines under the same
prefix. Each dump becomes one ``jit`` event titled by its heading. Any other stderr lines of one
iteration (or phase) are gathered into one ``stderr`` event, bounded in size: a flood is counted,
not kept in memory (the session writes the full text to a side file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

JIT_LINE = re.compile(r"^\[(DUMP|UPDATE|DEBUG) ([^\]\s]+)\] ?(.*)$")
MAX_EVENT_CHARS = 64 * 1024
MAX_TITLE = 200

Context = object
"""Where a line was printed (``attribution.Iteration(12)``, ``attribution.Phase("load")``): the
parser only compares contexts, a block ends where its context changes."""


@dataclass
class ParsedEvent:
    kind: str
    title: str
    text: str
    context: Context
    data: dict[str, object] = field(default_factory=dict)


@dataclass
class _Block:
    kind: str
    context: Context
    prefix: str = ""
    level: str = ""
    source: str = ""
    lines: list[str] = field(default_factory=list)
    chars: int = 0
    dropped: int = 0

    def add(self, text: str) -> None:
        if self.chars + len(text) > MAX_EVENT_CHARS:
            self.dropped += 1
            return
        self.lines.append(text)
        self.chars += len(text) + 1


def _is_heading(text: str) -> bool:
    """``Profiled Graph:``, ``After customPostPasses:``: unindented, capitalised, colon-ended."""
    stripped = text.rstrip()
    return bool(stripped) and stripped[0].isupper() and stripped.endswith(":")


class StderrParser:
    """Feed lines with their context; get back finished events."""

    def __init__(self) -> None:
        self._block: _Block | None = None

    def feed(self, line: str, context: Context) -> list[ParsedEvent]:
        done: list[ParsedEvent] = []
        match = JIT_LINE.match(line)
        block = self._block
        if match:
            level, source, text = match.groups()
            prefix = f"{level} {source}"
            continues = (
                block is not None
                and block.kind == "jit"
                and block.prefix == prefix
                and block.context == context
                and not (level == "DUMP" and _is_heading(text))
            )
            if not continues:
                done.extend(self.flush())
                block = self._block = _Block("jit", context, prefix, level, source)
            assert block is not None
            block.add(text)
            return done
        if line.startswith("USDT:") and line.rstrip().endswith(("profiler_start", "profiler_stop")):
            return done  # torch.profiler's own start/stop chatter (kept in the stderr file)
        if block is None or block.kind != "stderr" or block.context != context:
            done.extend(self.flush())
            block = self._block = _Block("stderr", context)
        block.add(line)
        return done

    def flush(self) -> list[ParsedEvent]:
        """Finish the open block (at a context change, an idle pipe, or the end)."""
        block, self._block = self._block, None
        if block is None or not (block.lines or block.dropped):
            return []
        return [_to_event(block)]


def _to_event(block: _Block) -> ParsedEvent:
    lines = block.lines
    if block.kind == "jit":
        head = lines[0].strip() if lines else ""
        if block.level == "DUMP" and _is_heading(head):
            title = head.rstrip(":").strip()
            body = lines[1:]
        else:
            title = head
            body = lines
        data: dict[str, object] = {"level": block.level, "source": block.source}
        return ParsedEvent(
            "jit", title[:MAX_TITLE] or block.source, "\n".join(body), block.context, data
        )
    first = next((ln for ln in lines if ln.strip()), "")
    text = "\n".join(lines)
    data = {"lines": len(lines) + block.dropped}
    if block.dropped:
        data["dropped_lines"] = block.dropped
        text += f"\n… {block.dropped} more lines (full text in the run's stderr file)"
    return ParsedEvent("stderr", stderr_title(first)[:MAX_TITLE], text, block.context, data)


TORCH_LOG_LINE = re.compile(
    r"^[IWEVD]\d{4} [\d:.]+ \d+ (?P<place>[^\s\]]+:\d+)\] (?:\[[^\]]*\] )*(?P<message>.*)$"
)
"""torch's logging prefix (``W1124 03:36:02.817000 18395 torch/export/__init__.py:348]``,
then compile id and artifact tags such as ``[0/1] [__recompiles]``)."""


def stderr_title(line: str) -> str:
    """A stderr line as a title: torch's log lines lead with their message, not with the
    level, time, pid and place of their prefix; the place (shortened) ends the title."""
    text = line.strip()
    match = TORCH_LOG_LINE.match(text)
    if not match or not match.group("message").strip():
        return text
    place = match.group("place").rpartition("/")[2]
    return f"{match.group('message').strip()} ({place})"
