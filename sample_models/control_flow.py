"""Data-dependent control flow: a loop and a branch decided by tensor values.

The forward shrinks a hidden state until its RMS falls below a threshold (at most 16 steps;
the trip count grows with the input's magnitude, 6 for a standard normal input), then picks
one of two heads by the sign of the input's mean. ``torch.jit.script`` compiles the loop and
both branches into the graph; ``torch.jit.trace`` records only the path the example input
took (with a TracerWarning), so the traced model silently gives wrong answers for inputs that
would have taken another path. It is here to show why some models
need script mode, and how a loop makes a scripted model's pass time vary with its input.
"""

from __future__ import annotations

import torch
from torch import nn


class RefineUntilSmall(nn.Module):
    """(batch, 16, 32) -> (batch, 16, 8); the work done depends on the values of x."""

    def __init__(
        self,
        features: int = 32,
        hidden: int = 64,
        out: int = 8,
        threshold: float = 0.01,
        decay: float = 0.9,
        max_steps: int = 16,
    ) -> None:
        super().__init__()
        self.inp = nn.Linear(features, hidden, bias=False)
        self.step = nn.Linear(hidden, hidden, bias=False)
        self.pos_head = nn.Linear(hidden, out)
        self.neg_head = nn.Linear(hidden, out)
        self.threshold = threshold
        self.decay = decay
        self.max_steps = max_steps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.tanh(self.inp(x))
        steps = 0
        # Trip count depends on the data: iterate until the state's RMS is small.
        while steps < self.max_steps and bool(h.pow(2).mean().sqrt() > self.threshold):
            h = self.decay * torch.tanh(self.step(h))
            steps += 1
        # Branch depends on the data too.
        if bool(x.mean() > 0):
            return self.pos_head(h)
        return self.neg_head(h)


def make_model() -> torch.nn.Module:
    """Build the model with reproducible weights, in eval mode."""
    torch.manual_seed(0)
    return RefineUntilSmall().eval()
