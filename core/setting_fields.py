"""The run settings, declared once: each ``RunSettings`` field with its options, its type, how
a command line writes it, whether a comparison names it and whether a file may choose it.

The run-like commands' options (``cli.add_run_options``), reading them back
(``cli.build_settings``), the reproduce line (``RunSettings.command_line``), reading settings
from a record (``RunSettings.from_json``), the settings diff (``digest.settings_diff``) and
the trust check (``RunSettings.untrusted``) all walk ``FIELDS``: a new run setting is one
entry here and its field on ``RunSettings``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from warmscope.core.compile_cache import MODES as COMPILE_CACHE_MODES
from warmscope.core.knobs import KNOBS, show_value
from warmscope.core.outcome import UsageError
from warmscope.core.safe_text import clean_line

if TYPE_CHECKING:
    from warmscope.core.settings import RunSettings

DEFAULT_ITERS = 200
DEFAULT_SAMPLE_HZ = 10.0
SCHEDULES = ("cycle", "random", "ramp", "once")
"""How ``--dim`` shapes follow each other: in turn, at random (``--seed``), in blocks in the
order given, or each once (the run then ends)."""
MODES = ("eager", "script", "trace", "compile")

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
            "TorchScript with torch's defaults (profiling executor on)",
            {"mode": "script"},
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
    notes: tuple[str, ...] = field(default=(), compare=False)


def _text(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def default_of(name: str) -> Any:
    from warmscope.core.settings import RunSettings

    return getattr(RunSettings(), name)


def read(s: Setting, args: argparse.Namespace, settings: RunSettings) -> None:
    if s.read is not None:
        s.read(args, settings)
        return
    value = getattr(args, s.options[0].dest)
    setattr(settings, s.name, list(value) if isinstance(value, list) else value)


def argv(s: Setting, settings: RunSettings) -> list[str]:
    if s.argv is not None:
        return s.argv(settings)
    if not s.options:
        return []
    flag, value = s.options[0].flags[0], getattr(settings, s.name)
    if value == default_of(s.name):
        return []
    if s.kind == "bool":
        return [flag]
    if s.kind == "strs":
        return [part for item in value for part in (flag, item)]
    if s.kind == "floats":
        return [flag, ",".join(f"{g:g}" for g in value)]
    return [flag, _text(value)]


def shown(s: Setting, settings: RunSettings) -> dict[str, Any]:
    if s.shown is not None:
        return s.shown(settings)
    value = getattr(settings, s.name)
    return {} if value == default_of(s.name) else {s.name: value}


# Knobs: a preset, then --mode and --device, then every --set (the env entry reads them).


def _read_knobs(args: argparse.Namespace, settings: RunSettings) -> None:
    if args.preset:
        settings.apply_preset(args.preset)
    if args.mode:
        settings.knobs["mode"] = args.mode
    if args.device:
        settings.set(f"device={args.device}")


def _knob_base(settings: RunSettings) -> dict[str, Any]:
    base = {k.name: k.default for k in KNOBS}
    if settings.preset in PRESETS:
        base.update(PRESETS[settings.preset].knobs)
    return base


def _knobs_argv(settings: RunSettings) -> list[str]:
    base, out = _knob_base(settings), []
    for k in KNOBS:
        value = settings.knobs.get(k.name, k.default)
        if value != base.get(k.name):
            out += ["--set", f"{k.name}={k.show(value)}"]
    return out


def _knobs_shown(settings: RunSettings) -> dict[str, Any]:
    return {
        k.name: settings.knobs[k.name]
        for k in KNOBS
        if settings.knobs.get(k.name, k.default) != k.default
    }


def _read_assignments(args: argparse.Namespace, settings: RunSettings) -> None:
    for assignment in args.assignments:
        settings.set(assignment)


def _map_argv(name: str, prefix: str) -> Writer:
    def write(settings: RunSettings) -> list[str]:
        items: dict[str, str] = getattr(settings, name)
        return [part for k, v in items.items() for part in ("--set", f"{prefix}{k}={v}")]

    return write


def _map_shown(name: str, prefix: str) -> Shown:
    def show(settings: RunSettings) -> dict[str, Any]:
        items: dict[str, str] = getattr(settings, name)
        return {f"{prefix}{k}": v for k, v in items.items()}

    return show


def _read_idle_probe(args: argparse.Namespace, settings: RunSettings) -> None:
    if args.idle_probe is not None:
        settings.idle_probe = parse_seconds_list(args.idle_probe, "--idle-probe")


def _iters_argv(settings: RunSettings) -> list[str]:
    # A line that runs for a duration names --iters only where it is not the default.
    if settings.duration and settings.iters == DEFAULT_ITERS:
        return []
    return ["--iters", str(settings.iters)]


def _preset_argv(settings: RunSettings) -> list[str]:
    return ["--preset", settings.preset] if settings.preset in PRESETS else []


def _no_argv(settings: RunSettings) -> list[str]:
    return []


def _nothing(args: argparse.Namespace, settings: RunSettings) -> None:
    """Applied with another entry (the preset with the knobs)."""


FIELDS: tuple[Setting, ...] = (
    Setting(
        "target",
        "str",
        read=lambda args, settings: setattr(settings, "target", args.target),
        argv=_no_argv,  # the positional TARGET, written first by command_line
    ),
    Setting(
        "inputs",
        "strs",
        (
            Option(
                ("--input",),
                dict(
                    action="append",
                    default=[],
                    metavar="[NAME=]SPEC[:GEN]",
                    help="one per forward argument: 1x300x40 (float32), int64[1,128], "
                    "bfloat16[2,3]; NAME= makes it a keyword argument; a dimension may be a name "
                    "given sizes by --dim (1xTx40); GEN: zeros, ones, fill(v), randint(lo,hi), "
                    "normal, uniform(lo,hi) (default: integers zeros, floats normal)",
                ),
            ),
        ),
    ),
    Setting(
        "inputs_file",
        "str?",
        (
            Option(
                ("--inputs",),
                dict(
                    metavar="FILE.pt",
                    dest="inputs_file",
                    help="the inputs from a file, torch.load(weights_only=True): a tensor, a "
                    "tuple/list (positional) or a dict (keyword arguments)",
                ),
            ),
        ),
    ),
    Setting(
        "dims",
        "strs",
        (
            Option(
                ("--dim",),
                dict(
                    action="append",
                    default=[],
                    metavar="NAME=SIZES",
                    help="sizes of a symbolic dimension of --input: T=200,300,400 or "
                    "L=32..512:32; several names combine (every combination)",
                ),
            ),
        ),
    ),
    Setting(
        "schedule",
        "str",
        (
            Option(
                ("--schedule",),
                dict(
                    choices=SCHEDULES,
                    default="cycle",
                    help="how the --dim shapes follow each other: cycle (in turn, default), "
                    "random (--seed), ramp (blocks in the order given), once (each once, then "
                    "the run ends)",
                ),
            ),
        ),
    ),
    Setting(
        "seed",
        "int",
        (
            Option(
                ("--seed",),
                dict(
                    type=int,
                    default=0,
                    metavar="N",
                    help="seed of the input values and of --schedule random (default 0)",
                ),
            ),
        ),
    ),
    Setting(
        "gap",
        "float?",
        (
            Option(
                ("--gap",),
                dict(
                    type=float, metavar="S", help="sleep S seconds before every iteration (untimed)"
                ),
            ),
        ),
    ),
    Setting(
        "idle_probe",
        "floats",
        (
            Option(
                ("--idle-probe",),
                dict(
                    metavar="S1,S2",
                    help="once the run is done: for each gap, sleep that long then time one "
                    "call, three times (slow after idle?), against the steady p50",
                ),
            ),
        ),
        read=_read_idle_probe,
    ),
    Setting(
        "knobs",
        "knobs",
        (
            Option(
                ("--mode",),
                dict(
                    choices=MODES,
                    help="run as is, torch.jit.script, torch.jit.trace or torch.compile",
                ),
            ),
            Option(("--device",), dict(metavar="DEV", help="cpu (default), cuda or cuda:N")),
        ),
        read=_read_knobs,
        argv=_knobs_argv,
        shown=_knobs_shown,
    ),
    Setting(
        "preset",
        "str?",
        (
            Option(
                ("--preset",),
                dict(choices=tuple(PRESETS), help="a named set of knobs (see `warmscope knobs`)"),
                only="single",
            ),
            Option(
                ("--preset",),
                dict(
                    metavar="A,B",
                    help=f"presets to compare, comma-separated: {', '.join(PRESETS)}",
                ),
                only="sweep",
            ),
        ),
        read=_nothing,
        argv=_preset_argv,
        absent="none",
    ),
    Setting(
        "env",
        "strmap",
        (
            Option(
                ("--set",),
                dict(
                    action="append",
                    default=[],
                    metavar="KEY=VALUE",
                    dest="assignments",
                    help="set a knob (see `warmscope knobs`); env.NAME=VALUE sets a child "
                    "variable; dynamo.NAME=VALUE / inductor.NAME=VALUE set torch._dynamo / "
                    "torch._inductor config",
                ),
            ),
        ),
        read=_read_assignments,  # every --set: knobs, env.* and dynamo.*/inductor.*
        argv=_map_argv("env", "env."),
        shown=_map_shown("env", "env."),
        absent="unset",
        trusted=False,
    ),
    Setting(
        "torch_config",
        "strmap",
        read=_nothing,  # by --set dynamo.NAME=VALUE (the env entry reads every --set)
        argv=_map_argv("torch_config", ""),
        shown=_map_shown("torch_config", ""),
        trusted=False,  # some options name programs (inductor.cpp.cxx)
    ),
    Setting(
        "iters",
        "int",
        (
            Option(
                ("--iters",),
                dict(
                    type=int,
                    default=DEFAULT_ITERS,
                    metavar="N",
                    help=f"forward passes to run (default {DEFAULT_ITERS})",
                ),
            ),
        ),
        argv=_iters_argv,
    ),
    Setting(
        "duration",
        "float?",
        (
            Option(
                ("--duration",),
                dict(type=float, metavar="S", help="run for S seconds instead of --iters"),
            ),
        ),
    ),
    Setting(
        "timeout",
        "float?",
        (
            Option(
                ("--timeout",),
                dict(type=float, metavar="S", help="stop the run after S seconds (status timeout)"),
            ),
        ),
    ),
    Setting(
        "python",
        "str?",
        (
            Option(
                ("--python",),
                dict(metavar="PATH", help="interpreter for the child (one that has torch)"),
            ),
        ),
        trusted=False,
    ),
    Setting(
        "compile_cache",
        "str?",
        (
            Option(
                ("--compile-cache",),
                dict(
                    choices=COMPILE_CACHE_MODES,
                    help="compile runs: cold (a fresh empty inductor/triton cache per process), "
                    "warm (filled by an unrecorded first process), user (your own cache; the "
                    "default for one run)",
                ),
            ),
        ),
    ),
    Setting(
        "trust_pickle",
        "bool",
        (
            Option(
                ("--trust-pickle",),
                dict(
                    action="store_true",
                    help="allow torch.load of a pickled (non-TorchScript) module: runs code "
                    "from the file",
                ),
            ),
        ),
        compared=False,
        trusted=False,
    ),
    Setting(
        "jit_log",
        "str?",
        (
            Option(
                ("--jit-log",),
                dict(
                    metavar="SPEC",
                    help="PYTORCH_JIT_LOG_LEVEL for the child; default for script/trace: "
                    "profiling_graph_executor_impl (the profiling executor's graph dumps); '' "
                    "for none",
                ),
            ),
        ),
        group=CAPTURE,
    ),
    Setting(
        "torch_logs",
        "str?",
        (Option(("--torch-logs",), dict(metavar="SPEC", help="TORCH_LOGS for the child")),),
        group=CAPTURE,
    ),
    Setting(
        "profile_iters",
        "str?",
        (
            Option(
                ("--profile-iters",),
                dict(
                    metavar="LIST",
                    help="run these iterations under torch.profiler: 0,1,2,50, ranges 0-3, and "
                    "steady (one more pass once settled); left out of the latency statistics",
                ),
            ),
        ),
        group=CAPTURE,
        absent="none",
    ),
    Setting(
        "profile_in_run",
        "bool",
        (
            Option(
                ("--profile-in-run",),
                dict(
                    action="store_true",
                    help="profile inside the measured process (by default a separate process "
                    "runs first for the profile, so the profiler never touches the measured "
                    "latencies)",
                ),
            ),
        ),
        group=CAPTURE,
    ),
    Setting(
        "profiled_in_stats",
        "bool",
        (
            Option(
                ("--profiled-in-stats",),
                dict(
                    action="store_true",
                    help="count profiled iterations in the latency statistics (left out by "
                    "default: the profiler slows them)",
                ),
            ),
        ),
        group=CAPTURE,
    ),
    Setting("sample_hz", "float", read=_nothing, argv=_no_argv, compared=False),
)
"""Every ``RunSettings`` field, its options in the order ``--help`` lists them."""

BY_NAME = {s.name: s for s in FIELDS}


def shown_value(value: Any) -> str:
    """A setting's value in a comparison: knobs as ``warmscope knobs`` writes them, lists
    comma-separated."""
    if isinstance(value, list):
        return ",".join(_text(v) for v in value)
    return _text(value) if isinstance(value, float) else show_value(value)
