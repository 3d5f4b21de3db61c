"""What ``--runtime cpp`` runs, and the one line that refuses the rest, naming what would run it.

The C++ agent (``core/child/cpp_agent.cpp``) runs what libtorch loads without Python: a
TorchScript archive (``torch::jit::load``) and an AOTInductor package
(``torch::inductor::AOTIModelPackageLoader``), with the knobs libtorch has. Whatever needs
Python (a factory, an exported program not yet compiled, torch.compile and its configuration,
a recipe in Python, modules to import) is refused before anything runs; so are modes a file
cannot take (``RunSettings`` refuses those whatever the runtime).
Pure: settings and a resolved target in, a sentence out.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from warmscope.core.base.safe_text import clean_line
from warmscope.core.child.knobs import KNOB_BY_NAME, KNOBS

if TYPE_CHECKING:
    from warmscope.core.data.targets import InputSpec, Target


class RefusalReads(Protocol):
    """What the refusal reads of a run's settings (``settings.RunSettings`` has it all; the
    settings call this module, so it names what it reads rather than importing them)."""

    knobs: dict[str, Any]
    torch_config: dict[str, str]
    recipe: str | None
    host: str | None
    profile_iters: str | None
    profile_in_run: bool
    imports: list[str]
    torch_logs: str | None

    def input_specs(self, target: Target) -> list[InputSpec]: ...


CPP = "cpp"
KINDS = ("archive", "aoti")
"""The targets the C++ runtime loads."""
SAVE = "torch.jit.save(torch.jit.script(model), 'model.pt')"
PACKAGE = "torch._inductor.aoti_compile_and_package(torch.export.export(model, args))"
PYTHON_ONLY_KNOBS = {k.name: k.recipe.cpp_refusal for k in KNOBS if k.recipe.cpp_refusal}
"""Knobs set from Python only, and what sets them."""


def is_cpp(settings: RefusalReads) -> bool:
    return settings.knobs.get("runtime") == CPP


def refusal(settings: RefusalReads, target: Target) -> str | None:
    """Why ``settings`` cannot run in the C++ runtime, in one line; ``None`` where they can."""
    spec = clean_line(target.spec)
    if target.kind not in KINDS:
        return f"--runtime cpp: {spec} {_needs_python(target.kind)}"
    if settings.torch_config:
        key = next(iter(settings.torch_config))
        return (
            f"--runtime cpp: --set {clean_line(key)}: torch._dynamo/torch._inductor "
            "configuration is Python's; set it where the package is compiled"
        )
    for name, owner in PYTHON_ONLY_KNOBS.items():
        if settings.knobs.get(name, KNOB_BY_NAME[name].default) != KNOB_BY_NAME[name].default:
            return f"--runtime cpp: {name} is {owner}'s, set from Python only"
    if settings.recipe is not None and not settings.recipe.endswith(".cpp"):
        return (
            "--runtime cpp: --recipe takes a C++ recipe (FILE.cpp: `warmscope warmup --runtime "
            "cpp --emit-cpp FILE.cpp` writes and verifies one); a Python one runs in Python"
        )
    if settings.recipe is not None and settings.host is not None:
        return "--runtime cpp: a C++ recipe over --host is not built there yet; run it locally"
    if settings.recipe is not None and target.kind != "archive":
        return f"--runtime cpp: a C++ recipe prepares a TorchScript module; {spec} is not one"
    if settings.recipe is not None and settings.profile_iters:
        return (
            "--runtime cpp: --profile-iters with a C++ recipe: the profile is taken by a "
            "Python process, which cannot run it; profile without --recipe"
        )
    if settings.imports:
        return "--runtime cpp: --import imports Python modules; the C++ agent has no Python"
    if settings.torch_logs:
        return "--runtime cpp: --torch-logs is torch's Python logging (TORCH_LOGS); use --jit-log"
    if settings.profile_iters and settings.profile_in_run:
        return (
            "--runtime cpp: --profile-in-run: the C++ agent has no profiler; without "
            "--profile-in-run a Python process running the same file takes the profile"
        )
    if target.kind == "aoti" and any(spec.name for spec in settings.input_specs(target)):
        return (
            "--runtime cpp: an AOTInductor package takes its inputs flattened in C++: give "
            "them positionally, in the order of the exported call (no NAME=)"
        )
    return None


def _needs_python(kind: str) -> str:
    if kind == "export":
        return (
            "is an exported program, which runs in Python; compile it into an AOTInductor "
            "package for C++: torch._inductor.aoti_compile_and_package(program)"
        )
    if kind == "pickle":
        return (
            "is a pickled module, which needs Python to load; save it for C++ with "
            f"{SAVE}, or package it with {PACKAGE}"
        )
    what = "a sample model's factory" if kind == "sample" else "a Python factory"
    return (
        f"is {what}, which needs Python; the C++ runtime runs TorchScript archives and "
        f"AOTInductor packages: save it with {SAVE}, or package it with {PACKAGE}"
    )
