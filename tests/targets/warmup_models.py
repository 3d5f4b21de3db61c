"""Small models for the warm-up tests and benchmark: a GPT-like decoder and a convolution."""

import torch
import torch.nn.functional as F
from torch import nn


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(
            nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width)
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, t, c))
        return x + self.mlp(self.norm2(x))


class TinyGPT(nn.Module):
    """Token ids (batch, length) -> next-token logits (batch, length, vocab)."""

    def __init__(self, vocab: int = 96, width: int = 64, heads: int = 2, layers: int = 2) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, width)
        self.positions = nn.Embedding(1024, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = self.tokens(ids) + self.positions(positions)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def tiny_gpt() -> nn.Module:
    torch.manual_seed(0)
    return TinyGPT().eval()


class Conv(nn.Module):
    """(batch, frames, 16) -> (batch, frames, 8): a convolution and a fusable tail."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv1d(16, 8, kernel_size=3, padding=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.conv(x.transpose(1, 2)).transpose(1, 2)
        return torch.tanh(y) * torch.sigmoid(y) + 1.0


def conv() -> nn.Module:
    torch.manual_seed(0)
    return Conv().eval()


class EncoderConfig:
    """Settings of ``BertLike``, as a Hugging Face config object holds them."""

    def __init__(self, vocab: int = 96, width: int = 32, heads: int = 2, layers: int = 2) -> None:
        self.vocab, self.width, self.heads, self.layers = vocab, width, heads, layers


class BertLike(nn.Module):
    """A BERT-shaped encoder as ``transformers`` builds one: a config object, ``**kwargs`` in
    ``forward`` and a dict out. ``torch.jit.script`` refuses it; ``torch.jit.trace`` with
    ``strict=False`` takes it."""

    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.config = config
        self.tokens = nn.Embedding(config.vocab, config.width)
        self.positions = nn.Embedding(512, config.width)
        layer = nn.TransformerEncoderLayer(
            config.width, config.heads, 2 * config.width, dropout=0.0, batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, config.layers, enable_nested_tensor=False)
        self.pooler = nn.Linear(config.width, config.width)

    def forward(self, input_ids: torch.Tensor, **kwargs: torch.Tensor) -> dict[str, torch.Tensor]:
        positions = torch.arange(input_ids.shape[1], device=input_ids.device)
        hidden = self.encoder(self.tokens(input_ids) + self.positions(positions))
        return {
            "last_hidden_state": hidden,
            "pooler_output": torch.tanh(self.pooler(hidden[:, 0])),
        }


def bert_like() -> nn.Module:
    torch.manual_seed(0)
    return BertLike(EncoderConfig()).eval()
