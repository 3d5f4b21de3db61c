"""A factory module whose ``example_inputs()`` brings keyword arguments."""

import torch
from feeding import TinyLM  # this file's folder is on the path, as `python file.py` has it


def model() -> torch.nn.Module:
    return TinyLM()


def example_inputs():
    return {
        "input_ids": torch.randint(0, 100, (1, 8)),
        "attention_mask": torch.ones(1, 8, dtype=torch.long),
    }
