"""Models that write to fd 2 in chosen iterations only: exact attribution of what they print."""

import os
import threading
import time

import torch

LATE = 40
"""The first call of the scripted part: its executor's profiling run logs in this iteration,
its optimization in the next."""
PRINT = 45  # a Python print
RAW = 47  # a write straight to fd 2, as a C extension's printf would: no Python stream
ITERS = 60
LONG = 5
"""``long_line``: the iteration that writes a line, then waits before it ends."""
LONG_WAIT_S = 4.0


class Add(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y


class Late(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.add = torch.jit.script(Add())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        i = self.calls
        self.calls += 1
        if i >= LATE:
            x = self.add(x, x)
        if i == PRINT:
            print(f"python print in call {i}")
        if i == RAW:
            os.write(2, f"raw write in call {i}\n".encode())
        return x * 2


def late():
    return Late(), (torch.randn(4, 8),)


class LongLine(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.calls == LONG:
            os.write(2, f"raw write in call {self.calls}, then a wait\n".encode())
            time.sleep(LONG_WAIT_S)
        self.calls += 1
        return x + 1


def long_line():
    return LongLine(), (torch.randn(4, 8),)


def claims_sigio():
    """``late``, from a factory that takes SIGIO for itself: the agent's watch gives way."""
    import signal

    signal.signal(signal.SIGIO, signal.SIG_IGN)
    return late()


BIG = 256 << 10
"""``big_writes``: bytes written to fd 2 in one call, four times what a pipe holds."""


class BigWrites(torch.nn.Module):
    """One large write to fd 2 every few iterations, from the model's thread and another one:
    the watch must never cut a write short or interrupt a system call."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.calls % 5 == 0:
            line = f"blob of call {self.calls}: {'b' * 40}\n".encode()
            blob = line * (BIG // len(line))
            short: list[int] = []

            def other() -> None:
                short.append(len(blob) - os.write(2, blob))

            helper = threading.Thread(target=other)
            helper.start()
            short.append(len(blob) - os.write(2, blob))
            time.sleep(0.01)  # a system call that a signal would end early
            helper.join()
            if any(short):
                raise RuntimeError(f"a write to fd 2 was cut short by {max(short)} bytes")
        self.calls += 1
        return x + 1


def big_writes():
    return BigWrites(), (torch.randn(4, 8),)
