"""The options of the commands that run a target, and the ``RunSettings`` they make."""

from __future__ import annotations

import argparse
from pathlib import Path

from warmscope.core.sampler import warmscope_version
from warmscope.core.settings import (
    DEFAULT_ITERS,
    PRESETS,
    SCHEDULES,
    RunSettings,
    parse_seconds_list,
)
from warmscope.core.sweep import DEFAULT_REPEAT


def add_run_options(p: argparse.ArgumentParser, *, headless: bool, sweep: bool = False) -> None:
    g = p.add_argument_group("what to run")
    g.add_argument(
        "--input",
        action="append",
        default=[],
        metavar="[NAME=]SPEC[:GEN]",
        help="one per forward argument: 1x300x40 (float32), int64[1,128], bfloat16[2,3]; "
        "NAME= makes it a keyword argument; a dimension may be a name given sizes by --dim "
        "(1xTx40); GEN: zeros, ones, fill(v), randint(lo,hi), normal, uniform(lo,hi) "
        "(default: integers zeros, floats normal)",
    )
    g.add_argument(
        "--inputs",
        metavar="FILE.pt",
        dest="inputs_file",
        help="the inputs from a file, torch.load(weights_only=True): a tensor, a tuple/list "
        "(positional) or a dict (keyword arguments)",
    )
    g.add_argument(
        "--dim",
        action="append",
        default=[],
        metavar="NAME=SIZES",
        help="sizes of a symbolic dimension of --input: T=200,300,400 or L=32..512:32; "
        "several names combine (every combination)",
    )
    g.add_argument(
        "--schedule",
        choices=SCHEDULES,
        default="cycle",
        help="how the --dim shapes follow each other: cycle (in turn, default), random "
        "(--seed), ramp (blocks in the order given), once (each once, then the run ends)",
    )
    g.add_argument(
        "--seed",
        type=int,
        default=0,
        metavar="N",
        help="seed of the input values and of --schedule random (default 0)",
    )
    g.add_argument(
        "--gap", type=float, metavar="S", help="sleep S seconds before every iteration (untimed)"
    )
    g.add_argument(
        "--idle-probe",
        metavar="S1,S2",
        help="once the run is done: for each gap, sleep that long then time one call, three "
        "times (slow after idle?), against the steady p50",
    )
    g.add_argument(
        "--mode",
        choices=("eager", "script", "trace", "compile"),
        help="run as is, torch.jit.script, torch.jit.trace or torch.compile",
    )
    g.add_argument("--device", metavar="DEV", help="cpu (default), cuda or cuda:N")
    if sweep:
        g.add_argument(
            "--preset",
            metavar="A,B",
            help=f"presets to compare, comma-separated: {', '.join(PRESETS)}",
        )
        g.add_argument(
            "--vary",
            action="append",
            default=[],
            metavar="KNOB=V1,V2",
            help="values of a knob to compare; several --vary make a grid",
        )
        g.add_argument(
            "--rank-by",
            default="first",
            metavar="OBJECTIVE",
            help="first (default), warmup, steady, or total@K (time to serve K calls from "
            "process start)",
        )
    else:
        g.add_argument(
            "--preset", choices=tuple(PRESETS), help="a named set of knobs (see `warmscope knobs`)"
        )
    g.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="assignments",
        help="set a knob (see `warmscope knobs`); env.NAME=VALUE sets a child variable; "
        "dynamo.NAME=VALUE / inductor.NAME=VALUE set torch._dynamo / torch._inductor config",
    )
    g.add_argument(
        "--iters",
        type=int,
        default=DEFAULT_ITERS,
        metavar="N",
        help=f"forward passes to run (default {DEFAULT_ITERS})",
    )
    g.add_argument(
        "--duration", type=float, metavar="S", help="run for S seconds instead of --iters"
    )
    g.add_argument(
        "--timeout", type=float, metavar="S", help="stop the run after S seconds (status timeout)"
    )
    if headless:
        g.add_argument(
            "--repeat",
            type=int,
            default=DEFAULT_REPEAT if sweep else 1,
            metavar="N",
            help="fresh processes per setting; with N > 1 the output is medians with 95%% "
            f"intervals across processes (default {DEFAULT_REPEAT if sweep else 1})",
        )
    g.add_argument(
        "--python", metavar="PATH", help="interpreter for the child (one that has torch)"
    )
    g.add_argument(
        "--compile-cache",
        choices=("cold", "warm", "user"),
        help="compile runs: cold (a fresh empty inductor/triton cache per process), warm "
        "(filled by an unrecorded first process), user (your own cache; the default for one run)",
    )
    g.add_argument(
        "--trust-pickle",
        action="store_true",
        help="allow torch.load of a pickled (non-TorchScript) module: runs code from the file",
    )
    g = p.add_argument_group("what to capture")
    g.add_argument(
        "--jit-log",
        metavar="SPEC",
        help="PYTORCH_JIT_LOG_LEVEL for the child; default for script/trace: "
        "profiling_graph_executor_impl (the profiling executor's graph dumps); '' for none",
    )
    g.add_argument("--torch-logs", metavar="SPEC", help="TORCH_LOGS for the child")
    g.add_argument(
        "--profile-iters",
        metavar="LIST",
        help="run these iterations under torch.profiler: 0,1,2,50, ranges 0-3, and steady "
        "(one more pass once settled); left out of the latency statistics",
    )
    g.add_argument(
        "--profile-in-run",
        action="store_true",
        help="profile inside the measured process (by default a separate process runs first "
        "for the profile, so the profiler never touches the measured latencies)",
    )
    g.add_argument(
        "--profiled-in-stats",
        action="store_true",
        help="count profiled iterations in the latency statistics (left out by default: "
        "the profiler slows them)",
    )
    g.add_argument(
        "--record",
        type=Path,
        metavar="PATH",
        help="where to write the run record (default: under ~/.local/state/warmscope/runs); "
        "with --repeat or sweep: a new folder for the records and the sweep document",
    )
    g.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --record file (never one a live run is writing)",
    )
    if not headless:
        add_view_options(p)
    if headless:
        g.add_argument(
            "--json",
            type=Path,
            metavar="PATH",
            help="also write one JSON document (written whatever the outcome); with --repeat "
            "or sweep, the warmscope-sweep document",
        )
        g.add_argument("--quiet", action="store_true", help="no live progress line")
    p.add_argument("--verbose", action="store_true", help="tracebacks for errors")
    p.add_argument("--version", action="version", version=f"warmscope {warmscope_version()}")


