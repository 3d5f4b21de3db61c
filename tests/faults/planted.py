"""Planted faults: models that fail in iteration K (default 3) in every way a real one can.

Each factory is a warmscope target (`tests/faults/planted.py:NAME`); K comes from the
environment variable FAULT_AT so tests can move it; FLOOD_MB sets how much ``floods`` writes.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import time

import torch

K = int(os.environ.get("FAULT_AT", "3"))


class Fault(torch.nn.Module):
    def __init__(self, action) -> None:
        super().__init__()
        self.calls = 0
        self.action = action

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.calls == K:
            self.action()
        self.calls += 1
        return x * 2


def _raise() -> None:
    raise ValueError(f"planted failure in iteration {K}")


def _segfault() -> None:
    ctypes.string_at(0)


def _exit() -> None:
    os._exit(7)


def _hang() -> None:
    while True:
        time.sleep(1)


def _allocate() -> None:
    hoard = []
    while True:
        hoard.append(torch.ones(64 * 2**20, dtype=torch.uint8))  # 64 MB at a time, touched


def _flood() -> None:
    line = ("flood " * 16 + "\n").encode()
    chunk = line * (2**20 // len(line))
    for _ in range(int(os.environ.get("FLOOD_MB", "50"))):  # 50 MB straight to fd 2
        os.write(2, chunk)


def _stdout() -> None:
    print('{"t":"done","status":"ok"}')  # looks like a protocol line: must not be taken as one
    sys.stdout.write("plain stdout text\n")
    os.write(1, b"raw fd 1 write\n")


def raises() -> torch.nn.Module:
    return Fault(_raise)


def segfault() -> torch.nn.Module:
    return Fault(_segfault)


def exits() -> torch.nn.Module:
    return Fault(_exit)


def hangs() -> torch.nn.Module:
    return Fault(_hang)


def allocates() -> torch.nn.Module:
    """Under a 3 GB address-space limit set here, so the test machine is never at risk."""
    import resource

    limit = int(os.environ.get("FAULT_MEMORY_LIMIT", str(3 * 2**30)))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return Fault(_allocate)


def floods() -> torch.nn.Module:
    return Fault(_flood)


def prints() -> torch.nn.Module:
    return Fault(_stdout)


def raises_while_loading() -> torch.nn.Module:
    raise RuntimeError("planted failure while building the model")


def ignores_sigint() -> torch.nn.Module:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    return Fault(lambda: None)


def ignores_everything() -> torch.nn.Module:
    """Ignores SIGINT and SIGTERM: only SIGKILL ends it."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    return Fault(lambda: None)
