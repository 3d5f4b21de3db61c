"""A file target over ``--host``: a path on the remote, checked there before any run starts.

One ``ssh`` connection, made as the run's is (``remote.ssh_command``): the remote interpreter
reads ``core/child/target_files.py`` on stdin (``remote.BOOTSTRAP``), then one JSON request,
and prints one JSON answer. A relative path is taken from the remote login folder, as ``ssh``
takes it, and the answer names the file by its absolute path there, which the agent then loads.
Answers are kept for the life of this process: a sweep or ``--repeat`` asks once.
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from warmscope.core.child import target_files
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.targets import Target, TargetError, file_request, from_answer

MAX_ANSWER_BYTES = 1 << 20
"""The longest answer line read: one JSON object naming a file."""

_answers: dict[tuple[str, str | None, str, bool, bool, str], Target] = {}
_lock = threading.Lock()


def resolve(settings: RunSettings) -> Target:
    """``settings.resolve()``, a file target on ``--host`` checked there (one ``ssh``, asked
    once a process): what every run, sweep and warm-up resolves its target with."""
    host = settings.host
    if host is None:
        return settings.resolve()
    return settings.resolve(
        lambda spec: resolve_there(
            host, settings.python, spec, settings.trust_pickle, settings.trust_native
        )
    )


def resolve_there(
    host: str, python: str | None, spec: str, trust_pickle: bool, trust_native: bool = False
) -> Target:
    """The target ``spec`` names on ``host``. ``TargetError`` (one line naming the host) for a
    file that cannot be the target, ``UsageError`` when the host cannot be asked."""
    # The ssh machinery (psutil, the shipment, the guardian) only where a host is named: a
    # local target is resolved before the TUI's first frame, which need not wait for it.
    from warmscope.core.run import remote

    options = os.environ.get(remote.SSH_OPTIONS_VAR, "")
    key = (host, python, spec, trust_pickle, trust_native, options)
    with _lock:
        known = _answers.get(key)
    if known is not None:
        return known
    answer = ask(host, python, file_request(spec, trust_pickle, trust_native))
    if "error" in answer:
        raise TargetError(f"--host {host}: {answer['error']}")
    target = from_answer(spec, answer["target"])
    with _lock:
        _answers[key] = target
    return target


def ask(host: str, python: str | None, request: dict[str, Any]) -> dict[str, Any]:
    """``target_files.answer(request)`` as the remote interpreter on ``host`` gives it."""
    from warmscope.core.run import remote  # for a host only (``resolve_there``)

    since = remote.cuts()
    source = Path(target_files.__file__).read_bytes()
    stdin = b"%d\n%s%s\n" % (len(source), source, json.dumps(request).encode())
    proc = subprocess.Popen(
        remote.ssh_command(host, python),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # a Ctrl-C here is this process's to handle, not ssh's
        close_fds=True,
    )
    try:
        with remote.connecting(proc, since):
            line = _send_and_read(proc, stdin, host, python)
        proc.wait(timeout=remote.CONNECT_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
    try:
        answer = json.loads(line)
        if not isinstance(answer, dict) or not ("error" in answer or "target" in answer):
            raise ValueError
    except ValueError:
        raise UsageError(
            f"--host {host}: the remote interpreter printed something else: {line[:80]!r}"
        ) from None
    return answer


def _send_and_read(
    proc: subprocess.Popen[bytes], stdin: bytes, host: str, python: str | None
) -> bytes:
    """Write the program and the request, then read the one answer line."""
    from warmscope.core.run import remote  # for a host only (``resolve_there``)

    assert proc.stdin is not None and proc.stdout is not None
    # How long the connection, the remote interpreter's start and the look at the file may
    # take: as long as a run's hello.
    timeout = remote.HELLO_TIMEOUT_S
    # A failed connection breaks the pipe (its stderr then says why); one that takes nothing
    # for as long as an answer may take is given up on.
    if not remote.write_within(proc, stdin, timeout):
        raise UsageError(f"--host {host}: no answer in {timeout:g} s")
    proc.stdin.close()
    fd = proc.stdout.fileno()
    line = bytearray()
    deadline = time.monotonic() + timeout
    while not line.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise UsageError(f"--host {host}: no answer in {timeout:g} s")
        if len(line) > MAX_ANSWER_BYTES:
            raise UsageError(f"--host {host}: the remote answer runs past 1 MiB")
        chunk = os.read(fd, 65536)
        if not chunk:
            raise UsageError(remote.failure(proc, host, python))
        line += chunk
    return bytes(line)