def add_view_options(p: argparse.ArgumentParser) -> None:
    """How the TUI draws: for the TUI on a target and for ``open``."""
    g = p.add_argument_group("the live view")
    g.add_argument(
        "--refresh",
        type=float,
        default=2.0,
        metavar="HZ",
        help="repaint a pane at most HZ times a second (default 2; lower for a slow link)",
    )
    g.add_argument(
        "--mouse",
        action="store_true",
        help="track the mouse (off by default: every move is bytes over SSH, and the "
        "terminal keeps its own text selection)",
    )
    g.add_argument(
        "--ascii",
        action="store_true",
        help="draw with ASCII only: no braille, box drawing or symbols (on by itself "
        "where TERM is linux or vt100)",
    )


def build_settings(args: argparse.Namespace) -> RunSettings:
    settings = RunSettings(target=args.target)
    if args.preset:
        settings.apply_preset(args.preset)
    if args.mode:
        settings.knobs["mode"] = args.mode
    if args.device:
        settings.set(f"device={args.device}")
    for assignment in args.assignments:
        settings.set(assignment)
    settings.inputs = list(args.input)
    settings.inputs_file = args.inputs_file
    settings.dims = list(args.dim)
    settings.schedule = args.schedule
    settings.seed = args.seed
    settings.gap = args.gap
    if args.idle_probe is not None:
        settings.idle_probe = parse_seconds_list(args.idle_probe, "--idle-probe")
    settings.iters = args.iters
    settings.duration = args.duration
    settings.timeout = args.timeout
    settings.jit_log = args.jit_log
    settings.torch_logs = args.torch_logs
    settings.profile_iters = args.profile_iters
    settings.profiled_in_stats = args.profiled_in_stats
    settings.profile_in_run = args.profile_in_run
    settings.python = args.python
    settings.trust_pickle = args.trust_pickle
    settings.compile_cache = args.compile_cache
    return settings
