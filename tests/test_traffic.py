"""``warmscope warmup --traffic RECORD``: a watched program's calls as a warm-up's inputs.

The signatures read here are made by the observer's own ``exec_watch._text`` from real tensors
(the text a record holds); the specs made from them are read back by ``--input``'s and
``--dim``'s own parsers. One test runs the whole: ``warmscope exec --headless`` writes a
record of a tiny program, and ``warmscope warmup --traffic`` derives its warm-up from it.
"""

from __future__ import annotations

import math
import sys
import textwrap
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.conftest import FACTORIES, warmscope
from warmscope.core.child import exec_watch
from warmscope.core.data import traffic
from warmscope.core.data.run import RunData
from warmscope.core.data.targets import DTYPES, parse_dim, parse_input
from warmscope.core.data.traffic import TrafficError, from_run, infer, parse_signature

DATA = Path(__file__).parent / "data"


@pytest.fixture(scope="module", autouse=True)
def observer_knows_tensors() -> Iterator[None]:
    """``exec_watch._text`` tells a tensor by the type ``install`` gives it."""
    before = exec_watch.Torch.tensor
    exec_watch.Torch.tensor = torch.Tensor
    try:
        yield
    finally:
        exec_watch.Torch.tensor = before


def signature(args: list[Any], kwargs: dict[str, Any]) -> str:
    """A call's signature as the observer writes it (``exec_watch._new_signature``)."""
    parts = [exec_watch._text(a, 0) for a in args]
    parts += [f"{k}={exec_watch._text(v, 0)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def tensor(dtype: str, shape: tuple[int, ...]) -> torch.Tensor:
    return torch.empty(shape, dtype=getattr(torch, dtype))


names = st.sampled_from(["mask", "pos", "y", "attention_mask", "t"])
shapes = st.lists(st.integers(0, 12), max_size=4).map(tuple)
arg_layouts = st.lists(
    st.tuples(st.none() | names, st.sampled_from(DTYPES), st.integers(0, 3)),
    min_size=1,
    max_size=4,
    unique_by=lambda a: a[0] or object(),
).map(lambda xs: sorted(xs, key=lambda a: a[0] is not None))  # positional ones first


def call_of(layout: list[tuple[str | None, str, int]], shapes: list[tuple[int, ...]]) -> str:
    args = [tensor(d, s) for (n, d, _), s in zip(layout, shapes, strict=True) if n is None]
    kwargs = {n: tensor(d, s) for (n, d, _), s in zip(layout, shapes, strict=True) if n}
    return signature(args, kwargs)


# -- one signature ------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(arg_layouts, st.data())
def test_a_signature_reads_back_as_its_tensors(layout: Any, data: st.DataObject) -> None:
    dims = [data.draw(st.lists(st.integers(0, 12), min_size=r, max_size=r)) for _, _, r in layout]
    text = call_of(layout, [tuple(d) for d in dims])
    got = parse_signature(text)
    assert [(a.name, a.dtype, a.shape, a.device) for a in got] == [
        (n, d, tuple(s), "cpu") for (n, d, _), s in zip(layout, dims, strict=True)
    ]


def test_the_device_is_read_after_the_tensor() -> None:
    (arg,) = parse_signature("x=bfloat16[2,3]@cuda:1")
    assert (arg.name, arg.dtype, arg.shape, arg.device) == ("x", "bfloat16", (2, 3), "cuda:1")
    assert parse_signature("float32[]")[0].shape == ()


odd_values = st.sampled_from(
    [1, 2.5, None, "text", True, (torch.ones(2),), [torch.ones(2)], {"k": torch.ones(2)}, ()]
)


@settings(max_examples=100, deadline=None)
@given(st.lists(shapes, min_size=0, max_size=3), odd_values, st.data(), st.booleans())
def test_anything_but_a_tensor_is_refused_naming_the_signature(
    tensors: list[tuple[int, ...]], odd: Any, data: st.DataObject, keyword: bool
) -> None:
    args: list[Any] = [tensor("float32", s) for s in tensors]
    kwargs: dict[str, Any] = {}
    if keyword:
        kwargs["flag"] = odd
    else:
        args.insert(data.draw(st.integers(0, len(args))), odd)
    text = signature(args, kwargs)
    with pytest.raises(TrafficError) as refused:
        infer([text], "Net")
    message = str(refused.value)
    assert f"Net({text})" in message and "not a tensor" in message and "\n" not in message
    assert ("keyword flag" if keyword else "argument") in message


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("complex64[2,3]", "complex64, a dtype --input does not make"),
        ("float32[2,3], " + "float32[4]" * 3 + "…", "cut short"),
        ("", "no arguments"),
        ("x=float32[2], float32[3]", "positional argument after a keyword"),
        ("float32[2]@cuda:0, float32[2]", "tensors on cpu and on cuda:0"),
    ],
)
def test_what_cannot_be_an_input_spec_is_refused_in_one_line(text: str, says: str) -> None:
    with pytest.raises(TrafficError) as refused:
        infer([text], "Net")
    assert says in str(refused.value) and "\n" not in str(refused.value)


