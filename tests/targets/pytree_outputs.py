"""A model whose output is a hand-made dataclass registered as a pytree node, as
transformers registers its ``ModelOutput`` types: an exported program of it loads only once
this module is imported (torch.export.load must find the registration)."""

from dataclasses import dataclass

import torch
import torch.utils._pytree as pytree


@dataclass
class EncoderOutput:
    last_hidden_state: torch.Tensor
    pooled: torch.Tensor


pytree.register_dataclass(EncoderOutput, serialized_type_name=f"{__name__}.EncoderOutput")


class Encoder(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> EncoderOutput:
        hidden = torch.relu(self.linear(x))
        return EncoderOutput(hidden, hidden.mean(dim=0))


def export_to(path: str) -> None:
    """``torch.export.save`` of the encoder, with its example inputs."""
    program = torch.export.export(Encoder(), (torch.randn(2, 8),))
    torch.export.save(program, path)
