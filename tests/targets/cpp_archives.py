"""TorchScript archives for the C++ runtime's tests, saved by a real torch in a child process
(``python -m tests.targets.cpp_archives FOLDER``): the test process itself imports no torch."""

import sys
from pathlib import Path

import torch

PRINT_AT = 5
"""``printer`` prints in this call only (TorchScript's print, through libtorch's handler)."""


class Printer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.calls == 5:  # PRINT_AT
            print("scripted print in call", self.calls)
        self.calls += 1
        return torch.relu(x) * 2


class Keywords(torch.nn.Module):
    """A forward with a keyword argument: C++ passes it by name, as Python does."""

    def forward(self, x: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
        return x * scale


class Echo(torch.nn.Module):
    """Prints what its inputs sum to in its first call: the values each runtime built."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
        if self.calls == 0:
            print("sums", float(x.sum()), float(y.sum()), float(z.sum()))
        self.calls += 1
        return x * 2


class Heavy(torch.nn.Module):
    """8 MiB of weights: an archive whose load reads megabytes (from disk, where its pages were
    dropped from the page cache)."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(1024, 2048)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


def save(folder: Path) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "sample_models"))
    import speech

    folder.mkdir(parents=True, exist_ok=True)
    torch.jit.save(torch.jit.script(speech.make_model().eval()), str(folder / "speech.pt"))
    torch.jit.save(torch.jit.script(Printer()), str(folder / "printer.pt"))
    torch.jit.save(torch.jit.script(Keywords()), str(folder / "keywords.pt"))
    torch.jit.save(torch.jit.script(Echo()), str(folder / "echo.pt"))
    torch.jit.save(torch.jit.script(Heavy()), str(folder / "heavy.pt"))
    torch.save(torch.randn(1, 300, 40), folder / "one.pt")
    torch.save((torch.randn(2, 8),), folder / "tuple.pt")
    torch.save({"x": torch.randn(2, 8), "scale": torch.full((2, 8), 3.0)}, folder / "dict.pt")


if __name__ == "__main__":
    save(Path(sys.argv[1]))
