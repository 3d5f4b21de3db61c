"""The fields of what a run calls and for how long: the target, its inputs and their
shapes, the order of the shapes, the pause before each call, the idle probe, how many calls or
how long, the timeout (``WhatRuns``, ``HowLong``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from warmscope.core.data.settings.field_forms import (
    imports_consent,
    iters_argv,
    no_argv,
    read_idle_probe,
)
from warmscope.core.data.settings.setting import DEFAULT_ITERS, SCHEDULES, Option, setting


@dataclass
class WhatRuns:
    """The target, its inputs and the order of its shapes."""

    target: str = field(
        default="",
        metadata=setting(
            "str",
            read=lambda args, settings: setattr(settings, "target", args.target),
            argv=no_argv,  # the positional TARGET, written first by command_line
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
            consent=imports_consent,
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
            read=read_idle_probe,
        ),
    )
    """After the run: for each, sleep that long then time one call, three times."""


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
            argv=iters_argv,
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
