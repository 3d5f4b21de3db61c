"""Every bad target, input or knob: one line naming it, exit code 2, no traceback.

What the parent decides is checked through ``main()`` in-process (``cli_in_process``: a child
started there fails the test); what only the child can find (it imports the model's code) is
checked on one real child, and each of its messages on the child's loading functions."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.cli_in_process import main_here
from tests.conftest import FACTORIES, warmscope


@pytest.fixture(scope="module")
def archives(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    torch = pytest.importorskip("torch")
    tmp = tmp_path_factory.mktemp("archives")
    model = torch.nn.Linear(4, 2)
    scripted = tmp / "model.pt"
    torch.jit.save(torch.jit.script(model), str(scripted))
    pickled = tmp / "pickled.pt"
    torch.save(model, str(pickled))
    truncated = tmp / "truncated.pt"
    truncated.write_bytes(scripted.read_bytes()[: scripted.stat().st_size // 2])
    not_zip = tmp / "notes.txt"
    not_zip.write_text("hello\n")
    empty_zip = tmp / "empty.pt"
    with zipfile.ZipFile(empty_zip, "w") as zf:
        zf.writestr("readme.txt", "not a model")
    return {
        "scripted": scripted,
        "pickled": pickled,
        "truncated": truncated,
        "not_zip": not_zip,
        "empty_zip": empty_zip,
    }


# Found in the parent: no child is started.
PARENT_CASES = [
    (["missing.pt"], "no such file: missing.pt"),
    ([f"{FACTORIES}:nope"], "defines no 'nope'"),
    (["tests/targets/nofile.py:make"], "no such file"),
    (["sample:nope"], "unknown sample 'nope'"),
    ([f"{FACTORIES}:tiny", "--input", "2x8x"], "bad --input '2x8x'"),
    ([f"{FACTORIES}:tiny", "--input", "complex[2]"], "unknown dtype 'complex'"),
    ([f"{FACTORIES}:tiny", "--set", "nosuch=1"], "unknown knob 'nosuch'"),
    ([f"{FACTORIES}:tiny", "--set", "profiling_exector=off"], "did you mean profiling_executor"),
    (
        [f"{FACTORIES}:tiny", "--set", "profiling_executor=maybe"],
        "profiling_executor: expected on/off",
    ),
    ([f"{FACTORIES}:tiny", "--set", "grad_mode=sometimes"], "grad_mode: 'sometimes' is not one of"),
    ([f"{FACTORIES}:tiny", "--set", "intra_op_threads=0"], "intra_op_threads: must be at least 1"),
    ([f"{FACTORIES}:tiny", "--device", "tpu"], "device: expected cpu, cuda or cuda:N"),
    ([f"{FACTORIES}:tiny", "--set", "fusion_strategy=FAST,2"], "fusion_strategy: expected stages"),
    ([f"{FACTORIES}:tiny", "--iters", "0"], "--iters must be at least 1"),
    ([f"{FACTORIES}:tiny", "--mode", "jit"], "invalid choice: 'jit'"),
    ([f"{FACTORIES}:tiny", "--preset", "fastest"], "invalid choice: 'fastest'"),
    (
        [f"{FACTORIES}:tiny", "--python", "/nonexistent/python"],
        "--python /nonexistent/python: not an executable",
    ),
]


@pytest.mark.parametrize(("args", "message"), PARENT_CASES)
def test_bad_usage_in_the_parent(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    r = main_here(capsys, "run", *args)
    assert r.code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert message in lines[0]
    assert lines[0].startswith("warmscope")
    assert "Traceback" not in r.stderr and r.stdout == ""


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("not_zip", "is not a TorchScript archive"),
        ("empty_zip", "is not a TorchScript archive"),
        ("truncated", "damaged or truncated archive"),
        ("pickled", "pass --trust-pickle"),
    ],
)
def test_bad_archives(
    archives: dict[str, Path], case: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    r = main_here(capsys, "run", str(archives[case]), "--input", "1x4")
    assert r.code == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert message in r.stderr and str(archives[case]) in r.stderr


def test_archive_mode_conflict(
    archives: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    r = main_here(capsys, "run", str(archives["scripted"]), "--input", "1x4", "--mode", "trace")
    assert r.code == 2 and "already scripted" in r.stderr


# Found in the child (it is the one that imports the model's code): still one line, exit 2.
def test_bad_target_found_in_the_child(record_dir: Path) -> None:
    r = warmscope("run", f"{FACTORIES}:not_a_module", "--input", "2x8")
    assert r.code == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "returned int, not a torch.nn.Module" in lines[0], r.stderr


def child_loads(spec: str, *extra: str) -> Any:
    """What the child's loading makes of ``spec``: the config the parent would send it (its
    own ``agent_config``), then the child's ``load_model`` and ``make_feeds``, here."""
    torch = pytest.importorskip("torch")
    from warmscope.cli import make_parser
    from warmscope.cli.options import build_settings
    from warmscope.core.child import loading
    from warmscope.core.data.targets import resolve_target
    from warmscope.core.run.child_setup import agent_config

    settings = build_settings(make_parser("run").parse_args([spec, *extra]))
    target = resolve_target(spec)
    cfg = agent_config(
        settings,
        target,
        "eager",
        markers=False,
        marker_secret="",
        trace_prefix="",
        ring_fd=-1,
        ring_slots=0,
        separate_profiles=True,
    )
    _model, examples = loading.load_model(torch, cfg["target"], "cpu", None)  # type: ignore[arg-type]
    return loading.make_feeds(torch, cfg, examples, "cpu")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([f"{FACTORIES}:not_a_module", "--input", "2x8"], "returned int, not a torch.nn.Module"),
        (["no_such_package.models:make"], "no module named 'no_such_package'"),
        ([f"{FACTORIES}:tiny"], "has no example inputs: pass --input SPEC"),
    ],
)
def test_the_childs_loading_names_a_bad_target(
    args: list[str], message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from warmscope.core.child.outcome import UsageError

    # The child's loading puts the target's folder on sys.path and its module in sys.modules:
    # neither stays in this process.
    monkeypatch.setattr(sys, "path", list(sys.path))
    before = set(sys.modules)
    try:
        with pytest.raises(UsageError) as info:
            child_loads(*args)
    finally:
        for name in set(sys.modules) - before:
            if name.startswith("_warmscope_target_"):
                del sys.modules[name]
    assert message in str(info.value) and "\n" not in str(info.value)


def test_verbose_shows_the_traceback() -> None:
    r = warmscope("run", "missing.pt", "--verbose")
    assert r.code != 0 and "Traceback" in r.stderr


def test_trusted_pickle_and_archive_run(archives: dict[str, Path], record_dir: Path) -> None:
    for path, extra in ((archives["pickled"], ["--trust-pickle"]), (archives["scripted"], [])):
        r = warmscope("run", str(path), "--input", "1x4", "--iters", "3", "--no-explain", *extra)
        assert r.code == 0, r.stderr
        assert "iterations 3" in r.stdout
