"""``.pt2`` targets with real children: AOTInductor packages (built here, where a C++
compiler is) and exported programs whose output types are registered pytree nodes."""

from __future__ import annotations

import platform
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from tests.conftest import AOTI_PROGRAM, TARGETS, warmscope
from warmscope.core.child.outcome import UsageError
from warmscope.core.child.pt2 import aoti_metadata, built_elsewhere, import_modules, load_aoti
from warmscope.core.data.settings import RunSettings, SettingsError

NATIVE = ("--trust-native",)
"""An AOTInductor package runs its compiled library: only with consent."""


def phases(doc: dict) -> dict[str, float]:
    return {p["name"]: p["ms"] for p in doc["phases"]}


def test_an_aoti_package_runs_with_the_inputs_it_records(
    aoti_package: Path, tmp_path: Path, record_dir: Path
) -> None:
    r = warmscope("run", str(aoti_package), *NATIVE, "--iters", "4", json_path=tmp_path / "r.json")
    assert r.code == 0, r.stderr
    assert r.doc is not None
    assert r.doc["target"]["kind"] == "aoti"
    assert r.doc["inputs"] == ["float32[4,16]", "float32[4,8]"]
    loaded = phases(r.doc)
    assert "load" not in loaded and loaded["load package"] > 0
    assert "load package" in r.stdout
    assert len(r.doc["iterations"]) == 4


