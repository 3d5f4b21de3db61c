"""The run settings, declared once: ``RunFields``, each field with its ``Setting``.

A field's declaration is the whole of a run setting: its type and default, its options and
help, how the reproduce line writes it, whether a comparison names it and whether a file may
choose it. ``settings.RunSettings`` is these fields with what is done with them; the
command line, the diff and the trust check walk ``FIELDS`` (see ``setting_fields``).
"""

from __future__ import annotations

import argparse
from dataclasses import MISSING, Field, dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any

from warmscope.core.child.knobs import KNOBS, RUNTIMES, default_values
from warmscope.core.data.settings.setting import (
    CAPTURE,
    COMPILE_CACHE_MODES,
    DEFAULT_ITERS,
    DEFAULT_SAMPLE_HZ,
    MODES,
    PRESETS,
    SCHEDULES,
    SETTING,
    Option,
    Setting,
    Shown,
    Writer,
    memory_size,
    parse_seconds_list,
    setting,
)

if TYPE_CHECKING:
    from warmscope.core.data.settings import RunSettings


# Knobs: a preset, then --mode and --device, then every --set (the env entry reads them).


MAX_PROCS = 4096
"""The most processes and threads a run may hold at once by default: no real model comes near
it (a compile's workers, a data loader's), and a fork bomb stops there, not at the machine's
end."""
MIN_PROCS = 16


def _read_knobs(args: argparse.Namespace, settings: RunSettings) -> None:
    if args.preset:
        settings.apply_preset(args.preset)
    if args.mode:
        settings.knobs["mode"] = args.mode
    if args.device:
        settings.set(f"device={args.device}")
    if getattr(args, "runtime", None):
        settings.set(f"runtime={args.runtime}")


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


# What each untrusted setting would do, as the user confirms it (``Setting.consent``).


def _imports_consent(settings: RunSettings) -> list[str]:
    return [
        f"--import {name}: imports it in the child, running its code" for name in settings.imports
    ]


def _env_consent(settings: RunSettings) -> list[str]:
    return [
        f"--set env.{name}={value}: environment {name}={value} for the child"
        for name, value in settings.env.items()
    ]


def _torch_config_consent(settings: RunSettings) -> list[str]:
    return [
        f"--set {name}={value}: torch config the child sets (some options name programs it runs)"
        for name, value in settings.torch_config.items()
    ]


def _recipe_consent(settings: RunSettings) -> list[str]:
    return [f"--recipe {settings.recipe}: runs {settings.recipe} (its prepare(model)) in the child"]


def _python_consent(settings: RunSettings) -> list[str]:
    return [f"--python {settings.python}: interpreter {settings.python} runs the child"]


def _host_consent(settings: RunSettings) -> list[str]:
    # The local files the run names travel with it: the user sees what leaves this machine.
    sent = [
        f"{flag} {value}"
        for flag, value in (("--recipe", settings.recipe), ("--inputs", settings.inputs_file))
        if value
    ]
    line = f"--host {settings.host}: runs the child on {settings.host} over ssh"
    if sent:
        line += f", and sends {' and '.join(sent)} to host {settings.host}"
    return [line]


def _trust_pickle_consent(settings: RunSettings) -> list[str]:
    return [f"--trust-pickle: trust pickle: loads code from the file {settings.target}"]


def _trust_native_consent(settings: RunSettings) -> list[str]:
    return [f"--trust-native: runs the compiled native code the package {settings.target} holds"]


# Every run setting, declared once: its field (type and default) carries its ``Setting``
# (options, kind, reproduce-line form, compared, trusted), in five groups. ``RunFields`` puts
# them together in the order ``--help`` lists their options; ``RunSettings`` adds what is done
# with them.


