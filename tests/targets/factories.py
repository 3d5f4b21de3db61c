"""Factories for the integration tests: small real models and deliberately bad targets."""

import torch


class Tiny(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


class TwoInputs(torch.nn.Module):
    """The AOTInductor package's model (tests/conftest.py builds it once per test run)."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(16, 8)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x)) + y


def tiny() -> torch.nn.Module:
    return Tiny()


def tiny_with_inputs():
    return Tiny(), (torch.randn(2, 8),)


def not_a_module():
    return 42


class RaisesAt(torch.nn.Module):
    """Raises in forward from iteration 3 on (a shape error, in torch's own words)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.linear = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls > 3:
            x = x[:, :3]
        return self.linear(x)


def raises_at_3() -> torch.nn.Module:
    return RaisesAt()


class EnvEcho(torch.nn.Module):
    """Prints a variable that the run's settings put in the child's environment."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import os

        print("WARMSCOPE_TEST_VALUE=" + os.environ.get("WARMSCOPE_TEST_VALUE", "<unset>"))
        return x


def env_echo() -> torch.nn.Module:
    return EnvEcho()


class Slow(torch.nn.Module):
    """Each forward pass sleeps: a model that will not finish within a short --timeout."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import time

        time.sleep(0.3)
        return x


def slow() -> torch.nn.Module:
    return Slow()


def read_cold(path: str) -> None:
    """Read the file at ``path`` from disk: its pages dropped from the page cache first."""
    import os

    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        while os.read(fd, 1 << 20):
            pass
    finally:
        os.close(fd)


class ColdRead(torch.nn.Module):
    """Its first call reads the file ``COLD_READ_FILE`` names from disk, as a fresh server's
    first call reads its libraries."""

    def __init__(self) -> None:
        super().__init__()
        self.done = False

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import os

        if not self.done:
            self.done = True
            read_cold(os.environ["COLD_READ_FILE"])
        return x + 1


def cold_read() -> torch.nn.Module:
    """``ColdRead``; where ``COLD_LOAD_FILE`` names a file, read from disk as it is made (in
    the load phase), as weights are."""
    import os

    if "COLD_LOAD_FILE" in os.environ:
        read_cold(os.environ["COLD_LOAD_FILE"])
    return ColdRead()


class Hog(torch.nn.Module):
    """Keeps 512 MB more each call and writes to it, until memory runs out."""

    def __init__(self) -> None:
        super().__init__()
        self.kept: list[torch.Tensor] = []

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.kept.append(torch.ones(64 << 20, dtype=torch.float64))
        return x + 1


def hog() -> torch.nn.Module:
    return Hog()


class CountsInputs(torch.nn.Module):
    """Adds one to its input in place and prints, at its 10th call, what the input held: 9
    where the same tensor came back every call, 0 where each call got a new copy of zeros."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.calls += 1
        if self.calls == 10:
            print(f"input held {int(x[0])} at call 10", flush=True)
        return x.add_(1)


def counts_inputs() -> torch.nn.Module:
    return CountsInputs()


class DictOutput(torch.nn.Module):
    """Returns a dict, as transformers models do: strict torch.jit.trace refuses it."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"logits": self.linear(x)}


def dict_output() -> torch.nn.Module:
    return DictOutput()


class KeywordsOnly(torch.nn.Module):
    """A forward that takes ``**kwargs`` and returns a dict, as Hugging Face models do:
    ``torch.jit.script`` refuses it before the first call."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor, **kwargs: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"y": self.linear(x)}


def keywords_only() -> torch.nn.Module:
    return KeywordsOnly()


class FirstCallPerCaller(torch.nn.Module):
    """Slow the first time it is called from each place (a cache kept per call site): a
    warm-up that calls it from elsewhere cannot take the served first call's cost away."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[int] = set()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import sys
        import time

        frame, depth = sys._getframe(1), 0
        while frame is not None:
            frame, depth = frame.f_back, depth + 1
        if depth not in self.seen:
            self.seen.add(depth)
            time.sleep(0.03)
        return x * 2


def first_call_per_caller() -> torch.nn.Module:
    return FirstCallPerCaller()


class AlwaysRaises(torch.nn.Module):
    """Every forward pass raises, as a model with a missing weight does."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        raise RuntimeError("the weights were never loaded")


def always_raises() -> torch.nn.Module:
    return AlwaysRaises()


class ReadsItsProcessBound(torch.nn.Module):
    """Prints the ``pids.max`` of the cgroups it is in: the bound the run put on its processes."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from pathlib import Path

        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for base in (
                Path("/sys/fs/cgroup/pids") if "pids" in controllers.split(",") else None,
                Path("/sys/fs/cgroup") if controllers == "" else None,
                Path("/sys/fs/cgroup/unified") if controllers == "" else None,
            ):
                bound = base / path.lstrip("/") / "pids.max" if base is not None else None
                if bound is not None and bound.exists():
                    print(f"PIDS_MAX={bound.read_text().strip()}", flush=True)
        return x


def reads_its_process_bound() -> torch.nn.Module:
    return ReadsItsProcessBound()


class ForksMany(torch.nn.Module):
    """Starts up to 200 sleeping helpers on its first call, and says how many it could."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        import subprocess

        started = 0
        for _ in range(200):
            try:
                subprocess.Popen(["sleep", "60"])
            except OSError:
                break
            started += 1
        print(f"STARTED={started}", flush=True)
        return x


def forks_many() -> torch.nn.Module:
    return ForksMany()
