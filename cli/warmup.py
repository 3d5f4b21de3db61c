"""``warmscope warmup TARGET``: its options, the command and its table (the engine is
``warmscope.core.run.warmup``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from warmscope.cli.command import Command
from warmscope.cli.options import TARGET_HELP, add_run_options, build_settings
from warmscope.cli.sweep import add_executor_option
from warmscope.core.base.files import atomic_write
from warmscope.core.base.safe_text import clean_line
from warmscope.core.base.units import num3, parse_duration_ms, ratio_interval
from warmscope.core.child import outcome
from warmscope.core.child.outcome import UsageError
from warmscope.core.data import traffic
from warmscope.core.data.cpp_runtime import is_cpp
from warmscope.core.data.reading import read_run
from warmscope.core.data.settings import RunSettings
from warmscope.core.output.sweep_digest import iv_text
from warmscope.core.output.warmup_verdict import is_verified
from warmscope.core.run import remote_target
from warmscope.core.run.ray_executor import start_executor
from warmscope.core.run.warmup import (
    COMPILE_REPEAT,
    DEFAULT_REPEAT,
    DEFAULT_TOLERANCE_MS,
    UsageAbort,
    Warmup,
    WarmupFailed,
)
from warmscope.core.run.warmup_handover import chosen_candidate, copy_recipe, emitted_text
from warmscope.core.run.warmup_progress import Progress, duration_text

HELP = """\
Derive a warm-up recipe for TARGET, verify it in fresh processes, and write it as a Python file
(imports only torch) whose prepare(model) returns the model to serve.

  observe  --repeat processes without a recipe serve every --dim shape: where each shape
           became steady, and why its first call was slow (profiling run, recompile…)
  propose  candidates: warm-up calls for each shape (as many as the slowest shape took to
           become steady, the upper median across processes, plus one); settings that remove
           warm-up work (profiling executor off); for torch.compile: compile as the runs did,
           then one call of each size; mark_dynamic over the declared sizes (dynamic=True
           where no input dimension is named); a compile-cache artifact beside the recipe
           (on a GPU, or with --cache-artifact)
  verify   each candidate's file runs as --recipe in --repeat fresh processes, interleaved

cost: a compile warm-up's every process compiles; the plan (how many processes, and how many
again in your own compile cache) is told before the first starts, and the time in all once
the first process has compiled every shape, with the time left at each step (--quiet too).

serve order (--serve): verification serves the shapes in an order the warm-up did not use, a
fresh process each time: reverse (default: the --dim sizes backwards, in turn), cycle (in the
order given; the warm-up then runs backwards), random (--seed). Each shape's first call is
set against that shape's own steady p50.