@dataclass
class WhatRuns:
    """The target, its inputs and the order of its shapes."""

    target: str = field(
        default="",
        metadata=setting(
            "str",
            read=lambda args, settings: setattr(settings, "target", args.target),
            argv=_no_argv,  # the positional TARGET, written first by command_line
        ),
    )

    inputs: list[str] = field(
        default_factory=list,
        metadata=setting(
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
                        "normal, uniform(lo,hi) (default: integers zeros, floats normal); quote a "
                        "SPEC with brackets or parentheses for the shell: "
                        "--input 'int64[1,128]:randint(0,1000)'",
                    ),
                ),
            ),
        ),
    )
    """``--input [NAME=]SPEC[:GEN]``: positional arguments, and keyword ones with ``NAME=``."""

    inputs_file: str | None = field(
        default=None,
        metadata=setting(
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
    )
    """``--inputs FILE.pt``: a tensor, tuple/list (positional) or dict (keywords)."""

    imports: list[str] = field(
        default_factory=list,
        metadata=setting(
            "strs",
            (
                Option(
                    ("--import",),
                    dict(
                        action="append",
                        default=[],
                        metavar="MODULE",
                        dest="imports",
                        help="import MODULE in the child before the target loads (repeatable): "
                        "its pytree registrations, custom ops or classes an exported program needs",
                    ),
                ),
            ),
            trusted=False,  # importing a module runs its code
            consent=_imports_consent,
        ),
    )
    """``--import MODULE``: modules the child imports before it loads the target."""

    dims: list[str] = field(
        default_factory=list,
        metadata=setting(
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
    )
    """``--dim NAME=V1,V2|A..B:STEP``: the sizes of a symbolic dimension of the inputs."""

    schedule: str = field(
        default="cycle",
        metadata=setting(
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
    )

    seed: int = field(
        default=0,
        metadata=setting(
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
    )
    """Seeds the input values and the ``random`` schedule."""

    gap: float | None = field(
        default=None,
        metadata=setting(
            "float?",
            (
                Option(
                    ("--gap",),
                    dict(
                        type=float,
                        metavar="S",
                        help="sleep S seconds before every iteration (untimed)",
                    ),
                ),
            ),
        ),
    )
    """Seconds to sleep before every iteration (not timed)."""

    idle_probe: list[float] = field(
        default_factory=list,
        metadata=setting(
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
    )
    """After the run: for each, sleep that long then time one call, three times."""


@dataclass
class HowItRuns:
    """The executor knobs, the preset, the child's environment and torch's config."""

    knobs: dict[str, Any] = field(
        default_factory=default_values,
        metadata=setting(
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
                Option(
                    ("--runtime",),
                    dict(
                        choices=RUNTIMES,
                        help="python (default), or cpp: run a TorchScript archive (.pt) or an "
                        "AOTInductor package (.pt2) in a C++ libtorch program, built once per "
                        "torch build against the torch of --python and cached (needs a C++ "
                        "compiler); what needs Python (factories, torch.compile, Python recipes) "
                        "is refused in one line",
                    ),
                ),
            ),
            read=_read_knobs,
            argv=_knobs_argv,
            shown=_knobs_shown,
        ),
    )
    """Every knob (``--set``, ``--mode``, ``--device``, a preset's); ``None``: torch's own default."""

    preset: str | None = field(
        default=None,
        metadata=setting(
            "str?",
            (
                Option(
                    ("--preset",),
                    dict(
                        choices=tuple(PRESETS), help="a named set of knobs (see `warmscope knobs`)"
                    ),
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
    )

    env: dict[str, str] = field(
        default_factory=dict,
        metadata=setting(
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
            consent=_env_consent,
        ),
    )

    torch_config: dict[str, str] = field(
        default_factory=dict,
        metadata=setting(
            "strmap",
            read=_nothing,  # by --set dynamo.NAME=VALUE (the env entry reads every --set)
            argv=_map_argv("torch_config", ""),
            shown=_map_shown("torch_config", ""),
            trusted=False,  # some options name programs (inductor.cpp.cxx)
            consent=_torch_config_consent,
        ),
    )
    """``--set dynamo.NAME=VALUE`` / ``inductor.NAME=VALUE``, as typed."""


@dataclass
class HowLong:
    """How long the run goes on."""

    iters: int = field(
        default=DEFAULT_ITERS,
        metadata=setting(
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
    )

    duration: float | None = field(
        default=None,
        metadata=setting(
            "float?",
            (
                Option(
                    ("--duration",),
                    dict(type=float, metavar="S", help="run for S seconds instead of --iters"),
                ),
            ),
        ),
    )

    timeout: float | None = field(
        default=None,
        metadata=setting(
            "float?",
            (
                Option(
                    ("--timeout",),
                    dict(
                        type=float,
                        metavar="S",
                        help="stop the run after S seconds (status timeout)",
                    ),
                ),
            ),
        ),
    )


@dataclass
class WhereAndWhat:
    """What runs around the model and where: a recipe, the memory cap, the interpreter, the
    host, the compile cache, and the trust a file's code needs."""

    recipe: str | None = field(
        default=None,
        metadata=setting(
            "str?",
            (
                Option(
                    ("--recipe",),
                    dict(
                        metavar="FILE.py",
                        help="run a warm-up recipe's prepare(model) after loading, timed as a "
                        "setup phase (see `warmscope warmup`); runs code from the file; with "
                        "--runtime cpp a C++ recipe (FILE.cpp, `warmup --emit-cpp`), built once",
                    ),
                ),
            ),
            trusted=False,
            consent=_recipe_consent,
        ),
    )

    memory_limit: str | None = field(
        default=None,
        metadata=setting(
            "str?",
            (
                Option(
                    ("--memory-limit",),
                    dict(
                        type=memory_size,
                        metavar="SIZE",
                        help="cap the run's memory (512M, 3G): its cgroup's memory.max where the "
                        "memory controller is delegated, else the child's address space "
                        "(RLIMIT_AS); a run that hits it ends failed, naming memory",
                    ),
                ),
            ),
        ),
    )

    max_procs: int = field(
        default=MAX_PROCS,
        metadata=setting(
            "int",
            (
                Option(
                    ("--max-procs",),
                    dict(
                        type=int,
                        default=MAX_PROCS,
                        metavar="N",
                        help=f"the most processes and threads the run may hold at once (default "
                        f"{MAX_PROCS}: a fork bomb in a model stops there): its cgroup's pids.max, "
                        "else RLIMIT_NPROC where not root; the record says which held",
                    ),
                ),
            ),
        ),
    )

    python: str | None = field(
        default=None,
        metadata=setting(
            "str?",
            (
                Option(
                    ("--python",),
                    dict(metavar="PATH", help="interpreter for the child (one that has torch)"),
                ),
            ),
            trusted=False,
            consent=_python_consent,
        ),
    )

    host: str | None = field(
        default=None,
        metadata=setting(
            "str?",
            (
                Option(
                    ("--host",),
                    dict(
                        metavar="DEST",
                        help="run the child on DEST over ssh (as `ssh DEST` reaches it; more ssh "
                        "options in WARMSCOPE_SSH_OPTIONS); --python names the interpreter there",
                    ),
                ),
            ),
            trusted=False,
            consent=_host_consent,
        ),
    )

    compile_cache: str | None = field(
        default=None,
        metadata=setting(
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
    )
    """``cold``, ``warm`` or ``user`` (see ``compile_cache``); ``None``: ``user`` for one run.
    Only compile runs have one."""

    trust_pickle: bool = field(
        default=False,
        metadata=setting(
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
            consent=_trust_pickle_consent,
        ),
    )

    trust_native: bool = field(
        default=False,
        metadata=setting(
            "bool",
            (
                Option(
                    ("--trust-native",),
                    dict(
                        action="store_true",
                        help="allow an AOTInductor package (.pt2): loading it runs the compiled "
                        "native code it holds",
                    ),
                ),
            ),
            compared=False,
            trusted=False,
            consent=_trust_native_consent,
        ),
    )


@dataclass
class WhatIsCaptured:
    """What the run records beside its timings: logs, profiles, explanations, samples."""

    jit_log: str | None = field(
        default=None,
        metadata=setting(
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
    )
    """``PYTORCH_JIT_LOG_LEVEL`` syntax; ``None``: automatic (see ``AUTO_JIT_LOG``); ``""``: off."""

    torch_logs: str | None = field(
        default=None,
        metadata=setting(
            "str?",
            (Option(("--torch-logs",), dict(metavar="SPEC", help="TORCH_LOGS for the child")),),
            group=CAPTURE,
        ),
    )
    """``TORCH_LOGS`` syntax, passed to the child."""

    profile_iters: str | None = field(
        default=None,
        metadata=setting(
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
    )

    fresh_inputs: bool = field(
        default=False,
        metadata=setting(
            "bool",
            (
                Option(
                    ("--fresh-inputs",),
                    dict(
                        action="store_true",
                        help="a new copy of the inputs for every call, made before its timing, "
                        "as traffic brings new tensors (by default a shape's inputs are reused)",
                    ),
                ),
            ),
        ),
    )

    profile_in_run: bool = field(
        default=False,
        metadata=setting(
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
    )
    """``warmscope run``: profile inside the measured process. By default the profile comes
    from a separate process (trtexec's ``--separateProfileRun``) and the measured one runs
    without the profiler. A ``RunSession`` itself always profiles in its own process."""

    profiled_in_stats: bool = field(
        default=False,
        metadata=setting(
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
    )
    """Count profiled iterations in the latency statistics (by default the profiler's slowdown
    keeps them out)."""

    replay_opening: bool = field(
        default=False,
        metadata=setting(
            "bool",
            (
                Option(
                    ("--replay-opening",),
                    dict(
                        action="store_true",
                        help="after the run, replay its first calls (one per shape, in the "
                        "order served) three times, warm, each time after the pause that came "
                        "before the run's first call: what the opening costs with nothing left "
                        "to warm up, on a GPU the device's state after idle (warmup verifies "
                        "GPU recipes against it)",
                    ),
                ),
            ),
            group=CAPTURE,
            compared=False,
        ),
    )
    """Replay the run's opening warm after the pause before it (``warmup`` on a GPU): the
    reference a first call is held to beside its steady p50."""

    explain: bool = field(
        default=True,
        metadata=setting(
            "bool",
            (
                Option(
                    ("--no-explain",),
                    dict(
                        action="store_false",
                        dest="explain",
                        help="do not explain a slow first call that no event explains, nor "
                        "later warm-up calls that stand out (by default one more process "
                        "profiles them against steady state, after the measured run)",
                    ),
                    only="single",
                ),
            ),
            group=CAPTURE,
            compared=False,
        ),
    )
    """Where a shape's first call is slow and no event says why, profile it against steady
    state in one more process after the measured run (``run_plan``)."""

    sample_hz: float = field(
        default=DEFAULT_SAMPLE_HZ,
        metadata=setting(
            "float",
            read=_nothing,
            argv=_no_argv,
            compared=False,
        ),
    )
    """How often the sampler reads the child's CPU and memory; no option sets it."""


@dataclass
class RunFields(WhatIsCaptured, WhereAndWhat, HowLong, HowItRuns, WhatRuns):
    """Every run setting: the groups' fields, in their order (a dataclass takes its bases'
    fields from the last base to the first)."""


def _made(f: Field[Any]) -> Setting:
    make = f.default_factory if f.default is MISSING else (lambda d=f.default: d)
    return replace(f.metadata[SETTING], name=f.name, make_default=make)


FIELDS: tuple[Setting, ...] = tuple(_made(f) for f in fields(RunFields))
"""Every run setting's ``Setting``, in the order ``--help`` lists their options."""

BY_NAME = {s.name: s for s in FIELDS}


def default_of(name: str) -> Any:
    """A run setting's default: a new list or map where it is one."""
    return BY_NAME[name].default()
