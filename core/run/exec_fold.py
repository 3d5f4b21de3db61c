"""One process of a program ``warmscope exec`` watches: its stream's lines, as a run.

The process's stream (``core/child/exec_stream.py``) names modules, input signatures and
threads by number, and sends calls in batches. Here each call becomes an iteration of a
``RunData``, written to the process's record as the record lines a run writes: the calls of
one module and one input signature are one "shape" (``shapes``: ``Net float32[8,64]``), so
every view, summary, explanation and document of a run reads a watched program as it reads a
run, grouped by module and signature, each group's first call marked. Events land on the call
they happened in: the stream sends an event before the call it happened in is over, so it
waits here for that call.

No socket here, no process: ``feed`` takes bytes (tests give it a real stream's), ``end``
closes the run. Every line is folded as it would be read back (``schema.apply_line``).
"""

from __future__ import annotations

import json
import shlex
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from warmscope.core.base.safe_text import clean_line
from warmscope.core.child import outcome, protocol
from warmscope.core.data import fold, schema
from warmscope.core.data.run import Cursor, RunData, Update
from warmscope.core.data.settings import RunSettings
from warmscope.core.run.jitlog import stderr_title

MAX_LINE_BYTES = 1 << 20
"""A stream line longer than this is not one the observer writes: the stream is dropped."""
MAX_GROUPS = 2**15 - 1
"""Module-and-signature groups a stream may name (a record's shape index is 16 bits); calls
of more are kept as calls of an unknown group."""
MAX_WAITING = 10_000
"""Events held for calls not yet over, at most: a stream that pins more to calls that never
end has the rest placed outside any call."""
MAX_TEXT = 400
MAX_OUTPUT_LINES = 200
CALL_COLUMNS = ("n", "m", "s", "th", "st", "ns")
OUTSIDE = "outside a call"
"""The phase of an event that happened in no call of a watched module (an import, a compile
started by the program itself)."""

Write = Callable[[dict[str, Any]], None]


def decode_calls(message: dict[str, Any]) -> list[tuple[int, ...]]:
    """A ``calls`` line's calls, as ``CALL_COLUMNS`` tuples; ``ValueError`` for one whose
    columns differ in length."""
    if "n" not in message:
        return []
    columns = [protocol.int_column(str(message[name])) for name in CALL_COLUMNS]
    if len({len(c) for c in columns}) != 1:
        raise ValueError("a calls line's columns differ in length")
    return list(zip(*columns, strict=True))


