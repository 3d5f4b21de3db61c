"""Trivial model: one add.

There is nothing to warm up here, so whatever time a forward takes beyond a few microseconds
is overhead: the executor's dispatch, and warmscope's own observation of the pass. It is the
baseline against which the other samples' numbers are read.
"""

from __future__ import annotations

import torch
from torch import nn


class AddOne(nn.Module):
    """x -> x + 1."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1


def make_model() -> torch.nn.Module:
    """Build the model (it has no weights; the seed is set for uniformity), in eval mode."""
    torch.manual_seed(0)
    return AddOne().eval()
