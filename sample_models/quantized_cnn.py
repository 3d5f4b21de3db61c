"""Statically quantized (int8) CNN, built by eager-mode post-training static quantization.

A small conv-bn-relu CNN, fused, observed on a few random calibration batches and converted
to quantized modules with ``torch.ao.quantization``. The weights are prepacked at convert
time, but each quantized convolution still sets up its int8 kernel for the input shape on its
first call (fbgemm code generation or oneDNN primitive creation, plus packing buffers): the
first eager pass is ~10-20x the steady one, nearly all in ``quantized::conv2d_relu``. Under
TorchScript the profiling executor adds its own first passes on top. It is here because int8
models are where first-pass latency surprises people most.
"""

from __future__ import annotations

import warnings

import torch
from torch import nn
from torch.ao import quantization as tq

_PREFERRED_ENGINES = ("x86", "fbgemm", "onednn", "qnnpack")
_CALIBRATION_BATCHES = 4
_SILENCED_WARNINGS = (
    r"Please use quant_min and quant_max",
    r"torch\.quantize_per_tensor, torch\.quantize_per_channel",
)


class QuantizableCNN(nn.Module):
    """(batch, 3, H, W) float image -> (batch, classes) float logits, int8 inside."""

    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.quant = tq.QuantStub()
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu1 = nn.ReLU()
        self.pool1 = nn.MaxPool2d(2)
        self.conv2 = nn.Conv2d(16, 32, kernel_size=3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(32)
        self.relu2 = nn.ReLU()
        self.pool2 = nn.MaxPool2d(2)
        self.conv3 = nn.Conv2d(32, 64, kernel_size=3, padding=1, bias=False)
        self.bn3 = nn.BatchNorm2d(64)
        self.relu3 = nn.ReLU()
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(64, classes)
        self.dequant = tq.DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.quant(x)
        x = self.pool1(self.relu1(self.bn1(self.conv1(x))))
        x = self.pool2(self.relu2(self.bn2(self.conv2(x))))
        x = self.gap(self.relu3(self.bn3(self.conv3(x))))
        x = self.head(torch.flatten(x, 1))
        return self.dequant(x)


def _pick_engine() -> str:
    """The engine already chosen (warmscope's ``quantized_engine`` knob), else a preferred one."""
    supported = torch.backends.quantized.supported_engines
    current = torch.backends.quantized.engine
    if current in supported and current != "none":
        return current
    for engine in _PREFERRED_ENGINES:
        if engine in supported:
            return engine
    return torch.backends.quantized.engine


def make_model() -> torch.nn.Module:
    """Build, calibrate and convert the model with reproducible weights, in eval mode.

    Converts for the engine already selected (warmscope applies the ``quantized_engine`` knob
    before loading) and keeps it selected, so the model runs with the kernels it was packed for.
    """
    torch.manual_seed(0)
    engine = _pick_engine()
    torch.backends.quantized.engine = engine

    model = QuantizableCNN().eval()
    fused = tq.fuse_modules(
        model,
        [["conv1", "bn1", "relu1"], ["conv2", "bn2", "relu2"], ["conv3", "bn3", "relu3"]],
    )
    with warnings.catch_warnings():
        # torch's own notices about the eager quantization API this sample uses on purpose
        # (reduce_range in the default qconfig, quantized dtypes); not the user's concern.
        for message in _SILENCED_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=UserWarning)
        fused.qconfig = tq.get_default_qconfig(engine)
        prepared = tq.prepare(fused)
        with torch.no_grad():
            for _ in range(_CALIBRATION_BATCHES):
                prepared(torch.randn(1, 3, 64, 64))
        return tq.convert(prepared).eval()
