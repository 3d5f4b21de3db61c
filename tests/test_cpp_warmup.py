"""``warmup --runtime cpp``: the candidates are C++ files (``--emit-cpp``'s form), each built
into the library the C++ agent runs as its ``recipe`` phase and verified in fresh C++
processes; the file handed over is the one verified, and it builds and runs on its own."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import warmscope
from warmscope.core.output.recipe import split_header
from warmscope.core.output.recipe_cpp import build_command
from warmscope.core.output.warmup_verdict import is_verified
from warmscope.core.run import cpp_build


@pytest.fixture(scope="module")
def warmed(cpp_agent: Path, cpp_archives: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("cpp_warmup")
    emitted = folder / "recipe.cpp"
    # A folder named to break out of a comment: its command must not reach the built recipe.
    hostile = folder / 'q"""\nstatic int pwned = system("touch PWNED");\n\\'
    hostile.mkdir()
    shutil.copyfile(cpp_archives / "speech.pt", hostile / "speech.pt")
    r = warmscope(
        "warmup",
        str(hostile / "speech.pt"),
        "--runtime",
        "cpp",
        "--input",
        "1xTx40",
        "--dim",
        "T=100,200",
        "--repeat",
        "2",
        "--iters",
        "30",
        "--set",
        "intra_op_threads=1",
        "--set",
        "graph_optimizer=off",
        "--emit-cpp",
        str(emitted),
        "--record",
        str(folder / "records"),
        json_path=folder / "warmup.json",
        timeout=900,
    )
    assert r.code in (0, 3), r.stderr  # verified or not, with 2 processes each: both honest
    assert r.doc is not None
    return {
        "doc": r.doc,
        "emitted": emitted,
        "stdout": r.stdout,
        "folder": folder,
        "cwd": Path.cwd(),
    }


def test_candidates_are_cpp_files_verified_in_cpp_processes(warmed: dict) -> None:
    doc = warmed["doc"]
    live = [c for c in doc["candidates"] if c["verdict"] != "not verified" or c.get("processes")]
    assert {c["label"] for c in live} == {"warm-up calls", "profiling off"}
    for c in live:
        assert c["file"].endswith(".cpp")
        assert [p["status"] for p in c["processes"]] == ["ok", "ok"]
        assert c["startup_ms"]["median"] > 0  # its prepare(), timed as the recipe phase
    # The baseline's first call of a shape is the profiling executor's (the graph optimizer
    # off: 2.6× in one run here); a recipe's is not.
    baseline = {s["key"]: s["ratio"]["median"] for s in doc["baseline"]["shapes"]}
    assert max(baseline.values()) > 2
    assert "libtorch" in warmed["stdout"]


def test_the_emitted_file_is_the_verified_one_and_runs_outside_warmscope(
    warmed: dict, cpp_archives: Path
) -> None:
    doc = warmed["doc"]
    chosen = next(c for c in doc["candidates"] if c["label"] == doc["chosen"])
    emitted: Path = warmed["emitted"]
    # The very file verified, under a header that states its verdict, in C++.
    header, body = split_header(emitted.read_text())
    assert body == split_header(Path(chosen["file"]).read_text())[1]
    assert "cpp runtime" in header and ("NOT verified" in header) != is_verified(doc["verdict"])
    assert "torch::jit::setGraphExecutorOptimize(false);" in body  # --set graph_optimizer=off
    torch = cpp_build.locate_torch(None)
    binary = warmed["folder"] / "recipe"
    built = subprocess.run(
        build_command(str(emitted), str(binary), str(torch.root), cxx11_abi=True),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    ran = subprocess.run(
        [str(binary), str(cpp_archives / "speech.pt")], capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stderr
    lines = ran.stdout.splitlines()
    assert lines[0].startswith("prepared in ")
    assert [ln.split()[1] for ln in lines[1:]] == ["T=200", "T=100"]
    # Loaded by the agent in every verified process, built and run here: the name ran nowhere.
    assert not list(warmed["folder"].rglob("PWNED")) and not (warmed["cwd"] / "PWNED").exists()