# -- the signatures together --------------------------------------------------------------------


@st.composite
def traffic_calls(draw: st.DrawFn) -> tuple[list[Any], list[list[tuple[int, ...]]]]:
    """A layout of tensor arguments and a few calls of it: each axis fixed, varying on its
    own, or varying with another axis (always equal to it), the calls in any order."""
    layout = draw(arg_layouts)
    axes = [(j, k) for j, (_, _, rank) in enumerate(layout) for k in range(rank)]
    count = draw(st.integers(1, 6))
    columns: dict[tuple[int, int], list[int]] = {}
    for axis in axes:
        kind = draw(st.sampled_from(["fixed", "varies", "with"]))
        if kind == "with" and columns:
            columns[axis] = columns[draw(st.sampled_from(sorted(columns)))]
        elif kind == "varies":
            columns[axis] = draw(st.lists(st.integers(1, 9), min_size=count, max_size=count))
        else:
            columns[axis] = [draw(st.integers(0, 9))] * count
    calls = [
        [tuple(columns[(j, k)][i] for k in range(rank)) for j, (_, _, rank) in enumerate(layout)]
        for i in range(count)
    ]
    return layout, calls


@settings(max_examples=200, deadline=None)
@given(traffic_calls())
def test_specs_and_sizes_make_every_signature_seen(drawn: Any) -> None:
    layout, calls = drawn
    texts = list(dict.fromkeys(call_of(layout, shapes) for shapes in calls))  # groups, in order
    specs = infer(texts)
    parsed = [parse_input(s) for s in specs.inputs]
    assert [(p.name, p.dtype, len(p.shape)) for p in parsed] == [(n, d, r) for n, d, r in layout]
    sizes = dict(parse_dim(d) for d in specs.dims)
    assert {name for p in parsed for name in p.symbols} == set(sizes)
    taken: dict[str, list[int]] = {name: [] for name in sizes}
    assignments = set()
    for text in texts:
        args = parse_signature(text)
        assignment: dict[str, int] = {}
        for spec, arg in zip(parsed, args, strict=True):
            for dim, size in zip(spec.shape, arg.shape, strict=True):
                if isinstance(dim, int):
                    assert dim == size
                else:  # a name has one size in a call, one of its --dim sizes
                    assert assignment.setdefault(dim, size) == size and size in sizes[dim]
        for name, size in assignment.items():
            taken[name].append(size)
        assignments.add(tuple(sorted(assignment.items())))
    # Each name's sizes: those the traffic showed, in the order it first showed them.
    assert {name: list(dict.fromkeys(v)) for name, v in taken.items()} == {
        name: list(v) for name, v in sizes.items()
    }
    assert specs.seen == len(assignments) <= specs.combinations
    assert specs.combinations == math.prod(len(v) for v in sizes.values())
    # A name for each way of varying: two names never vary alike.
    columns = [tuple(taken[name]) for name in sizes]
    assert len(set(columns)) == len(columns)
    assert list(sizes) == traffic.names_for(len(sizes))


def test_batch_and_mask_share_their_varying_dimension() -> None:
    texts = [
        signature([tensor("float32", (b, t, 64))], {"mask": tensor("bool", (b, t))})
        for b, t in ((1, 10), (8, 10), (1, 30), (4, 30))
    ]
    specs = infer(texts)
    assert specs.inputs == ("BxTx64", "mask=bool[B,T]")
    assert specs.dims == ("B=1,8,4", "T=10,30")
    assert (specs.seen, specs.combinations) == (4, 6)


def test_past_five_names_every_dimension_is_numbered() -> None:
    assert traffic.names_for(3) == ["B", "T", "C"]
    texts = [f"float32[{','.join(str(v + k) for k in range(6))}]" for v in (1, 2)]
    assert infer(texts).inputs == ("D0xD1xD2xD3xD4xD5",)


