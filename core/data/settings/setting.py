"""How a run setting is declared: a ``Setting`` (its options, the kind of its value, how the
reproduce line writes it, whether a comparison names it, whether a file may choose it), and
what walks the declarations: reading parsed options, writing argv, showing a difference.

``run_fields.RunFields`` declares every run setting with these; the run-like commands' options
(``cli.add_run_options``), ``cli.build_settings``, ``RunSettings.command_line``,
``RunSettings.from_json``, ``digest.settings_diff`` and ``RunSettings.untrusted`` all walk
``run_fields.FIELDS``. The constants and presets the declarations name live here too.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from warmscope.core.base.safe_text import clean_line
from warmscope.core.base.sizes import parse_size
from warmscope.core.child.knobs import show_value
from warmscope.core.child.outcome import UsageError

if TYPE_CHECKING:
    from warmscope.core.data.settings import RunSettings

DEFAULT_ITERS = 200
DEFAULT_REPEAT = 5
"""Fresh processes per setting of a sweep."""
DEFAULT_SAMPLE_HZ = 10.0
SCHEDULES = ("cycle", "random", "ramp", "once")
"""How ``--dim`` shapes follow each other: in turn, at random (``--seed``), in blocks in the
order given, or each once (the run then ends)."""
MODES = ("eager", "script", "trace", "compile")
COMPILE_CACHE_MODES = ("cold", "warm", "user")
"""``--compile-cache``: ``cold``, an empty folder for each process; ``warm``, one filled by an
unrecorded first process; ``user``, the user's own cache, as torch finds it
(``compile_cache`` holds the policy)."""

RUN = "what to run"
CAPTURE = "what to capture"
"""The help groups a setting's options are listed under."""


class SettingsError(UsageError):
    """Settings that cannot run: bad usage, exit code 2. The message names what is wrong."""


@dataclass(frozen=True)
class Preset:
    name: str
    help: str
    knobs: dict[str, Any]


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset(
            "torchscript",
            "TorchScript, profiling executor on (torch's default)",
            {"mode": "script", "profiling_executor": None},
        ),
        Preset(
            "no-profiling",
            "TorchScript, profiling executor off: no profiling run, no specialization",
            {"mode": "script", "profiling_executor": False},
        ),
        Preset(
            "no-optimizer",
            "TorchScript, graph optimizer off: the graph runs as scripted",
            {"mode": "script", "graph_optimizer": False},
        ),
        Preset(
            "frozen",
            "TorchScript, frozen and optimized for inference",
            {"mode": "script", "freeze": True, "optimize_for_inference": True},
        ),
        Preset("eager", "plain eager PyTorch", {"mode": "eager"}),
        Preset("compile", "torch.compile with its defaults (inductor)", {"mode": "compile"}),
        # GPU: what changes a CUDA run's first calls.
        Preset(
            "cudnn-autotune",
            "GPU: cuDNN autotuning on (each new shape's first call benchmarks its convolutions)",
            {"cudnn_benchmark": True},
        ),
        Preset(
            "no-cudnn-autotune",
            "GPU: cuDNN autotuning off (cuDNN's heuristics choose; no benchmark per shape)",
            {"cudnn_benchmark": False},
        ),
        Preset(
            "lazy-loading",
            "GPU: CUDA_MODULE_LOADING=LAZY (kernels load at their first launch)",
            {"cuda_module_loading": "LAZY"},
        ),
        Preset(
            "eager-loading",
            "GPU: CUDA_MODULE_LOADING=EAGER (every kernel loads when CUDA starts)",
            {"cuda_module_loading": "EAGER"},
        ),
        Preset(
            "tf32",
            "GPU: TF32 for float32 matmuls (torch.set_float32_matmul_precision('high'))",
            {"matmul_precision": "high"},
        ),
        Preset(
            "reduce-overhead",
            "GPU: torch.compile mode=reduce-overhead (CUDA graphs: warm-up, record, replay)",
            {"mode": "compile", "compile_mode": "reduce-overhead"},
        ),
    )
}


def parse_seconds_list(text: str, flag: str) -> list[float]:
    """``--idle-probe 1,5,30`` -> ``[1.0, 5.0, 30.0]``; ``SettingsError`` names a bad item."""
    out = []
    for item in (p.strip() for p in text.split(",")):
        try:
            out.append(float(item))
        except ValueError:
            raise SettingsError(f"bad {flag} item {clean_line(item)!r}: expected seconds") from None
    return out


# -- what a record's value must be -----------------------------------------------------------


def memory_size(text: str) -> str:
    """``--memory-limit``'s value checked (``512M``, ``3G``), kept as written."""
    try:
        parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return text.strip()


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


