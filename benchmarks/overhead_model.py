"""A scripted-friendly model of about 20 µs per call on one CPU core, for overhead benchmarks."""

import torch


class Small(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(64, 64)
        self.b = torch.nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.b(torch.relu(self.a(x))).sum(-1)


def make_model() -> torch.nn.Module:
    torch.manual_seed(0)
    return Small().eval()


def example_inputs() -> tuple[torch.Tensor]:
    return (torch.randn(4, 64),)