class ProcessRun:
    """One watched process, folded into ``data`` and written through ``write`` (its record;
    ``None``: kept in memory only). Thread-safe: the session's reader feeds it, a view polls."""

    def __init__(self, write: Write | None, command: list[str], run_id: str, stderr: str | None):
        self.data = RunData()
        self.lock = threading.Lock()
        self.write_line = write
        self._command = command
        self._run_id = run_id
        self._stderr = stderr
        self._t0 = time.monotonic()
        self._ended_at: float | None = None
        self.pid: int | None = None
        self.ppid: int | None = None
        self._clock0 = 0
        self._pending = b""
        self._modules: dict[int, dict[str, Any]] = {}
        self._signatures: dict[int, str] = {}
        self._groups: dict[tuple[int, int], int] = {}
        self._waiting: dict[int, list[dict[str, Any]]] = {}
        """Events of calls still running, by call number: they land when the call does."""
        self._held = 0
        self._raised: set[int] = set()
        self._gpu_groups: set[int] = set()
        """The groups whose calls are timed on the device (their signature names a GPU)."""
        self._iteration_of: dict[int, int] = {}
        """Each call timed on the device whose time has not come yet: its iteration."""
        self._early: dict[int, int] = {}
        """Device times that came before their calls, by call number."""
        self._device_times: dict[int, int] = {}
        """Device times come in the order the GPU passes them: held until every call before
        them is placed (a ``device`` line covers a stretch of calls)."""
        self.busy: dict[str, Any] | None = None
        self.owner: Any = None
        """The session that started the program: what ``stop`` and ``kill`` act on."""
        self.unwatched = ""
        self.broken = ""
        """Why this stream stopped being read (a line no observer writes), if it did."""

    # -- reading -----------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> None:
        """Bytes as they came from the stream: every complete line folded."""
        with self.lock:
            if self.broken:
                return
            data = self._pending + chunk
            *lines, self._pending = data.split(b"\n")
            if len(self._pending) > MAX_LINE_BYTES:
                self._break(f"a line of more than {MAX_LINE_BYTES >> 20} MB")
                return
            for raw in lines:
                if raw.strip():
                    self._line(raw)
                if self.broken:
                    return

    def _line(self, raw: bytes) -> None:
        try:
            message = json.loads(raw)
            if not isinstance(message, dict) or not isinstance(message.get("t"), str):
                raise ValueError("not a message")
            if self.pid is None and message["t"] != "hello":
                raise ValueError("no hello first")
            self._handle(message)
        except (*schema.FOLD_ERRORS, RecursionError) as exc:
            self._break(f"a line that is not the observer's ({schema.describe(exc)})")

    def _break(self, why: str) -> None:
        """Read no more of this stream (the lock held); what was folded stays."""
        self.broken = why
        self._pending = b""
        if self.pid is not None:
            self._event({"kind": "warning", "title": f"stream dropped: {why}", "phase": OUTSIDE})

    def _emit(self, line: dict[str, Any], packed: Any = None) -> None:
        """One record line: checked, folded, written."""
        schema.check_line(line)
        schema.apply_line(self.data, line, packed)
        if self.write_line is not None:
            self.write_line(line)

    def _handle(self, message: dict[str, Any]) -> None:
        kind = message["t"]
        handler = getattr(self, f"_on_{kind}", None)
        if handler is not None:
            handler(message)

    # -- the messages ------------------------------------------------------------------------

    def _on_hello(self, message: dict[str, Any]) -> None:
        if self.pid is not None:
            raise ValueError("a second hello")
        self.pid = int(message["pid"])
        self.ppid = message.get("ppid") if isinstance(message.get("ppid"), int) else None
        self._clock0 = int(message.get("clock_ns") or 0)
        argv = [str(a) for a in message.get("argv") or []]
        program = shlex.join(argv) if argv else "?"
        wall_ns = message.get("wall_ns")
        when = time.time() if not isinstance(wall_ns, int) else wall_ns / 1e9
        header = {
            "type": "header",
            "format": schema.FORMAT,
            "version": schema.VERSION,
            "settings": RunSettings(target=f"pid {self.pid}: {program}").to_json(),
            "target": {"kind": "exec", "spec": program, "pid": self.pid},
            "mode": "exec",
            "started": datetime.fromtimestamp(when, timezone.utc).isoformat(timespec="seconds"),
            "command": self._command,
            "run_id": self._run_id,
        }
        if self._stderr:
            header["stderr_file"] = self._stderr
        self._emit(header)
        self._emit({"type": "spawned", "pid": self.pid})
        process = {
            "pid": self.pid,
            "ppid": self.ppid,
            "argv": argv,
            "executable": str(message.get("executable", "")),
            "python": str(message.get("python", "")),
        }
        self._emit({"type": "exec", "process": process})

    def _on_phase(self, message: dict[str, Any]) -> None:
        self._emit({"type": "phase", "name": str(message["name"]), "ms": float(message["ms"])})

    def _on_thread(self, message: dict[str, Any]) -> None:
        name = str(message.get("name", ""))[:MAX_TEXT]
        self._emit({"type": "exec", "threads": {str(int(message["th"])): name}})

    def _on_module(self, message: dict[str, Any]) -> None:
        facts = {
            key: message[key]
            for key in ("cls", "name", "kind", "params", "why")
            if isinstance(message.get(key), (str, int)) and not isinstance(message[key], bool)
        }
        for key, value in facts.items():
            if isinstance(value, str):
                facts[key] = value[:MAX_TEXT]
        self._modules[int(message["id"])] = facts
        self._emit({"type": "exec", "modules": {str(int(message["id"])): facts}})

    def _on_signature(self, message: dict[str, Any]) -> None:
        self._signatures[int(message["id"])] = str(message["text"])[:MAX_TEXT]

    def _on_calls(self, message: dict[str, Any]) -> None:
        calls = decode_calls(message)
        # A call that raised may be told a batch before the call itself.
        raised = message.get("raised") or ()
        if len(self._raised) + len(raised) <= MAX_WAITING:
            self._raised.update(int(n) for n in raised)
        if calls:
            self._calls(calls)
        lost = message.get("lost")
        if isinstance(lost, int) and lost > 0:
            self._event(
                {
                    "kind": "warning",
                    "title": f"{lost:,} calls not kept",
                    "phase": OUTSIDE,
                    "text": "warmscope read the stream too slowly; the calls were counted",
                }
            )

    def _calls(self, calls: list[tuple[int, ...]]) -> None:
        first = self.data.count
        ns, st, sh, th = [], [], [], []
        for _number, module, signature, thread, start, duration in calls:
            ns.append(max(0, duration))
            st.append(max(0, start - self._clock0))
            sh.append(self._group(module, signature))
            th.append(thread)
        new_keys = len(self.data.shape_keys) != len(self._groups)
        if new_keys:
            keys = [""] * len(self._groups)
            dims: list[dict[str, Any]] = [{}] * len(self._groups)
            for (module, signature), k in self._groups.items():
                keys[k], dims[k] = self._group_key(module, signature)
            self._emit({"type": "shapes", "keys": keys, "dims": dims})
        line, packed = fold.iterations_entry(first, ns, st, sh)
        self._emit(line, packed)
        self._emit({"type": "callers", "i0": first, "th": th})
        self.busy = None
        if self._gpu_groups:
            for offset, (call, k) in enumerate(zip(calls, sh, strict=True)):
                if k not in self._gpu_groups:
                    continue
                if call[0] in self._early:  # its time was read before the call was sent
                    self._device_times[first + offset] = self._early.pop(call[0])
                elif len(self._iteration_of) < MAX_WAITING:
                    self._iteration_of[call[0]] = first + offset
                else:  # too many times outstanding: this call's is not waited for
                    self._device_times[first + offset] = -1
            self._place_device_times(final=False)
        for offset, call in enumerate(calls):
            number = call[0]
            for event in self._waiting.pop(number, []):
                self._held -= 1
                self._event({**event, "iteration": first + offset})
            if number in self._raised:
                self._raised.discard(number)
                self._event(
                    {"kind": "error", "title": "the call raised", "iteration": first + offset}
                )

    def _group(self, module: int, signature: int) -> int:
        key = (module, signature)
        k = self._groups.get(key)
        if k is None:
            if len(self._groups) >= MAX_GROUPS:
                return -1
            k = self._groups[key] = len(self._groups)
            if "@cuda" in self._signatures.get(signature, ""):
                self._gpu_groups.add(k)
        return k

    def _on_device_ns(self, message: dict[str, Any]) -> None:
        for number, ns in zip(message["n"], message["dv"], strict=True):
            iteration = self._iteration_of.pop(int(number), None)
            if iteration is not None:
                self._device_times[iteration] = int(ns)
            elif len(self._early) < MAX_WAITING:
                # The observer reads a call's events as soon as the GPU passed them, which can
                # be before the call itself is sent: the time waits here for its call.
                self._early[int(number)] = int(ns)
        self._place_device_times(final=False)

    def _place_device_times(self, *, final: bool) -> None:
        """A ``device`` line for the calls from the last one placed up to the first whose
        time has not come (``final``: past it, as not timed): calls on the CPU are not timed
        (-1), their host time is what they took."""
        data = self.data
        ns = data.ns  # the host times as recorded, in ns
        first = len(data.device_ns)
        dv: list[int] = []
        ln: list[int] = []
        for i in range(first, data.count):
            on_gpu = data.shape_of[i] in self._gpu_groups
            if on_gpu and i not in self._device_times and not final:
                break
            host = int(ns[i]) if ns is not None else round(data.latency(i) * 1e6)
            device = self._device_times.pop(i, -1) if on_gpu else -1
            dv.append(device if device >= 0 else -1)
            ln.append(host if device >= 0 else -1)
        if dv:
            self._emit(fold.device_line(first, dv, ln))

    def _group_key(self, module: int, signature: int) -> tuple[str, dict[str, Any]]:
        facts = self._modules.get(module, {})
        name = str(facts.get("name") or f"module {module}")
        if sum(1 for f in self._modules.values() if f.get("name") == facts.get("name")) > 1:
            name = f"{name}#{module}"  # two instances of one class: told apart
        text = self._signatures.get(signature, "?")
        dims = {"module": module, "cls": facts.get("cls", name), "signature": text}
        return f"{name}({text})", dims

    def _on_event(self, message: dict[str, Any]) -> None:
        body = {k: v for k, v in message.items() if k not in ("t", "call")}
        call = message.get("call")
        if isinstance(call, int) and self._held < MAX_WAITING:
            self._waiting.setdefault(call, []).append(body)
            self._held += 1
            return
        self._event({**body, "phase": body.get("phase") or OUTSIDE})

    def _event(self, body: dict[str, Any]) -> None:
        line = fold.record_line({"t": "event", **body}, self.elapsed())
        if line is not None:
            self._emit(line)

    def _on_busy(self, message: dict[str, Any]) -> None:
        facts = self._modules.get(int(message.get("m", -1)), {})
        self.busy = {
            "iteration": self.data.count,
            "ms": float(message.get("ms", 0.0)),
            "activity": f"in {facts.get('name', 'a module')}",
        }

    def _on_unwatched(self, message: dict[str, Any]) -> None:
        self.unwatched = clean_line(str(message.get("why", "")))[:MAX_TEXT]
        self._event({"kind": "warning", "title": f"unwatched: {self.unwatched}", "phase": OUTSIDE})

    # -- the session's side ------------------------------------------------------------------

    def sample(self, sample: dict[str, Any]) -> None:
        with self.lock:
            if self.pid is not None and not self.data.finished:
                self._emit({"type": "sample", **sample, "t": round(self.elapsed(), 3)})

    def note(self, title: str, text: str = "") -> None:
        """A warning of warmscope's own about this process, in no call."""
        with self.lock:
            if self.pid is not None and not self.data.finished:
                self._event({"kind": "warning", "title": title, "text": text, "phase": OUTSIDE})

    def output(self, lines: list[str], where: str) -> None:
        """The program's output (under the TUI, where it goes to a file), as one event."""
        shown = lines[:MAX_OUTPUT_LINES]
        text = "\n".join(line[:MAX_TEXT] for line in shown)
        if len(lines) > len(shown):
            text += f"\n… {len(lines) - len(shown):,} more lines in {where}"
        with self.lock:
            if self.pid is not None and not self.data.finished:
                title = stderr_title(shown[0]) if shown else ""
                self._event(
                    {"kind": "stderr", "title": title[:MAX_TEXT], "text": text, "phase": "output"}
                )

    def set_env(self, env: dict[str, Any]) -> None:
        with self.lock:
            if self.pid is not None:
                self._emit({"type": "env", "env": env})

    def set_streams(self, names: list[str]) -> None:
        with self.lock:
            if self.pid is not None:
                self._emit({"type": "exec", "streams": names})

    def end(self, status: str, detail: str, exit_code: int | None) -> None:
        """The process is gone: events still waiting for their call stay with no call, and
        the run ends as the program did."""
        if self._pending.strip():
            self.feed(b"\n")  # a last line cut short by the process's end: tried whole
        with self.lock:
            if self.pid is None or self.data.finished:
                return
            for number, events in sorted(self._waiting.items()):
                for event in events:
                    title = f"{event.get('title', '')} (in call {number}, unfinished)"
                    self._event({**event, "title": title, "phase": OUTSIDE})
            self._waiting.clear()
            if self._gpu_groups:
                self._place_device_times(final=True)
            self.busy = None
            self._ended_at = time.monotonic()
            self._emit({"type": "end", "status": status, "detail": detail, "exit_code": exit_code})

    def elapsed(self) -> float:
        end = self._ended_at if self._ended_at is not None else time.monotonic()
        return end - self._t0

    # -- a view's side (``LiveRun``, with the session's stop) -------------------------------

    def poll(self, cursor: Cursor, *, starts: bool = False) -> Update:
        with self.lock:
            update = self.data.since(cursor, starts=starts)
            update.busy = self.busy
        return update

    def snapshot(self) -> RunData:
        with self.lock:
            return self.data.snapshot()

    def is_finished(self) -> bool:
        return self.data.finished

    def stop(self, grace: float | None = None) -> None:
        """Stopping one process's view stops the program (``owner``: its session, whose
        grace it is unless one is given)."""
        if self.owner is None:
            return
        if grace is None:
            self.owner.stop()
        else:
            self.owner.stop(grace)

    def kill(self) -> None:
        if self.owner is not None:
            self.owner.kill()


def status_of(code: int | None, stopped: bool) -> tuple[str, str]:
    """The run's status and detail from the program's exit code (``None``: not known)."""
    if stopped:
        return outcome.STOPPED, "stopped by the user"
    if code == 0:
        return outcome.OK, "the program exited with 0"
    if code is None:
        return outcome.CRASHED, "the program's exit is not known"
    if code < 0:
        return outcome.CRASHED, f"the program was killed by signal {-code}"
    return outcome.FAILED, f"the program exited with {code}"