KINDS: dict[str, Callable[[Any], bool]] = {
    "str": lambda v: isinstance(v, str),
    "str?": lambda v: v is None or isinstance(v, str),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": _is_number,
    "float?": lambda v: v is None or _is_number(v),
    "bool": lambda v: isinstance(v, bool),
    "strs": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "floats": lambda v: isinstance(v, list) and all(_is_number(x) for x in v),
    "strmap": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
    "knobs": lambda v: isinstance(v, dict),
}
"""A setting read from a file with a value not of its kind runs with its default."""


# -- the table -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Option:
    """One command-line option: its flags and ``argparse``'s keywords for it."""

    flags: tuple[str, ...]
    spec: dict[str, Any]
    only: str | None = None
    """``"sweep"``: only ``warmscope sweep`` has it; ``"single"``: every other run command."""

    @property
    def dest(self) -> str:
        return str(self.spec.get("dest") or self.flags[0].lstrip("-").replace("-", "_"))

    def applies(self, sweep: bool) -> bool:
        return self.only is None or self.only == ("sweep" if sweep else "single")


Reader = Callable[[argparse.Namespace, "RunSettings"], None]
Writer = Callable[["RunSettings"], list[str]]
Shown = Callable[["RunSettings"], dict[str, Any]]
Consent = Callable[["RunSettings"], list[str]]


@dataclass(frozen=True)
class Setting:
    """One ``RunSettings`` field."""

    name: str
    kind: str
    """What its value is (a key of ``KINDS``): a record's value of another kind is not used."""
    options: tuple[Option, ...] = ()
    """The options that set it; none where another entry's option does (``--set``)."""
    group: str = RUN
    read: Reader | None = None
    """From parsed options; by default the field is its one option's value."""
    argv: Writer | None = None
    """Its part of the reproduce line; by default its option with its value, unless default."""
    compared: bool = True
    """Whether a comparison of two runs names it when it differs."""
    shown: Shown | None = None
    """For a comparison: ``{name: value}`` of what is not left at its default; by default the
    field itself under its own name."""
    absent: str = "default"
    """How a comparison writes the side left at its default."""
    trusted: bool = True
    """``False``: it runs code or chooses what runs; from a file, only once the user confirms."""
    consent: Consent | None = None
    """An untrusted setting's value as the user is asked to confirm it: one line per item, the
    option as written and what it would do (``--recipe r.py: runs its prepare(model)``)."""
    make_default: Callable[[], Any] = lambda: None
    """A new default value (a list or a map of its own); set from the field's default."""

    def default(self) -> Any:
        return self.make_default()


SETTING = "setting"
"""The metadata key of a ``RunFields`` field's ``Setting``."""


def setting(kind: str, options: tuple[Option, ...] = (), **how: Any) -> dict[str, Setting]:
    """A ``RunFields`` field's metadata: how it is set, written, compared and trusted."""
    return {SETTING: Setting("", kind, options, **how)}


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def read(s: Setting, args: argparse.Namespace, settings: RunSettings) -> None:
    if s.read is not None:
        s.read(args, settings)
        return
    if not hasattr(args, s.options[0].dest):
        return  # an option this command does not offer (`only`): the field keeps its default
    value = getattr(args, s.options[0].dest)
    setattr(settings, s.name, list(value) if isinstance(value, list) else value)


def argv(s: Setting, settings: RunSettings) -> list[str]:
    if s.argv is not None:
        return s.argv(settings)
    if not s.options:
        return []
    flag, value = s.options[0].flags[0], getattr(settings, s.name)
    if value == s.default():
        return []
    if s.kind == "bool":
        return [flag]
    if s.kind == "strs":
        return [part for item in value for part in (flag, item)]
    if s.kind == "floats":
        return [flag, ",".join(f"{g:g}" for g in value)]
    return [flag, _text(value)]


def consent(s: Setting, settings: RunSettings) -> list[str]:
    """What the user confirms of an untrusted setting: its declared lines, else the option as
    the reproduce line writes it. Each line made safe to show."""
    lines = s.consent(settings) if s.consent is not None else [" ".join(argv(s, settings))]
    return [clean_line(line) for line in lines]


def shown(s: Setting, settings: RunSettings) -> dict[str, Any]:
    if s.shown is not None:
        return s.shown(settings)
    value = getattr(settings, s.name)
    return {} if value == s.default() else {s.name: value}


def shown_value(value: Any) -> str:
    """A setting's value in a comparison: knobs as ``warmscope knobs`` writes them, lists
    comma-separated."""
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    return _text(value) if isinstance(value, float) else show_value(value)
