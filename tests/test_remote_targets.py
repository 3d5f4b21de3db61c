"""``--host``: a file target is a path on the remote, checked and loaded there.

The remote is the loopback SSH server of ``tests/ssh_server.py``: its commands run in a home
folder of their own, so a relative path names a file there and not in the test's folder.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import FACTORIES, Result, warmscope
from tests.ssh_server import Server, ssh_server
from warmscope.core.child import target_files
from warmscope.core.data.reading import read_run
from warmscope.core.data.settings import RunSettings, SettingsError
from warmscope.core.data.targets import TargetError, resolve_target
from warmscope.core.output.warmup_verdict import is_verified
from warmscope.core.run import remote_target

PYTHON = sys.executable  # the remote interpreter: this one, which has torch
HOST = "127.0.0.1"
needs_ssh = pytest.mark.skipif(shutil.which("ssh") is None, reason="no OpenSSH client")


def _archives(folder: Path) -> dict[str, Path]:
    """A TorchScript archive, a pickled module, a truncated archive, a zip of nothing."""
    import torch

    folder.mkdir(parents=True, exist_ok=True)
    model = torch.nn.Linear(4, 2)
    paths = {name: folder / f"{name}.pt" for name in ("scripted", "pickled", "truncated", "empty")}
    torch.jit.save(torch.jit.script(model), str(paths["scripted"]))
    torch.save(model, str(paths["pickled"]))
    data = paths["scripted"].read_bytes()
    paths["truncated"].write_bytes(data[: len(data) // 2])
    with zipfile.ZipFile(paths["empty"], "w") as zf:
        zf.writestr("readme.txt", "not a model")
    return paths


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with ssh_server(tmp_path_factory.mktemp("ssh")) as running:
        _archives(running.home / "models")
        shutil.copy(FACTORIES, running.home / "factories.py")
        yield running


def _over_host(server: Server, *args: str, cwd: Path, **kw: str) -> tuple[int, str, str]:
    result = warmscope(
        *args, "--host", HOST, "--python", PYTHON, env=server.env(**kw), cwd=cwd, timeout=120
    )
    return result.code, result.stdout, result.stderr


def _refused_here(
    server: Server,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    *args: str,
    cwd: Path,
) -> tuple[int, str]:
    """``warmscope ARGS --host`` through the command line's own ``main``, in this process: a
    target refused there ends the command before any run starts, so no child is needed to
    see its exit code and its line (one real ``warmscope`` process says it too:
    ``test_an_unreachable_host_is_one_line``)."""
    from warmscope.cli import main

    monkeypatch.chdir(cwd)
    monkeypatch.setenv("WARMSCOPE_SSH_OPTIONS", server.options())
    capsys.readouterr()
    code = main([*args, "--host", HOST, "--python", PYTHON])
    return code, capsys.readouterr().err


# -- over the loopback ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def warmup_there(server: Server, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Result]:
    """``warmscope warmup`` over --host on an archive that exists only there (one run of it,
    read by the tests of a run on a file there and of the warm-up): every process (the
    baseline and each candidate's) runs there, on the archive named relative to the remote
    home; each candidate from its recipe sent along (the interpreter there cannot open the
    test's folder, where the candidates are written). One process per cell (``--repeat 1``),
    one candidate (the profiling executor off from the start: no "profiling off" candidate):
    what is checked is where each process ran and what it read, not the verdict's intervals."""
    tmp_path = tmp_path_factory.mktemp("warmup")
    python = server.python_hiding(PYTHON, tmp_path)
    result = warmscope(
        "warmup",
        "models/scripted.pt",
        "--input",
        "1xTx4",
        "--dim",
        "T=2,3",
        "--iters",
        "20",
        "--repeat",
        "1",
        "--set",
        "profiling_executor=off",
        "--host",
        HOST,
        "--python",
        python,
        "--emit",
        str(tmp_path / "recipe.py"),
        "--quiet",
        json_path=tmp_path / "warmup.json",
        env={**server.env(), "WARMSCOPE_RECORD_DIR": str(tmp_path / "records")},
        cwd=tmp_path,
        timeout=300,
    )
    return tmp_path, result


@needs_ssh
def test_an_archive_that_exists_only_there_runs_over_host(
    server: Server, warmup_there: tuple[Path, Result], tmp_path: Path
) -> None:
    folder, result = warmup_there
    records = sorted((folder / "records").rglob("*.jsonl"))
    assert records, result.stderr
    for record in records:
        header = json.loads(record.read_text().splitlines()[0])
        assert header["mode"] == "script"  # told from the file there: a TorchScript archive
        assert header["target"]["kind"] == "archive"
        assert header["target"]["path"] == str((server.home / "models" / "scripted.pt").resolve())
        assert read_run(record).status == "ok"
    here = warmscope("run", "models/scripted.pt", "--input", "1x4", "--iters", "5", cwd=tmp_path)
    assert here.code == 2 and here.stderr.strip() == "warmscope: no such file: models/scripted.pt"
    assert server.left() == []


@needs_ssh
def test_a_factory_file_there_runs_over_host(server: Server, tmp_path: Path) -> None:
    code, stdout, stderr = _over_host(
        server, "run", "factories.py:tiny", "--input", "2x8", "--iters", "3", cwd=tmp_path
    )
    assert code == 0, stderr
    assert "iterations 3" in stdout
    assert server.left() == []


@needs_ssh
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["models/missing.pt"], "no such file there: models/missing.pt"),
        (["./models/missing.pt"], "no such file there: models/missing.pt"),
        (["models"], "not a file there: models"),
        (["nowhere/f.py:tiny"], "no such file there: nowhere/f.py"),
        (["factories.py:absent"], "factories.py defines no 'absent' at top level"),
        (["models/pickled.pt"], "models/pickled.pt is a pickled module"),
        (["models/truncated.pt"], "models/truncated.pt is a damaged or truncated archive"),
        (["models/empty.pt"], "models/empty.pt is not a TorchScript archive"),
        (["models/scripted.pt", "--mode", "trace"], "already scripted: --mode trace"),
    ],
)
def test_a_bad_target_there_is_one_line_naming_the_host(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    code, stderr = _refused_here(
        server, monkeypatch, capsys, "run", *args, "--input", "1x4", cwd=tmp_path
    )
    lines = stderr.strip().splitlines()
    assert code == 2, stderr
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    assert message in lines[0]
    if "--mode" not in args:
        assert lines[0].startswith(f"warmscope: --host {HOST}: ")
    assert server.left() == []


@needs_ssh
def test_a_local_file_of_that_name_is_not_looked_at(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The test's folder has ``only_here/`` holding an archive; the remote has none."""
    _archives(tmp_path / "only_here")
    code, stderr = _refused_here(
        server, monkeypatch, capsys, "run", "only_here/scripted.pt", "--input", "1x4", cwd=tmp_path
    )
    assert code == 2
    assert stderr.strip() == f"warmscope: --host {HOST}: no such file there: only_here/scripted.pt"


@needs_ssh
def test_a_pickle_runs_there_when_trusted(server: Server, tmp_path: Path) -> None:
    code, stdout, stderr = _over_host(
        server,
        "run",
        "models/pickled.pt",
        "--trust-pickle",
        "--input",
        "1x4",
        "--iters",
        "3",
        cwd=tmp_path,
    )
    assert code == 0, stderr
    assert "iterations 3" in stdout


@needs_ssh
def test_an_unreachable_host_is_one_line(server: Server, tmp_path: Path) -> None:
    code, _, stderr = _over_host(
        server, "run", "models/scripted.pt", cwd=tmp_path, key=server.key.with_name("stranger")
    )
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1, stderr
    assert lines[0].startswith(f"warmscope: --host {HOST}: ssh failed: "), stderr


@needs_ssh
def test_the_answer_is_asked_once_per_host_and_options(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A second resolve of the same target reads the kept answer: the file, since removed
    there, is not looked at again; other ssh options are another question."""
    there = server.home / "models" / "once.pt"
    shutil.copy(server.home / "models" / "scripted.pt", there)
    monkeypatch.setenv("WARMSCOPE_SSH_OPTIONS", server.options())
    settings = RunSettings(target="models/once.pt", host=HOST, python=PYTHON, inputs=["1x4"])
    first = remote_target.resolve(settings)
    assert (first.kind, first.path) == ("archive", str(there.resolve()))
    there.unlink()
    assert remote_target.resolve(settings.copy()) == first
    monkeypatch.setenv("WARMSCOPE_SSH_OPTIONS", server.options() + " -o ConnectionAttempts=1")
    with pytest.raises(SettingsError, match=r"no such file there: models/once\.pt"):
        remote_target.resolve(settings)


def test_the_settings_screens_check_opens_no_connection(monkeypatch: pytest.MonkeyPatch) -> None:
    """``check_here`` takes a path target on --host on trust (the run checks it there); a
    host nobody answers for shows that no connection was tried."""
    monkeypatch.setenv("WARMSCOPE_SSH_OPTIONS", "-p 9 -o ConnectTimeout=1")
    settings = RunSettings(target="models/m.pt", host="192.0.2.1", inputs=["1x4"])
    settings.check_here()
    with pytest.raises(SettingsError, match=r"--host 192\.0\.2\.1: ssh failed"):
        remote_target.resolve(settings)
    settings.target = "pkg.models:build"  # a module stays a module imported there
    assert settings.resolve().kind == "module"
    settings.target = "sample:nope"
    with pytest.raises(SettingsError, match="unknown sample"):
        settings.check_here()


def test_the_settings_form_takes_a_path_there_without_asking_the_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The TUI's form checks on the UI thread: a file target on --host is the run's to check."""
    from textual.pilot import Pilot
    from textual.widgets import Input

    from tests.tui_support import run
    from warmscope.tui.app import build_app
    from warmscope.tui.screens.settings_screen import SettingsScreen

    monkeypatch.setenv("WARMSCOPE_SSH_OPTIONS", "-p 9 -o ConnectTimeout=1")
    app = build_app(records=[Path(__file__).parent / "data" / "speech-script.jsonl"])
    chosen = RunSettings(target="sample:trivial", host="192.0.2.1", inputs=["1x4"])

    async def scenario(pilot: Pilot) -> None:
        app.state.next_settings = chosen
        await pilot.press("e")
        form = app.screen
        assert isinstance(form, SettingsScreen)
        form.query_one("#field-target", Input).value = "models/m.pt"
        settings = form.build()
        assert (settings.target, settings.host) == ("models/m.pt", "192.0.2.1")
        with pytest.raises(SettingsError, match="ssh failed"):
            remote_target.resolve(settings)  # what the run's start does
        await pilot.press("escape")

    run(app, scenario)


def test_with_a_host_a_local_folder_does_not_make_a_file_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Here, ``models:build`` names the file ``models`` when it exists; over --host the local
    disk says nothing: a module imported there."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").write_text("def build(): pass\n")
    assert RunSettings(target="models:build").resolve().kind == "file"
    assert RunSettings(target="models:build", host="gpu-box").resolve().kind == "module"


# -- the checks themselves, here ---------------------------------------------------------------


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return _archives(tmp_path_factory.mktemp("local"))


def test_archive_kinds_are_told_from_the_file(local: dict[str, Path], tmp_path: Path) -> None:
    kinds = {name: target_files.archive_kind(str(path)) for name, path in local.items()}
    assert kinds == {
        "scripted": "torchscript",
        "pickled": "pickle",
        "truncated": "corrupt",
        "empty": "unknown",
    }
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    assert target_files.archive_kind(str(notes)) == "unknown"


def test_archive_answers_how_to_load_it(local: dict[str, Path]) -> None:
    found = target_files.archive(str(local["scripted"]), trust_pickle=False)
    assert found == {
        "kind": "archive",
        "path": str(local["scripted"].resolve()),
        "factory": None,
        "default_mode": "script",
    }
    assert target_files.archive(str(local["pickled"]), trust_pickle=True)["kind"] == "pickle"
    with pytest.raises(target_files.Refused, match="pass --trust-pickle"):
        target_files.archive(str(local["pickled"]), trust_pickle=False)


def test_file_factory_reads_names_without_running_the_file(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "raise SystemExit('never run')\n"
        "try:\n    from fast import build\nexcept ImportError:\n    def build(): pass\n"
        "size: int = 3\n"
    )
    for name in ("build", "size"):
        assert target_files.file_factory(str(source), name)["factory"] == name
    with pytest.raises(target_files.Refused, match="defines no 'other'"):
        target_files.file_factory(str(source), "other")
    source.write_text("def build(:\n")
    with pytest.raises(target_files.Refused, match=r"m.py:1: syntax error"):
        target_files.file_factory(str(source), "build")


def test_the_program_answers_one_request_with_the_standard_library_alone(
    local: dict[str, Path],
) -> None:
    """As the remote runs it: ``python -I -S``, a request on stdin, one answer line; a
    relative path is taken from the folder it runs in."""
    answers = []
    for request in ({"path": "scripted.pt"}, {"path": "pickled.pt"}, {"path": "gone.pt"}):
        done = subprocess.run(
            [PYTHON, "-I", "-S", target_files.__file__],
            input=json.dumps(request) + "\n",
            capture_output=True,
            text=True,
            cwd=local["scripted"].parent,
            timeout=30,
        )
        assert done.returncode == 0 and done.stderr == "", done.stderr
        assert len(done.stdout.splitlines()) == 1
        answers.append(json.loads(done.stdout))
    assert answers[0] == {"target": target_files.archive(str(local["scripted"]), False)}
    assert answers[1]["error"].startswith("pickled.pt is a pickled module")
    assert answers[2] == {"error": "no such file there: gone.pt"}


def test_here_a_refused_file_is_a_target_error_in_the_same_words() -> None:
    with pytest.raises(TargetError, match=r"^no such file: nowhere/m\.pt$"):
        resolve_target("./nowhere/m.pt")
    with pytest.raises(TargetError, match="defines no 'absent' at top level"):
        resolve_target(f"{FACTORIES}:absent")


@needs_ssh
def test_warmup_over_host_derives_and_verifies_a_recipe_for_a_file_there(
    server: Server, warmup_there: tuple[Path, Result]
) -> None:
    """``warmscope warmup`` end to end over --host (``warmup_there``): each candidate's
    process read its recipe from the copy sent along."""
    tmp_path, result = warmup_there
    doc_path = tmp_path / "warmup.json"
    assert doc_path.exists(), result.stderr
    doc = json.loads(doc_path.read_text())
    assert result.code == (0 if is_verified(doc["verdict"]) else 3), result.stderr
    assert doc["mode"] == "script" and doc["candidates"]
    assert (tmp_path / "recipe.py").is_file()
    records = sorted((tmp_path / "records").rglob("*.jsonl"))
    assert records
    candidates = 0
    for record in records:  # every process ran there, on the file there
        header = json.loads(record.read_text().splitlines()[0])
        assert header["target"]["path"] == str((server.home / "models" / "scripted.pt").resolve())
        recipe = header["settings"].get("recipe")
        if recipe:  # a candidate's: its recipe, written here, read from the copy sent there
            candidates += 1
            data = read_run(record)
            assert data.status == "ok", data.status_detail
            there = Path(data.env["shipped"]["recipe"])  # type: ignore[index]
            assert there.name == Path(recipe).name and there.parent.name == "0"
            assert there.parents[2].parent == server.remote_tmp.resolve()
    assert candidates > 0
    assert server.left() == []
