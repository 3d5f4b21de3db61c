"""Bundled sample models, each a module with a ``make_model()`` factory.

This catalog is read by the parent process, which never imports torch: it holds
only names, descriptions and input specs. The model modules themselves import
torch and are loaded by the agent, by file path.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class SampleModel:
    """One bundled model: where its factory lives and how to feed it."""

    name: str
    module: str
    summary: str
    inputs: tuple[str, ...]
    mode: str
    """The mode that tells this model's warm-up story best; ``--mode`` overrides it."""

    @property
    def path(self) -> Path:
        return HERE / f"{self.module}.py"

    @property
    def factory(self) -> str:
        return "make_model"


SAMPLES: dict[str, SampleModel] = {
    s.name: s
    for s in (
        SampleModel(
            "speech",
            "speech",
            "speech-like acoustic model of the libtorch warm-up thread: conv + GRU + linear",
            ("1x300x40",),
            "script",
        ),
        SampleModel(
            "cnn", "cnn", "small image CNN: conv-bn-relu blocks + pooling", ("1x3x64x64",), "script"
        ),
        SampleModel(
            "quantized_cnn",
            "quantized_cnn",
            "statically quantized CNN (int8): first passes set up the int8 conv kernels",
            ("1x3x64x64",),
            "script",
        ),
        SampleModel(
            "control_flow",
            "control_flow",
            "data-dependent loop and branch: needs script, trace bakes one path",
            ("1x16x32",),
            "script",
        ),
        SampleModel(
            "transformer",
            "transformer",
            "small transformer encoder block over token ids",
            ("int64[1,64]",),
            "script",
        ),
        SampleModel(
            "trivial", "trivial", "one add: measures warmscope's own overhead", ("1x16",), "script"
        ),
    )
}

DEFAULT_SAMPLE = "speech"