@pytest.mark.parametrize(
    "second", ["float32[8,64,1]", "float64[8,64]", "float32[8,64], float32[8]", "x=float32[8,64]"]
)
def test_calls_that_differ_in_their_tensors_are_refused_naming_both(second: str) -> None:
    with pytest.raises(TrafficError) as refused:
        infer(["float32[1,64]", second], "Net")
    message = str(refused.value)
    assert f"Net({second}) and Net(float32[1,64]) differ" in message and "\n" not in message


def test_keywords_in_another_order_are_the_same_call() -> None:
    specs = infer(["float32[1,4], a=int64[1], b=int64[2]", "float32[2,4], b=int64[2], a=int64[2]"])
    assert specs.inputs == ("Bx4", "a=int64[B]", "b=int64[2]")


# -- a record's modules -------------------------------------------------------------------------


def exec_run(groups: list[tuple[int, str, str]], calls: list[int], **kw: Any) -> RunData:
    """A watched process's run as read back: ``groups`` (module, its label, signature)."""
    return RunData(
        mode="exec",
        shape_keys=[f"{label}({sig})" for _, label, sig in groups],
        shape_dims=[
            {"module": m, "cls": f"app.{label.partition('#')[0]}", "signature": sig}
            for m, label, sig in groups
        ],
        shape_of=array("h", calls),
        **kw,
    )


GROUPS = [
    (0, "Net", "float32[1,64]"),
    (1, "Head", "float32[2,8]"),
    (0, "Net", "float32[8,64]"),
    (1, "Head", "float32[5,8]"),
]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 2, 3, -1]), min_size=1, max_size=30))
def test_the_module_called_most_is_taken_its_shapes_in_order(calls: list[int]) -> None:
    run = exec_run(GROUPS, calls)
    known = [k for k in calls if k >= 0]
    if not known:
        with pytest.raises(TrafficError, match="no forward calls"):
            from_run(run, None, "r.jsonl")
        return
    per_module = {m: sum(1 for k in known if GROUPS[k][0] == m) for m in (0, 1)}
    first_called = [GROUPS[k][0] for k in dict.fromkeys(known)]
    most = max(per_module.values())
    want = next(m for m in first_called if per_module[m] == most)
    got = from_run(run, None, "r.jsonl")
    assert got.module.number == want and got.module.calls == most
    assert list(got.signatures) == [
        GROUPS[k][2] for k in dict.fromkeys(known) if GROUPS[k][0] == want
    ]
    assert got.to_json()["module"] == ("Net" if want == 0 else "Head")
    told = got.told(chosen=True)
    assert told[0].startswith(f"traffic    {got.module.label}: {most} call")
    assert any("--module NAME" in line for line in told) == (len(set(first_called)) > 1)


def test_module_named_by_label_or_class() -> None:
    run = exec_run(GROUPS, [0, 2, 0, 1, 3])
    assert from_run(run, "Head", "r").specs.dims == ("B=2,5",)
    assert from_run(run, "app.Head", "r").module.label == "Head"
    with pytest.raises(TrafficError) as refused:
        from_run(run, "Tail", "r")
    assert "no such module" in str(refused.value) and "Net (3 calls), Head (2 calls)" in str(
        refused.value
    )
    twins = exec_run([(0, "Net#0", "float32[1]"), (2, "Net#2", "float32[2]")], [0, 1])
    with pytest.raises(TrafficError, match="2 modules of that class; name one: Net#0, Net#2"):
        from_run(twins, "Net", "r")
    assert from_run(twins, "Net#2", "r").signatures == ("float32[2]",)


def test_the_module_called_most_refused_names_the_others() -> None:
    run = exec_run([(0, "Net", "float32[1,64]"), (1, "Head", "float32[2,8], float")], [1, 1, 0])
    with pytest.raises(TrafficError) as refused:
        from_run(run, None, "r.jsonl")
    assert str(refused.value) == (
        "--traffic r.jsonl: Head(float32[2,8], float): argument 2 is a float, not a tensor; "
        "--module NAME takes another: Net (1 call)"
    )
    with pytest.raises(TrafficError) as named:
        from_run(run, "Head", "r.jsonl")
    assert "--module NAME" not in str(named.value)


