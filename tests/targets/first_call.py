"""A model whose first forward pass sleeps for ``WARMSCOPE_FIRST_SLEEP_MS`` (read from the
run's environment, so ``--vary env.WARMSCOPE_FIRST_SLEEP_MS=0,300`` makes a clear difference
in first-call time and none after it)."""

import os
import time

import torch


class SlowFirstCall(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == 1:
            time.sleep(int(os.environ.get("WARMSCOPE_FIRST_SLEEP_MS", "0")) / 1000)
        return self.linear(x)


def slow_first_call():
    return SlowFirstCall(), (torch.randn(2, 8),)
