"""The fields of how the model runs: every executor knob (``--set``, ``--mode``, ``--device``,
``--runtime``), the preset, the child's environment and torch's config (``HowItRuns``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from warmscope.core.child.knobs import RUNTIMES, default_values
from warmscope.core.data.settings.field_forms import (
    env_consent,
    knobs_argv,
    knobs_shown,
    map_argv,
    map_shown,
    preset_argv,
    read_assignments,
    read_knobs,
    read_nothing,
    torch_config_consent,
)
from warmscope.core.data.settings.setting import MODES, PRESETS, Option, setting


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
            read=read_knobs,
            argv=knobs_argv,
            shown=knobs_shown,
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
            read=read_nothing,
            argv=preset_argv,
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
            read=read_assignments,  # every --set: knobs, env.* and dynamo.*/inductor.*
            argv=map_argv("env", "env."),
            shown=map_shown("env", "env."),
            absent="unset",
            trusted=False,
            consent=env_consent,
        ),
    )

    torch_config: dict[str, str] = field(
        default_factory=dict,
        metadata=setting(
            "strmap",
            read=read_nothing,  # by --set dynamo.NAME=VALUE (the env entry reads every --set)
            argv=map_argv("torch_config", ""),
            shown=map_shown("torch_config", ""),
            trusted=False,  # some options name programs (inductor.cpp.cxx)
            consent=torch_config_consent,
        ),
    )
    """``--set dynamo.NAME=VALUE`` / ``inductor.NAME=VALUE``, as typed."""