def test_a_run_that_is_not_a_watched_program_is_refused() -> None:
    run = exec_run(GROUPS, [0])
    run.mode = "script"
    with pytest.raises(TrafficError, match="not a `warmscope exec` record"):
        from_run(run, None, "r.jsonl")
    quiet = exec_run([], [], exec={"streams": ["other-123.jsonl"]})
    with pytest.raises(TrafficError, match=r"its other processes' records: other-123\.jsonl"):
        from_run(quiet, None, "r.jsonl")


# -- the command line ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--traffic", str(DATA / "speech-script.jsonl")], "not a `warmscope exec` record"),
        (["--traffic", "nothere.jsonl"], "nothere.jsonl"),
        (["--traffic", "r.jsonl", "--input", "2x8"], "not with --input, --inputs or --dim"),
        (["--traffic", "r.jsonl", "--dim", "B=1"], "not with --input, --inputs or --dim"),
        (["--module", "Net"], "--module picks a module of --traffic"),
    ],
)
def test_bad_traffic_usage_is_one_line(
    tmp_path: Path,
    args: list[str],
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from warmscope.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(["warmup", f"{FACTORIES}:tiny", *args]) == 2
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], err


PROGRAM = textwrap.dedent(
    """
    import torch

    class Tiny(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.linear = torch.nn.Linear(8, 4)
        def forward(self, x):
            return torch.relu(self.linear(x))

    class Head(torch.nn.Module):
        def forward(self, x, scale):
            return x * scale

    model, head = Tiny(), Head()
    with torch.no_grad():
        for batch in (3, 1, 3, 5, 1):
            head(model(torch.randn(batch, 8)), 2.0)
        model(torch.randn(2, 8))
    """
)


def test_a_warm_up_from_a_watched_program_s_traffic(tmp_path: Path) -> None:
    """A program's calls recorded by ``warmscope exec``, then its warm-up derived from them:
    the module called most, its batch sizes as ``--dim B`` in the order first seen, served in
    that order; the module whose calls take an ``int`` refused, named."""
    program = tmp_path / "serve.py"
    program.write_text(PROGRAM)
    record = tmp_path / "traffic.jsonl"
    watched = warmscope(
        "exec", "--headless", "--record", str(record), "--", sys.executable, str(program),
        timeout=120,
    )  # fmt: skip
    assert watched.code == 0 and record.exists(), watched.stderr
    result = warmscope(
        "warmup", f"{FACTORIES}:tiny", "--traffic", str(record), "--iters", "8",
        "--repeat", "1", "--quiet", "--record", str(tmp_path / "w"),
        json_path=tmp_path / "w.json", timeout=300,
    )  # fmt: skip
    doc = result.doc
    assert doc is not None and result.code in (0, 3), result.stderr
    told = result.stderr.splitlines()
    assert told[0] == "traffic    Tiny: 6 calls, 4 signatures → --input Bx8 --dim B=3,1,5,2"
    assert (
        told[1] == "traffic    the module called most, of 2 (Head 5): --module NAME picks another"
    )
    assert told[2] == "traffic    served in the order first seen (--serve cycle)"
    assert doc["traffic"] == {
        "record": str(record),
        "module": "Tiny",
        "cls": "__main__.Tiny",
        "calls": 6,
        "signatures": ["float32[3,8]", "float32[1,8]", "float32[5,8]", "float32[2,8]"],
        "inputs": ["Bx8"],
        "dims": ["B=3,1,5,2"],
        "device": "cpu",
        "shapes_seen": 4,
    }
    assert doc["serve"] == "cycle" and doc["served_order"] == ["B=3", "B=1", "B=5", "B=2"]
    assert [s["key"] for s in doc["baseline"]["shapes"]] == ["B=3", "B=1", "B=5", "B=2"]
    warm = doc["candidates"][0]["recipe"]
    assert warm["specs"] == [{"dtype": "float32", "shape": ["B", 8]}]
    assert warm["shapes"] == [{"B": 3}, {"B": 1}, {"B": 5}, {"B": 2}]
    # Served in the traffic's order, so the warm-up runs backwards.
    assert [c["dims"] for c in warm["calls"]] == [{"B": 2}, {"B": 5}, {"B": 1}, {"B": 3}]
    # The other module took a float beside its tensor: refused, its signature named.
    refused = warmscope("warmup", f"{FACTORIES}:tiny", "--traffic", str(record), "--module", "Head")
    assert refused.code == 2
    assert refused.stderr.strip().splitlines() == [
        f"warmscope: --traffic {record}: Head(float32[3,4], float): argument 2 is a float, "
        "not a tensor"
    ]
