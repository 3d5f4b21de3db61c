"""A scripted triple add, a few µs a call: the observer's fixed cost is most visible here."""

import torch


class TripleAdd(torch.nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        return x + y + z


def make_model() -> torch.nn.Module:
    return TripleAdd().eval()


def example_inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    torch.manual_seed(0)
    return torch.randn(4, 8), torch.randn(4, 8), torch.randn(4, 8)
