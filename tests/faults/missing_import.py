"""A model file whose import fails: its dependency is not installed."""

import torch
import warmscope_no_such_dependency  # noqa: F401


def make_model() -> torch.nn.Module:
    return torch.nn.Identity()
