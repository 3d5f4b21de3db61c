"""Models for the first-call tests: one whose first call does work no later call does, one
whose first call costs what every call costs."""

import time

import torch


class LazyTable(torch.nn.Module):
    """Builds a table on its first call with big matrix products (no event says so), then
    only adds it: the first call is many times the steady one, in operators."""

    def __init__(self) -> None:
        super().__init__()
        self.table: torch.Tensor | None = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.table is None:
            g = torch.Generator().manual_seed(0)
            # Scaled to a norm of about 2, eight products stay finite with no op between them:
            # an elementwise op in the loop (a tanh) was named before the products once, on a
            # machine busy enough to stall it, and the test reads the one named first.
            b = torch.randn(384, 384, generator=g) * 0.05
            a = b
            for _ in range(8):
                a = torch.mm(a, b)
            self.table = a[: x.shape[0], : x.shape[1]].contiguous()
        return x + self.table


def lazy_table():
    return LazyTable(), (torch.randn(8, 8),)


class EvenSleeper(torch.nn.Module):
    """Every call sleeps the same 10 ms: the first is no slower than the rest."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(0.01)
        return x


def even_sleeper():
    return EvenSleeper(), (torch.randn(2, 2),)