from traffic (--traffic RECORD): the inputs come from a `warmscope exec` record of your own
program instead of --input/--dim: one module's calls (--module NAME, else the one called most),
its tensor arguments as --input specs, each dimension that varied a name (B, T, C, H, W;
D0, D1… past five) whose --dim sizes are those seen, in the order first seen; dimensions
equal in every call share a name. Served in that order (--serve cycle) unless --serve says
otherwise (a recorded sequence's repeats are not replayed), on the traffic's device unless
--device says otherwise. A call with anything but tensors (a tuple, a dict, an int, None), or
calls whose tensors differ in dtype or rank, is refused, naming its signature.

compile caches: a compile warm-up runs every process on a fresh, empty inductor/triton cache
(as a server starts on a new machine) and, where your own cache has entries, every process again
on yours, its figures beside (a server started on this machine); --compile-cache names one.

--runtime cpp: the candidates are C++ files (--emit-cpp's form) for a TorchScript archive, each
built into a library whose prepare(module) the C++ agent runs; they are verified in fresh C++
processes, and --emit-cpp hands over the file verified.

verdict, one of three, with how much of each shape's first-call excess the recipe removed
("L=32: first call 20.0 s → 140 µs over steady, 99.99% of it removed"):
  verified               every shape's first call within noise of its steady state (the 95%
                         interval of first / steady p50 across processes reaches down to the
                         shape's p90 / p50) and at most 1.2x its steady p50
  verified within 1.2×   every shape's first call at most 1.2x its steady p50 (or not to be
                         told from 1.2x across processes, its median at most 1.5x; or within
                         --tolerance of it) but beyond its steady spread: the residual named
  not verified           a shape beyond that, a process that failed, or one process whose
                         first call was over 2x its own steady p50, each named
The answer names the cheapest verified recipe by start-up cost (the time its prepare() takes).
A compile recipe's processes serve under torch.compiler.set_stance("fail_on_recompile"): a
recompile while serving fails the process and the recipe, naming it.

the file: --emit writes the very file that was verified, under a header that states the
verdict as measured, the command that derived it and the torch it ran on. Every knob given
(--set) is in it: applied in prepare(), or, for what must be set as the process starts
(inter_op_threads, quantized_engine, CUDA_MODULE_LOADING), named in the header as the server's
line and checked by prepare(). `warmscope knobs` says how each knob is carried.
"""

EPILOG = """\
exit codes: 0 verified (or verified within 1.2×), 3 not verified (the document and records are
kept), 1 an error (every baseline process failed, a record could not be written), 2 bad usage
or a bad target/input, 130 stopped with Ctrl-C.
"""


def duration_ms(text: str) -> float:
    try:
        return parse_duration_ms(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``warmup`` options: those of ``run``, and its own."""
    p.add_argument("target", metavar="TARGET", help=TARGET_HELP)
    add_run_options(p, headless=True)
    g = p.add_argument_group("the warm-up")
    g.add_argument(
        "--serve",
        choices=("reverse", "cycle", "random"),
        help="the order verification serves the shapes in (see above; default reverse, "
        "cycle with --traffic)",
    )
    g.add_argument(
        "--traffic",
        type=Path,
        metavar="RECORD",
        help="the inputs from a `warmscope exec` record of your program: one module's "
        "calls as --input specs and --dim sizes (see above); not with --input, --inputs or "
        "--dim",
    )
    g.add_argument(
        "--module",
        metavar="NAME",
        help="--traffic: the module whose calls to take (Net, Net#3 or its class; default: "
        "the one called most)",
    )
    g.add_argument(
        "--emit",
        type=Path,
        metavar="FILE.py",
        help="write the chosen recipe here (and its artifact)",
    )
    g.add_argument(
        "--emit-cpp",
        type=Path,
        metavar="FILE.cpp",
        help="TorchScript archives: the same warm-up for libtorch, as a C++ file (with "
        "--runtime cpp, the file verified in C++ processes; else its Python form's)",
    )
    g.add_argument(
        "--guard",
        action="store_true",
        help="compile recipes: torch.compiler.set_stance('fail_on_recompile') after warm-up",
    )
    g.add_argument(
        "--cache-artifact",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compile warm-ups: also a candidate that saves a compile-cache artifact beside the "
        "recipe and loads it (default: on a GPU, where compiled kernels and autotuning are "
        "what it saves; one process more to make it)",
    )
    g.add_argument(
        "--tolerance",
        type=duration_ms,
        default=DEFAULT_TOLERANCE_MS,
        metavar="DURATION",
        help="a first call at most this much over its steady p50 is 'verified within 1.2×' "
        "whatever its ratio, the residual named (e.g. 200us, 1ms; default 500us; 0us: the "
        "ratio alone)",
    )
    add_executor_option(g)
    p.set_defaults(repeat=None)
    for action in p._actions:
        if action.dest == "json":
            action.help = "also write the warmscope-warmup document here"
        elif action.dest == "compile_cache":
            action.help = (
                "compile warm-ups: by default every process on a cold cache (cold), as a server "
                "starts on a new machine, and each again on your own cache (user) where it has "
                "entries, its figures beside; naming one measures on that one alone"
            )
        elif action.dest == "repeat":
            action.help = (
                f"fresh processes for the baseline and for each candidate (default "
                f"{DEFAULT_REPEAT}, which give 95%% intervals; {COMPILE_REPEAT} for --mode "
                "compile, whose every process compiles: the plan and its time are told first)"
            )


def run(args: argparse.Namespace, argv: list[str]) -> int:
    seen = _from_traffic(args)
    settings = _checked_settings(args)
    job = Warmup(
        settings=settings,
        serve=args.serve,
        repeat=args.repeat,
        folder=args.record,
        command=["warmscope", *argv],
        guard=args.guard,
        on_done=None if args.quiet else _done_line,
        tolerance_ms=args.tolerance,
        cache_artifact=args.cache_artifact,
    )
    if not args.quiet or job.mode == "compile":  # a compile's minutes are told even so
        job.on_progress = ProgressLines(job).tell
    job.executor = start_executor(args.executor)
    doc = _run_to_document(job)
    if isinstance(doc, int):
        return doc
    if seen is not None:
        doc["traffic"] = seen.to_json()
    _write_outputs(args, doc)
    print(render(doc))
    return outcome.EXIT_OK if is_verified(doc["verdict"]) else outcome.EXIT_NOT_VERIFIED


def _from_traffic(args: argparse.Namespace) -> traffic.Traffic | None:
    """``--traffic RECORD``: its module's calls become ``--input``/``--dim`` (and its device
    ``--device``, unless given), served in the order first seen (``--serve cycle``, unless
    given); what was taken is said on stderr. ``--serve``'s default otherwise."""
    if args.traffic is None:
        if args.module is not None:
            raise UsageError("--module picks a module of --traffic RECORD: give the record")
        args.serve = args.serve or "reverse"
        return None
    if args.input or args.dim or args.inputs_file:
        raise UsageError(
            "--traffic makes the inputs and their sizes: not with --input, --inputs or --dim"
        )
    seen = traffic.from_run(read_run(args.traffic), args.module, str(args.traffic))
    args.input, args.dim = list(seen.specs.inputs), list(seen.specs.dims)
    lines = seen.told(chosen=args.module is None)
    if args.serve is None and seen.specs.dims:
        several = (
            ", each name's sizes so, the last name fastest" if len(seen.specs.dims) > 1 else ""
        )
        lines.append(f"traffic    served in the order first seen{several} (--serve cycle)")
    args.serve = args.serve or "cycle"
    if args.device is None and seen.specs.device != traffic.CPU:
        args.device = seen.specs.device
        lines.append(f"traffic    on {seen.specs.device}, as the traffic ran (--device)")
    for line in lines:
        print(clean_line(line), file=sys.stderr)
    return seen


def _checked_settings(args: argparse.Namespace) -> RunSettings:
    """The run's settings, once every option that does not go with a warm-up (or with the
    others given) is refused, one line each, before any process starts."""
    if args.profile_iters:
        raise UsageError("--profile-iters does not go with warmup: profile in a `warmscope run`")
    if args.recipe:
        raise UsageError(
            "--recipe: warmup derives its own; verify yours with `warmscope run --recipe`"
        )
    settings = build_settings(args)
    if args.repeat is not None and args.repeat < 1:
        raise UsageError(f"--repeat must be at least 1, got {args.repeat}")
    for path in (args.json, args.emit, args.emit_cpp):
        if path is not None and not path.parent.is_dir():
            raise UsageError(
                f"{clean_line(str(path))}: no such folder {clean_line(str(path.parent))}"
            )
    if args.emit is not None and args.emit.suffix != ".py":
        raise UsageError(f"--emit {clean_line(str(args.emit))}: a recipe is a .py file")
    _check_libtorch(args, settings)
    if args.record is not None and args.record.exists():
        raise UsageError(
            f"--record {clean_line(str(args.record))} exists: warmup writes a new folder"
        )
    return settings


def _check_libtorch(args: argparse.Namespace, settings: RunSettings) -> None:
    """``--runtime cpp`` and ``--emit-cpp`` refused where libtorch cannot run the warm-up: a
    target that is not a TorchScript archive, inputs not given as positional specs."""
    cpp = is_cpp(settings)
    if cpp and args.emit is not None:
        raise UsageError(
            "--emit: --runtime cpp verifies the C++ form of the recipe: --emit-cpp FILE.cpp"
        )
    if args.emit_cpp is None and not cpp:
        return
    flag = "--emit-cpp" if args.emit_cpp is not None else "--runtime cpp"
    target = remote_target.resolve(settings)
    if not target.scripted:
        raise UsageError(
            f"{flag}: libtorch loads TorchScript archives (.pt) only, for a warm-up recipe"
        )
    if not settings.inputs or any(s.name for s in settings.input_specs(target)):
        raise UsageError(
            f"{flag}: libtorch's warm-up makes its inputs from --input specs, "
            "positional ones (no NAME=)"
        )


def _run_to_document(job: Warmup) -> dict[str, Any] | int:
    """The warm-up's document; or, where it stopped short, the exit code, said on stderr. The
    executor is closed either way."""
    try:
        return job.run()
    except UsageAbort as exc:
        print(f"warmscope: {clean_line(str(exc))}", file=sys.stderr)
        return outcome.EXIT_USAGE
    except WarmupFailed as exc:
        print(f"warmscope: {clean_line(str(exc))}", file=sys.stderr)
        return outcome.EXIT_FAILED
    except KeyboardInterrupt:
        print(f"warmscope: stopped; the finished processes are in {job.folder}", file=sys.stderr)
        return outcome.EXIT_STOPPED
    finally:
        if job.executor is not None:
            job.executor.close()


def _write_outputs(args: argparse.Namespace, doc: dict[str, Any]) -> None:
    """The chosen recipe written where ``--emit``/``--emit-cpp`` say (``doc`` records where),
    then the document: in the record folder, and at ``--json``."""
    if args.emit is not None and copy_recipe(doc, args.emit) is not None:
        doc["emitted"] = str(args.emit)
    if args.emit_cpp is not None:
        chosen = chosen_candidate(doc)
        if chosen is not None:
            # Verified in C++ (--runtime cpp): that very file; else the same warm-up in C++,
            # its header saying it never ran there.
            atomic_write(args.emit_cpp, emitted_text(doc, chosen, "cpp"), parents=False)
            doc["emitted_cpp"] = str(args.emit_cpp)
    text = json.dumps(doc, indent=1, default=str) + "\n"
    atomic_write(Path(doc["folder"]) / "warmup.json", text, parents=False)
    if args.json is not None:
        atomic_write(args.json, text, parents=False)


class ProgressLines:
    """A warm-up's steps on stderr, one line each (with ``--quiet`` too for a compile, whose
    every process takes tens of seconds): the plan before the first process, the estimate once
    the first has met every shape, each step as it begins with the time left."""

    def __init__(self, job: Warmup) -> None:
        self.job = job
        self.phase = ""

    def tell(self, p: Progress) -> None:
        if p.phase in ("plan", "estimate"):
            print(clean_line(f"warmup     {p.phase}: {p.note}"), file=sys.stderr)
            return
        if p.phase == self.phase:
            return
        self.phase = p.phase
        what = {
            "observe": "the baseline, no recipe",
            "propose": f"{len(p.cells)} candidate(s): {', '.join(p.cells)}",
            "artifact": "a cache-artifact recipe compiles once and saves it",
            "build": "the C++ candidates built",
            "verify": "each candidate in fresh processes",
            "again": "processes out of bound while others kept the cores busy, run once more",
        }.get(p.phase, "")
        print(clean_line(f"warmup     {p.phase}: {what}{self.left()}"), file=sys.stderr)

    def left(self) -> str:
        """``; about 2 min 10 s left``, once there is an estimate."""
        job = self.job
        if job.estimate_s is None or not job.started_at:
            return ""
        remaining = job.estimate_s - (time.monotonic() - job.started_at)
        return f"; about {duration_text(max(0.0, remaining))} left"


def _done_line(sweep: Any, process: Any) -> None:
    data = process.data
    print(
        clean_line(
            f"  {sweep.cells[process.cell].label} #{process.repeat}: {data.status} "
            f"({data.count} iterations)"
        ),
        file=sys.stderr,
    )


def render(doc: dict[str, Any]) -> str:
    """The answer first, then each shape's first call / steady p50 per candidate."""
    lines = [f"answer     {doc['answer']}"]
    lines.append(
        f"warmup     {doc['target']} · mode {doc['mode']} · serve {doc['serve']} "
        f"({' → '.join(doc['served_order']) or 'one shape'}) · {doc['repeat']} processes each · "
        f"{doc['wall_s']:.1f} s{executor_text(doc)}"
    )
    cols = [("no recipe", doc["baseline"])] + [(c["label"], c) for c in doc["candidates"]]
    keys = [s["key"] for s in doc["baseline"]["shapes"]]
    width = max(12, *(len(k) + 2 for k in keys)) if keys else 12
    cw = 28
    held = any(c.get("held_to_replay") for c in doc["candidates"])
    lines.append(
        "first call / steady p50, median (95% interval) across processes"
        + (
            "; a candidate's held to the larger of its steady p50 and the same call replayed "
            "warm after the same pause (the GPU after idle)"
            if held
            else ""
        )
    )
    lines.append(f"{'':{width}}" + "".join(f"{label[: cw - 1]:<{cw}}" for label, _ in cols))
    for key in keys:
        row = f"{key or 'input':{width}}"
        for _, cell in cols:
            shape = next((s for s in cell.get("shapes", []) if s["key"] == key), None)
            row += f"{ratio_interval(shape['ratio']) if shape else '-':<{cw}}"
        lines.append(row)
    for name, metric in (("start-up", "startup_ms"), ("steady p50", "steady_p50_ms")):
        row = f"{name:{width}}"
        for n, (_, cell) in enumerate(cols):
            shown = iv_text(cell.get(metric)) if cell.get(metric) else "-"
            row += f"{'-' if n == 0 and metric == 'startup_ms' else shown:<{cw}}"
        lines.append(row)
    if doc.get("your_cache"):
        # The same start-up in the user's own compile cache: what a server here would see.
        row = f"{'your cache':{width}}" + f"{'':<{cw}}"
        for c in doc["candidates"]:
            mine = c.get("your_cache") or {}
            row += f"{iv_text(mine['startup_ms']) if mine.get('startup_ms') else '-':<{cw}}"
        lines.append(row)
    row = f"{'verdict':{width}}" + f"{'':<{cw}}"
    for c in doc["candidates"]:
        row += f"{c['verdict']:<{cw}}"
    lines.append(row)
    for c in doc["candidates"]:
        if c.get("why"):
            lines.append(f"  {c['label']}: {c['why']}")
        if c.get("break_even"):
            lines.append(f"  {c['label']}: {c['break_even']}")
        if c.get("held"):
            lines.append(f"  {c['label']}: {c['held']}")
        for x in c.get("contended", []):
            load = f"{x['load']:.1f} cores busy elsewhere" if x.get("load") is not None else ""
            lines.append(
                f"  {c['label']}: contention: a process out of bound while {load} "
                f"({x['record']}) ran again ({x['again']}); the verdict counts the second"
            )
    cache = " on a cold compile cache" if doc.get("compile_cache") == "cold" else ""
    for o in doc["observed"]:
        if o.get("note"):
            lines.append(f"observed   {o['note']}{cache}")
    for o in (doc.get("your_cache") or {}).get("observed", []):
        first, ratio = o.get("first_ms") or {}, o.get("ratio") or {}
        if first.get("median") is not None and ratio.get("median") is not None:
            lines.append(
                f"observed   {o['key'] or 'the input'} in your compile cache: first call "
                f"{iv_text(first)}, {num3(ratio['median'])}× its steady p50"
            )
    if doc.get("emitted"):
        lines.append(f"recipe     {doc['emitted']}")
    if doc.get("emitted_cpp"):
        lines.append(f"libtorch   {doc['emitted_cpp']}")
    lines.append(f"records    {doc['folder']}")
    return "\n".join(clean_line(line) for line in lines)


def executor_text(doc: dict[str, Any]) -> str:
    """`` · ray: 2 nodes``: where the processes ran, when not here."""
    if doc.get("executor", "local") == "local":
        return ""
    cells = [doc["baseline"], *doc["candidates"]]
    nodes = {
        str(p["node"].get("node_id"))
        for cell in cells
        for p in cell.get("processes", [])
        if isinstance(p.get("node"), dict)
    }
    nodes.update(
        str(c["artifact_node"].get("node_id")) for c in doc["candidates"] if c.get("artifact_node")
    )
    return f" · {doc['executor']}: {len(nodes)} node{'s' if len(nodes) != 1 else ''}"


COMMANDS = (Command("warmup", add_arguments, run, description=HELP, epilog_text=EPILOG),)
