"""``warmscope samples`` and ``warmscope knobs``: what a target and ``--set`` may name."""

from __future__ import annotations

import argparse

from warmscope.cli.command import Command
from warmscope.core.child import outcome
from warmscope.core.child.knobs import KNOBS, SERVER, STATEMENT, STEP, Knob, show_value
from warmscope.core.data.settings import PRESETS
from warmscope.sample_models import DEFAULT_SAMPLE, SAMPLES


def samples(args: argparse.Namespace, argv: list[str]) -> int:
    width = max(len(n) for n in SAMPLES) + 7
    for name, sample in SAMPLES.items():
        mark = " (default)" if name == DEFAULT_SAMPLE else ""
        print(
            f"sample:{name:<{width - 7}}  mode {sample.mode:<7} input {' '.join(sample.inputs):<12} "
            f"{sample.summary}{mark}"
        )
    return outcome.EXIT_OK


def carried_text(k: Knob) -> str:
    """``runs in Python and C++ · recipe: prepare() sets it`` — where a knob works and how a
    warm-up recipe carries it (its ``RecipeForm``)."""
    where = f"Python only ({k.recipe.cpp_refusal}'s)" if k.recipe.cpp_refusal else "Python and C++"
    form = k.recipe
    if form.carry == STATEMENT:
        how = f"prepare() sets it: {k.python_statement}"
        if form.cpp:
            how += f"; C++: {form.cpp}"
    elif form.carry == SERVER:
        how = f"the server sets it at start, named in the header: {form.server}"
    elif form.carry == STEP:
        how = f"a step of prepare(): {form.step}"
    else:
        how = "not carried: how warmscope measures"
    return f"[{where} · recipe: {how}]"


def knobs(args: argparse.Namespace, argv: list[str]) -> int:
    print("knobs (--set KEY=VALUE; 'default' leaves torch's own default):")
    for k in KNOBS:
        values = (
            "|".join(k.choices)
            if k.choices
            else {"bool": "on|off", "int": "N", "str": "TEXT"}[k.type]
        )
        print(f"  {k.name:<24} {values:<40} default {k.show(k.default)}")
        print(f"  {'':<24} {k.help}")
        print(f"  {'':<24} {carried_text(k)}")
    print(
        "  env.NAME=VALUE            an environment variable for the child (OMP_NUM_THREADS, ...)"
    )
    print(
        "  dynamo.NAME=VALUE         torch._dynamo.config.NAME (cache_size_limit, allow_rnn, ...)"
    )
    print("  inductor.NAME=VALUE       torch._inductor.config.NAME (max_autotune, ...)")
    print("  (checked against the installed torch when the run starts; a refusal is reported)")
    print("\npresets (--preset NAME; each sets its knobs, the others stay as they are):")
    width = max(len(name) for name in PRESETS)
    for p in PRESETS.values():
        knobs = ", ".join(f"{k}={show_value(v)}" for k, v in p.knobs.items())
        print(f"  {p.name:<{width}} {p.help}  [{knobs}]")
    return outcome.EXIT_OK


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--verbose", action="store_true")


COMMANDS = (Command("samples", add_arguments, samples), Command("knobs", add_arguments, knobs))
