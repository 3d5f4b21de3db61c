"""The fields of what a run captures beside its timings: the JIT and torch logs, profiles
(here or in a separate process), fresh inputs, the opening replayed, the explanation of a
slow first call, the sampling rate (``WhatIsCaptured``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from warmscope.core.data.settings.field_forms import no_argv, read_nothing
from warmscope.core.data.settings.setting import CAPTURE, DEFAULT_SAMPLE_HZ, Option, setting


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
            read=read_nothing,
            argv=no_argv,
            compared=False,
        ),
    )
