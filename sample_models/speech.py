"""Speech-like acoustic model: Conv1d front end, GRU, linear head.

This is the shape of the libtorch forum thread "first forward 190 ms, second 110 ms, then
70 ms": a recurrent acoustic model over 300 frames of 40 filterbank features. Under
TorchScript's profiling executor the first passes run the profiled, unoptimised graph and
the optimised one only takes over after a few calls, so the latency steps down over the
first forwards before it settles. It is the default sample because it tells that story.
"""

from __future__ import annotations

import torch
from torch import nn


class SpeechModel(nn.Module):
    """(batch, frames, features) -> (batch, frames // 2, classes) log-probabilities."""

    def __init__(
        self, features: int = 40, channels: int = 64, hidden: int = 96, classes: int = 29
    ) -> None:
        super().__init__()
        self.conv = nn.Conv1d(features, channels, kernel_size=5, stride=2, padding=2)
        self.gru = nn.GRU(channels, hidden, num_layers=1, batch_first=True)
        self.head = nn.Linear(hidden, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # The convolution runs over time with the features as channels.
        y = torch.relu(self.conv(x.transpose(1, 2))).transpose(1, 2)
        y, _ = self.gru(y)
        return torch.log_softmax(self.head(y), dim=-1)


def make_model() -> torch.nn.Module:
    """Build the model with reproducible weights, in eval mode."""
    torch.manual_seed(0)
    return SpeechModel().eval()
