"""Targets for feeding real models: keyword inputs, chosen values, shapes that change."""

import torch


class TinyLM(torch.nn.Module):
    """Shaped like a transformers model: keyword ``input_ids`` and ``attention_mask``, more
    optional arguments after them, a dict out; refuses a mask that hides every token."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(100, 16)
        self.head = torch.nn.Linear(16, 4)

    def forward(self, input_ids, attention_mask=None, past_key_values=None):
        if attention_mask is None:
            raise TypeError("attention_mask was not passed")
        if past_key_values is not None:
            raise TypeError("an input landed in past_key_values")
        if int(attention_mask.sum()) == 0:
            raise ValueError("attention_mask masks every token")
        hidden = self.embed(input_ids) * attention_mask.unsqueeze(-1)
        return {"logits": self.head(hidden)}


def tiny_lm() -> torch.nn.Module:
    return TinyLM()


def _ids() -> torch.Tensor:
    return torch.randint(0, 100, (1, 8))


def lm_with_kwargs():
    return TinyLM(), {"input_ids": _ids(), "attention_mask": torch.ones(1, 8, dtype=torch.long)}


def lm_with_args_and_kwargs():
    return TinyLM(), (_ids(),), {"attention_mask": torch.ones(1, 8, dtype=torch.long)}


class Lengths(torch.nn.Module):
    """Needs positive lengths, as packed sequences do."""

    def forward(self, x, lengths):
        if bool((lengths <= 0).any()):
            raise ValueError("Length of all samples has to be greater than 0")
        return x.sum() + lengths.sum()


def lengths() -> torch.nn.Module:
    return Lengths()


class Rows(torch.nn.Module):
    """A small elementwise model whose cost follows its input's length."""

    def forward(self, x):
        return torch.relu(x * 2.0 + 1.0).sum(-1)


def rows() -> torch.nn.Module:
    return Rows()


def compiles_itself() -> torch.nn.Module:
    """A factory that calls torch.compile itself: warmscope runs it as is (eager mode)."""
    return torch.compile(Rows(), backend="eager")
