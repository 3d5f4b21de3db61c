"""Small image CNN: three conv-bn-relu blocks, pooling and a linear head.

The plain convolutional case. Its warm-up is short in eager mode (oneDNN/MKL kernel and
allocator setup on the first pass); in script mode the profiling executor adds its own first
passes. It is here to compare the executor settings on an ordinary model: it scripts, traces,
and its scripted form goes through ``torch.jit.freeze`` and ``torch.jit.optimize_for_inference``
(conv-bn folding, oneDNN layouts), which do that work once, before the first pass, and leave a
faster steady state.
"""

from __future__ import annotations

import torch
from torch import nn


def _block(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, kernel_size=3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


class SmallCNN(nn.Module):
    """(batch, 3, H, W) image -> (batch, classes) logits."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.features = nn.Sequential(
            _block(3, 16),
            nn.MaxPool2d(2),
            _block(16, 32),
            nn.MaxPool2d(2),
            _block(32, 64),
            nn.AdaptiveAvgPool2d(1),
        )
        self.head = nn.Linear(64, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.flatten(self.features(x), 1))


def make_model() -> torch.nn.Module:
    """Build the model with reproducible weights (and batch-norm statistics), in eval mode."""
    torch.manual_seed(0)
    model = SmallCNN()
    # Non-trivial running statistics, so that batch norm is not an identity in eval mode.
    for module in model.modules():
        if isinstance(module, nn.BatchNorm2d):
            assert module.running_mean is not None and module.running_var is not None
            module.running_mean.normal_(0.0, 0.1)
            module.running_var.uniform_(0.5, 1.5)
    return model.eval()
