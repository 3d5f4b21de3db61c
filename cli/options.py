"""The options of the commands that run a target, and the ``RunSettings`` they make."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from warmscope.core.data.settings import RunSettings
from warmscope.core.data.settings.fields import FIELDS
from warmscope.core.data.settings.setting import CAPTURE as CAPTURE_GROUP
from warmscope.core.data.settings.setting import DEFAULT_REPEAT
from warmscope.core.data.settings.setting import RUN as RUN_GROUP
from warmscope.core.data.settings.setting import read as read_setting
from warmscope.core.run.version import warmscope_version

TARGET_HELP = (
    "model.pt (TorchScript archive), model.pt2 (torch.export.save program or AOTInductor "
    "package, told apart by content), path/file.py:factory, package.module:factory, sample:NAME"
)
"""What a TARGET may be, as every command that runs one says it."""


def add_run_options(p: argparse.ArgumentParser, *, headless: bool, sweep: bool = False) -> None:
    """The run settings' options (``setting_fields.FIELDS``, in its order), with the options of
    the command itself where ``--help`` lists them."""
    groups = {group: p.add_argument_group(group) for group in (RUN_GROUP, CAPTURE_GROUP)}
    g = groups[RUN_GROUP]
    for setting in FIELDS:
        for option in setting.options:
            if option.applies(sweep):
                groups[setting.group].add_argument(*option.flags, **option.spec)
            if option.flags == ("--preset",) and sweep and option.applies(sweep):
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
            if option.flags == ("--timeout",) and headless:
                g.add_argument(
                    "--repeat",
                    type=int,
                    default=DEFAULT_REPEAT if sweep else 1,
                    metavar="N",
                    help="fresh processes per setting; with N > 1 the output is medians with "
                    "intervals across processes, at the coverage N reaches (95%% from 6; default "
                    f"{DEFAULT_REPEAT if sweep else 1}); with --adaptive, the cap",
                )
                g.add_argument(
                    "--adaptive",
                    action="store_true",
                    help="--repeat N is the cap: rounds stop once the best setting is beyond "
                    "noise better than every other (exact rank tests, 95%% however often they "
                    "look); a setting beyond noise worse than the best drops out",
                )
    g = groups[CAPTURE_GROUP]
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
            help="also write one JSON document (written whatever the outcome; - for stdout, "
            "the summary then on stderr); with --repeat "
            "or sweep, the warmscope-sweep document",
        )
        g.add_argument("--quiet", action="store_true", help="no live progress line")
    p.add_argument("--verbose", action="store_true", help="tracebacks for errors")
    p.add_argument("--version", action=VersionAction)


class VersionAction(argparse.Action):
    """``--version``: the installed version, read only when asked (``importlib.metadata``
    costs the TUI's first frame some 20 ms)."""

    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"warmscope {warmscope_version()}")  # on stdout, as argparse's own does
        parser.exit()


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
    """The settings the parsed options give (each field as ``FIELDS`` reads it, in its order:
    a preset before the knobs it sets, ``--set`` last)."""
    settings = RunSettings()
    for setting in FIELDS:
        read_setting(setting, args, settings)
    return settings
