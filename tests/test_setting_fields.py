"""The run settings' table drives the parser, the reproduce line, the diff and the trust check."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import warmscope
from warmscope.cli import make_parser
from warmscope.cli.options import build_settings
from warmscope.core.child.knobs import KNOBS
from warmscope.core.data.record import read_run
from warmscope.core.data.settings import RunSettings
from warmscope.core.data.settings.fields import FIELDS, default_of
from warmscope.core.data.settings.setting import PRESETS, SCHEDULES
from warmscope.core.output.settings_diff import settings_diff, settings_line

# A value unlike the default for each field a command line can give (sample_hz has no option).
SAMPLES: dict[str, Any] = {
    "target": "sample:speech",
    "inputs": ["1x3x4", "mask=int64[2,3]:zeros"],
    "inputs_file": "in.pt",
    "imports": ["my_registrations", "other.pkg"],
    "dims": ["T=2,3"],
    "schedule": "ramp",
    "seed": 7,
    "gap": 0.25,
    "idle_probe": [1.0, 2.5],
    "knobs": {**{k.name: k.default for k in KNOBS}, "mode": "script", "device": "cuda:1"},
    "preset": "no-profiling",
    "env": {"OMP_NUM_THREADS": "1", "EMPTY": ""},
    "torch_config": {"dynamo.cache_size_limit": "4", "inductor.max_autotune": "True"},
    "iters": 17,
    "duration": 2.5,
    "timeout": 30.0,
    "python": "/usr/bin/python3",
    "host": "gpu-box",
    "compile_cache": "warm",
    "trust_pickle": True,
    "trust_native": True,
    "jit_log": ">graph_fuser",
    "torch_logs": "+dynamo",
    "profile_iters": "0,1,steady",
    "profile_in_run": True,
    "profiled_in_stats": True,
    "recipe": "warmup.py",
    "memory_limit": "3G",
    "max_procs": 64,
    "fresh_inputs": True,
    "replay_opening": True,
    "explain": False,
}
INTERNAL = {"sample_hz"}
"""Fields no option sets: the sampler's rate."""


def parse(argv: list[str]) -> RunSettings:
    assert argv[:2] == ["warmscope", "run"]
    return build_settings(make_parser("run").parse_args(argv[2:]))


def with_value(name: str) -> RunSettings:
    s = RunSettings(target="sample:speech")
    setattr(s, name, copy.deepcopy(SAMPLES[name]))
    if name == "preset":  # a preset sets its knobs too
        s.knobs.update(PRESETS[SAMPLES[name]].knobs)
    return s


def test_the_table_is_every_field_of_run_settings() -> None:
    names = [f.name for f in FIELDS]
    assert sorted(names) == sorted(f.name for f in dataclasses.fields(RunSettings))
    assert len(set(names)) == len(names)
    assert set(SAMPLES) | INTERNAL == {f.name for f in FIELDS}, "a new field needs a sample"
    for name, value in SAMPLES.items():
        assert value != default_of(name), name


@pytest.mark.parametrize("command", ["run", "sweep", None])
def test_every_option_of_the_table_is_an_option_of_each_run_command(command: str | None) -> None:
    args = vars(make_parser(command).parse_args(["sample:trivial"]))
    for f in FIELDS:
        for option in f.options:
            if option.applies(command == "sweep"):
                assert option.dest in args, (f.name, option.flags)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_field_has_a_flag_that_parses_back_to_it(name: str) -> None:
    s = with_value(name)
    again = parse(s.command_line())
    assert getattr(again, name) == SAMPLES[name]
    assert again.to_json() == s.to_json()


texts = st.text(st.characters(codec="ascii", exclude_categories=["Cc"]), max_size=8)
seconds = st.floats(min_value=0.5, max_value=1e4, allow_nan=False).map(lambda x: float(f"{x:g}"))


@st.composite
def run_settings(draw: st.DrawFn) -> RunSettings:
    s = RunSettings(target=draw(st.sampled_from(["sample:speech", "model.pt", "m.py:make"])))
    for name, value in SAMPLES.items():
        if name != "target" and draw(st.booleans()):
            setattr(s, name, copy.deepcopy(value))
    if s.preset is not None:
        s.knobs = {**s.knobs, **PRESETS[s.preset].knobs}
    s.schedule = draw(st.sampled_from(SCHEDULES))
    s.seed = draw(st.integers(0, 2**31))
    s.timeout = draw(st.none() | seconds)
    s.env = draw(st.dictionaries(st.from_regex(r"[A-Z_]{1,6}", fullmatch=True), texts, max_size=3))
    s.torch_config = draw(
        st.dictionaries(
            st.from_regex(r"(dynamo|inductor)\.[a-z_]{1,6}", fullmatch=True), texts, max_size=3
        )
    )
    return s


@settings(max_examples=60, deadline=None)
@given(run_settings())
def test_the_reproduce_line_parses_back_to_the_same_settings(s: RunSettings) -> None:
    assert parse(s.command_line()).to_json() == s.to_json()


