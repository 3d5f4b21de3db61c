"""``--runtime cpp`` on an AOTInductor package: compiled here by torch
(``aoti_compile_and_package`` on CPU), loaded by ``AOTIModelPackageLoader`` in the C++ agent,
fed the inputs its compiled wrapper checks for, or those given."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import warmscope


@pytest.fixture(scope="module")
def package(cpp_agent: Path, aoti_package: Path) -> Path:
    """The test run's two-input package (conftest), with the C++ agent built to run it."""
    return aoti_package


def test_a_package_runs_in_cpp_with_the_inputs_it_records(
    package: Path, tmp_path: Path, record_dir: Path
) -> None:
    """No --input: the wrapper's own input checks give each input's dtype and sizes; the
    package's load is its own phase; the start-up has no interpreter in it."""
    r = warmscope(
        "run",
        str(package),
        "--runtime",
        "cpp",
        "--trust-native",
        "--iters",
        "20",
        "--no-explain",
        json_path=tmp_path / "r.json",
    )
    assert r.code == 0, r.stderr
    doc = r.doc
    assert doc is not None and doc["target"]["kind"] == "aoti"
    assert doc["inputs"] == ["float32[4,16]", "float32[4,8]"]
    phases = {p["name"]: p["ms"] for p in doc["phases"]}
    assert {"start to main", "load package", "inputs"} <= set(phases)
    assert "load" not in phases and "import torch" not in phases
    assert doc["env"]["runtime"] == "cpp"
    assert len(doc["iterations"]) == 20


def test_a_package_takes_inputs_given_positionally_and_refuses_names(
    package: Path, tmp_path: Path, record_dir: Path
) -> None:
    r = warmscope(
        "run",
        str(package),
        "--runtime",
        "cpp",
        "--trust-native",
        "--input",
        "4x16:ones",
        "--input",
        "4x8:zeros",
        "--iters",
        "3",
        "--no-explain",
        json_path=tmp_path / "r.json",
    )
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["inputs"] == ["float32[4,16]", "float32[4,8]"]
    named = warmscope(
        "run",
        str(package),
        "--runtime",
        "cpp",
        "--trust-native",
        "--input",
        "x=4x16",
        "--iters",
        "2",
    )
    assert named.code == 2
    assert "positionally" in named.stderr and len(named.stderr.strip().splitlines()) == 1


def test_a_package_fed_the_wrong_shape_fails_with_the_packages_own_check(
    package: Path, tmp_path: Path, record_dir: Path
) -> None:
    r = warmscope(
        "run",
        str(package),
        "--runtime",
        "cpp",
        "--trust-native",
        "--input",
        "4x15",
        "--input",
        "4x8",
        "--iters",
        "3",
        "--no-explain",
        json_path=tmp_path / "r.json",
    )
    assert r.code == 1
    assert r.doc is not None and r.doc["status"] == "failed"
