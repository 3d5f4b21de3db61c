"""Models for the explanation tests: one slow only in the first process that runs it, one whose
first call's cost is spread over many operators, one that waits for CPU hogs before its first
call, one that starts CPU hogs beside itself for its first calls."""

import os
import subprocess
import sys
import time

import torch


class SlowInFirstProcess(torch.nn.Module):
    """Its first call sleeps 200 ms, once per machine: a marker file (``WARMSCOPE_TEST_MARKER``)
    says a process ran it already. A second process's first call is as fast as any."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 16)
        self.marker = os.environ["WARMSCOPE_TEST_MARKER"]
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.calls == 0 and not os.path.exists(self.marker):
            open(self.marker, "w").close()
            time.sleep(0.2)
        self.calls += 1
        return self.lin(x)


def slow_in_first_process():
    return SlowInFirstProcess().eval(), (torch.randn(4, 16),)


class SpreadOnce(torch.nn.Module):
    """Its first call runs twenty different operators once, each on two large tensors and
    each costing about the same (memory-bound): no three of them make up half of its cost."""

    OPS = (
        torch.add, torch.sub, torch.mul, torch.div, torch.maximum, torch.minimum,
        torch.clamp_min, torch.clamp_max, torch.copysign, torch.eq, torch.ne, torch.lt,
        torch.gt, torch.le, torch.ge, torch.logical_and, torch.logical_or, torch.logical_xor,
        torch.rsub, torch.atan2,
    )  # fmt: skip

    def __init__(self) -> None:
        super().__init__()
        self.a = torch.rand(1500, 1500)
        self.b = torch.rand(1500, 1500) + 0.5
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.calls == 0:
            for op in self.OPS:
                op(self.a, self.b)
        self.calls += 1
        return x + 1


def spread_once():
    return SpreadOnce().eval(), (torch.randn(4, 4),)


HOG = "while True:\n    pass"


class Products(torch.nn.Module):
    """A few milliseconds of matrix products on torch's threads, every call alike."""

    def __init__(self) -> None:
        super().__init__()
        self.w = torch.rand(256, 256)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = x
        for _ in range(6):
            y = y @ self.w
        return y / y.norm()


def products():
    return Products().eval(), (torch.rand(256, 256),)


class ProductsBeside(Products):
    """``Products`` whose first call waits for busy processes beside it: it writes the file
    ``WARMSCOPE_TEST_MARKER`` names, then waits for that name with ``.go`` added, which the
    test writes once its busy processes run: they run beside the calls, not beside the
    start-up."""

    def __init__(self) -> None:
        super().__init__()
        self.marker = os.environ["WARMSCOPE_TEST_MARKER"]
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.calls == 0:
            open(self.marker, "w").close()
            deadline = time.monotonic() + 60
            while not os.path.exists(self.marker + ".go") and time.monotonic() < deadline:
                time.sleep(0.01)
        self.calls += 1
        return super().forward(x)


def products_beside():
    return ProductsBeside().eval(), (torch.rand(256, 256),)


class HogsAtStart(Products):
    """``Products``, beside busy processes (twice the cores it may use, and one) that it starts
    at its first call and ends after ``HOGGED`` calls: those calls wait for a core, the rest
    do not."""

    HOGGED = 40

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.hogs: list[subprocess.Popen[bytes]] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.calls == 0:
            cores = len(os.sched_getaffinity(0))
            self.hogs = [
                subprocess.Popen([sys.executable, "-c", HOG]) for _ in range(2 * cores + 1)
            ]
            time.sleep(0.3)  # the hogs are running before the first call's work
        if self.calls == self.HOGGED:
            for hog in self.hogs:
                hog.kill()
                hog.wait()
        self.calls += 1
        return super().forward(x)


def hogs_at_start():
    return HogsAtStart().eval(), (torch.rand(256, 256),)