def test_copy_is_equal_and_independent() -> None:
    s = with_value("env")
    c = s.copy()
    assert c == s
    c.env["X"] = "1"
    c.knobs["mode"] = "eager"
    c.idle_probe.append(1.0)
    assert "X" not in s.env and s.knobs["mode"] is None and s.idle_probe == []


@pytest.mark.parametrize(
    ("name", "shown"),
    [
        ("env", "env.OMP_NUM_THREADS"),
        ("torch_config", "dynamo.cache_size_limit"),
        ("compile_cache", "compile_cache"),
        ("timeout", "timeout"),
        ("python", "python"),
        ("iters", "iters"),
    ],
)
def test_the_diff_names_each_setting_that_differs(name: str, shown: str) -> None:
    a, b = RunSettings(target="t"), with_value(name)
    b.target = "t"
    rows = {c.name: (c.a, c.b) for c in settings_diff(a, b)}
    assert shown in rows
    assert rows[shown][0] in ("default", "unset", "none")
    assert settings_diff(b, b.copy()) == []


def test_the_diff_names_a_changed_env_value_on_both_sides() -> None:
    a, b = RunSettings(target="t", env={"OMP_NUM_THREADS": "1"}), RunSettings(target="t")
    b.env = {"OMP_NUM_THREADS": "2"}
    b.torch_config = {"dynamo.x": "1"}
    rows = {c.name: (c.a, c.b) for c in settings_diff(a, b)}
    assert rows == {"env.OMP_NUM_THREADS": ("1", "2"), "dynamo.x": ("default", "1")}
    assert "env.OMP_NUM_THREADS=2" in settings_line(b) and "dynamo.x=1" in settings_line(b)


def test_every_untrusted_field_is_named_and_reset() -> None:
    untrusted = {f.name for f in FIELDS if not f.trusted}
    assert {"python", "env", "trust_pickle", "trust_native", "torch_config"} <= untrusted
    for f in FIELDS:
        s = with_value(f.name) if f.name in SAMPLES else RunSettings(target="t")
        found = s.untrusted()
        if f.name in untrusted:
            assert found == {f.name: SAMPLES[f.name]}
            safe = s.without_untrusted()
            assert safe.untrusted() == {} and getattr(safe, f.name) == default_of(f.name)
            assert getattr(s, f.name) == SAMPLES[f.name]  # the original is left alone
        else:
            assert found == {}, f.name


def test_settings_of_another_kind_in_a_file_run_with_their_defaults() -> None:
    s = RunSettings.from_json(
        {"target": "t", "iters": "many", "env": ["x"], "timeout": True, "future": 1}
    )
    assert (s.target, s.iters, s.env, s.timeout) == ("t", default_of("iters"), {}, None)
    assert s.knobs == RunSettings().knobs  # knobs left out run with their defaults


@pytest.mark.parametrize("path", sorted((Path(__file__).parent / "data").glob("*.jsonl")))
def test_old_records_load_into_typed_settings(path: Path) -> None:
    data = read_run(path)
    raw = json.loads(path.read_text().splitlines()[0])["settings"]
    assert data.settings.target == raw["target"]
    assert data.settings.knobs["mode"] == raw["knobs"].get("mode")
    assert parse(data.settings.command_line()).to_json() == data.settings.to_json()


def test_compare_names_the_env_and_timeout_a_real_run_recorded(
    tmp_path: Path, record_dir: Path
) -> None:
    """A real run records the environment and the timeout it was given, and compare names
    them where they differ. The other side is the same record with those two settings of its
    header changed: a second real run would record them by the same code (a child and its
    torch import more)."""
    record = tmp_path / "omp1.jsonl"
    made = warmscope(
        "run",
        "sample:trivial",
        "--iters",
        "3",
        "--set",
        "env.OMP_NUM_THREADS=1",
        "--timeout",
        "60",
        "--record",
        str(record),
        "--quiet",
    )
    assert made.code == 0, made.stderr
    header, *rest = record.read_text().splitlines(keepends=True)
    fields = json.loads(header)
    assert fields["settings"]["env"] == {"OMP_NUM_THREADS": "1"}
    assert fields["settings"]["timeout"] == 60
    fields["settings"]["env"] = {"OMP_NUM_THREADS": "2"}
    fields["settings"]["timeout"] = 90.0
    other = tmp_path / "omp2.jsonl"
    other.write_text(json.dumps(fields) + "\n" + "".join(rest))
    records = [str(record), str(other)]
    out = warmscope("compare", *records)
    assert out.code == 0, out.stderr
    lines = out.stdout.splitlines()
    rows = [line.split() for line in lines if line.startswith("  ")]
    assert ["env.OMP_NUM_THREADS", "1", "2"] in rows, out.stdout
    assert ["timeout", "60", "90"] in rows, out.stdout