def test_an_aoti_package_takes_inputs_given_and_refuses_a_mode(
    bare_package: Path, aoti_package: Path, tmp_path: Path, record_dir: Path
) -> None:
    """Inputs given: the package need not record any (its generated C++ gone, what the
    inputs would be read from); a mode is refused as the settings are checked."""
    r = warmscope(
        "run",
        str(bare_package),
        *NATIVE,
        "--input",
        "4x16:ones",
        "--input",
        "4x8:ones",
        "--iters",
        "2",
        json_path=tmp_path / "r.json",
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["inputs_source"] == "spec"
    assert r.doc["inputs"] == ["float32[4,16]", "float32[4,8]"]
    compiled = RunSettings(target=str(aoti_package), trust_native=True, iters=2)
    compiled.set("mode=compile")
    with pytest.raises(SettingsError, match="already compiled: --mode compile does not apply"):
        compiled.resolve()


class NoTorch:
    """A torch that is never to be touched: the refusal comes before torch loads anything."""

    def __getattr__(self, name: str) -> None:
        raise AssertionError(f"torch.{name} used")


def test_an_aoti_package_for_another_device_says_so(aoti_package: Path, tmp_path: Path) -> None:
    """The package's metadata as a CUDA build writes it: refused before torch loads it (a
    refusal in the child is exit 2 and its line, as the bare package's below shows)."""
    moved = tmp_path / "cuda_aoti.pt2"
    with zipfile.ZipFile(aoti_package) as src, zipfile.ZipFile(moved, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            if name.endswith("wrapper_metadata.json"):
                assert b'"AOTI_DEVICE_KEY": "cpu"' in data
                data = data.replace(b'"AOTI_DEVICE_KEY": "cpu"', b'"AOTI_DEVICE_KEY": "cuda"')
            dst.writestr(name, data)
    with pytest.raises(UsageError) as refused:
        load_aoti(NoTorch(), str(moved), "cpu")
    assert "AOTInductor package built for cuda; this run's device is cpu" in str(refused.value)
    assert "--device cuda" in str(refused.value)
    meta = aoti_metadata(str(aoti_package))
    assert built_elsewhere(torch, meta, "cpu") is None
    machine = platform.machine()
    other = {**meta, "AOTI_MACHINE": f"not-{machine}"}
    assert built_elsewhere(torch, other, "cpu") == (
        f"not-{machine}; this machine is {machine}: build the package here"
    )


@pytest.fixture(scope="module")
def encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An exported program whose output is a registered pytree node (one export, shared),
    exported here: this process has torch already, and the children that load it do not
    share its imports."""
    path = tmp_path_factory.mktemp("encoder") / "encoder.pt2"
    sys.path.insert(0, str(TARGETS))
    try:
        import pytree_outputs
    finally:
        sys.path.remove(str(TARGETS))
    pytree_outputs.export_to(str(path))
    return path


def test_an_exported_program_needing_an_importable_module_imports_it(
    encoder: Path, tmp_path: Path, record_dir: Path
) -> None:
    path = encoder
    env = {"PYTHONPATH": str(TARGETS)}
    r = warmscope("run", str(path), "--iters", "3", json_path=tmp_path / "r.json", env=env)
    assert r.code == 0, r.stderr
    assert "imported pytree_outputs to load the exported program" in r.stdout
    assert r.doc is not None and r.doc["inputs"] == ["float32[2,8]"]
    notes = [e for e in r.events("knob") if "pytree_outputs.EncoderOutput" in e["title"]]
    assert notes and notes[0].get("phase") == "load"


def test_an_exported_program_without_its_module_names_torchs_error_and_import(
    encoder: Path, tmp_path: Path, record_dir: Path
) -> None:
    path = encoder
    r = warmscope("run", str(path), "--iters", "3", cwd=tmp_path)
    assert r.code == 2
    line = r.stderr.strip().splitlines()[-1]
    assert "Deserializing pytree_outputs.EncoderOutput in pytree is not registered" in line
    assert "--import" in line and "check the warnings above" not in r.stderr
    given = warmscope("run", str(path), "--import", "pytree_outputs", "--iters", "3", cwd=TARGETS)
    assert given.code == 0, given.stderr
    assert "imported pytree_outputs to load" not in given.stdout


def test_an_import_that_is_no_module_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the child does with ``--import`` before the target loads (a refusal there is exit 2
    and its line, as above), and the name checked before any child starts."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))  # the current folder goes on it
    with pytest.raises(UsageError, match="--import no_such_module_here: no module named "):
        import_modules(["no_such_module_here"])
    bad = RunSettings(target="sample:trivial", imports=["not a module"])
    with pytest.raises(SettingsError, match="bad --import 'not a module'"):
        bad.resolve()


def test_a_damaged_exported_program_shows_torchs_own_error(
    encoder: Path, tmp_path: Path, record_dir: Path
) -> None:
    bad = tmp_path / "damaged.pt2"
    with zipfile.ZipFile(encoder) as src, zipfile.ZipFile(bad, "w") as dst:
        for name in src.namelist():
            data = src.read(name)
            dst.writestr(
                name, b'{"graph_module": 1}' if name.endswith("models/model.json") else data
            )
    r = warmscope("run", str(bad), "--iters", "2")
    assert r.code == 2
    assert "torch.export.load: TypeError:" in r.stderr
    assert "check the warnings above" not in r.stderr


def repack(package: Path, out: Path, *, program: Path | None = None) -> Path:
    """The package without its generated C++ (its compiled library stays), and with an
    exported program's members under its root where one is given: how a package made with
    ``package_pt2(exported_programs=..., aoti_files=...)`` holds both."""
    with zipfile.ZipFile(package) as src, zipfile.ZipFile(out, "w") as dst:
        root = src.namelist()[0].split("/")[0]
        kept = [n for n in src.namelist() if not n.endswith(".cpp")]
        for name in kept:
            dst.writestr(name, src.read(name))
        if program is not None:
            with zipfile.ZipFile(program) as ep:
                for name in ep.namelist():
                    moved = f"{root}/{name.split('/', 1)[1]}"
                    if moved not in kept:
                        dst.writestr(moved, ep.read(name))
    return out


@pytest.fixture(scope="module")
def bare_package(aoti_package: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package without its generated C++: nothing in it says what its inputs are."""
    return repack(aoti_package, tmp_path_factory.mktemp("bare") / "bare.pt2")


def test_an_aoti_package_takes_the_inputs_of_the_program_packaged_with_it(
    aoti_package: Path, bare_package: Path, tmp_path: Path, record_dir: Path
) -> None:
    program = aoti_package.with_name(AOTI_PROGRAM)  # the same model, exported beside it
    both = repack(aoti_package, tmp_path / "both.pt2", program=program)
    r = warmscope("run", str(both), *NATIVE, "--iters", "2", json_path=tmp_path / "r.json")
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["target"]["kind"] == "aoti"
    assert r.doc["inputs"] == ["float32[4,16]", "float32[4,8]"]

    # Without them (given, the bare package runs: above).
    asked = warmscope("run", str(bare_package), *NATIVE, "--iters", "2")
    assert asked.code == 2
    assert "records no fixed input shapes" in asked.stderr and "--input" in asked.stderr
