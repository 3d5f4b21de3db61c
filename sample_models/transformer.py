"""Small transformer encoder block over token ids.

An embedding, one ``nn.TransformerEncoderLayer`` (self-attention and a feed-forward block)
and a linear head. Attention's first passes choose and set up kernels (scaled dot-product
attention dispatch, and in eval mode the fused "fast path" encoder layer when autograd is
off), so its warm-up differs from the convolutional and recurrent samples. It takes an int64
tensor of token ids, which also exercises non-float inputs.
"""

from __future__ import annotations

import torch
from torch import nn


class TinyEncoder(nn.Module):
    """(batch, tokens) int64 ids -> (batch, tokens, vocab) logits."""

    def __init__(
        self, vocab: int = 1000, d_model: int = 64, heads: int = 4, feedforward: int = 128
    ) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.encoder = nn.TransformerEncoderLayer(
            d_model, heads, dim_feedforward=feedforward, dropout=0.0, batch_first=True
        )
        self.head = nn.Linear(d_model, vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.head(self.encoder(self.embed(tokens)))


def make_model() -> torch.nn.Module:
    """Build the model with reproducible weights, in eval mode."""
    torch.manual_seed(0)
    return TinyEncoder().eval()
