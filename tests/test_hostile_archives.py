"""Archives handed over by someone else: checked from their central directory in the parent,
before any child loads them. Every file is a real zip, and the runs are real ``warmscope run``
processes: a member that climbs out of its folder, a package whose compiled library has a
constructor, a 1 MB zip bomb, a package under another name."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
import zipfile
from pathlib import Path

import pytest

from tests.conftest import warmscope
from warmscope.core.child import target_files

COMPILER = shutil.which("gcc") or shutil.which("cc")
BOMB_BYTES = 1 << 30


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def climbing_package(path: Path, landing: Path) -> None:
    """Two members, as the attacker's ``model.pt``: a package's file, and one whose name climbs
    from the package's model folder to ``landing`` (an absolute path)."""
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("m/data/aotinductor/model/x.wrapper.cpp", "int x;\n")
        zf.writestr("m/data/aotinductor/model/" + "../" * 40 + str(landing).lstrip("/"), "hi\n")


@pytest.mark.parametrize("name", ["model.pt", "model.pt2"])
def test_a_member_that_climbs_out_of_its_folder_writes_nothing(
    name: str, tmp_path: Path, record_dir: Path
) -> None:
    landing = tmp_path / "outside" / "TRAVERSED.txt"
    package = tmp_path / name
    climbing_package(package, landing)
    r = warmscope("run", str(package), "--iters", "1")
    assert not landing.exists() and not landing.parent.exists()
    assert r.code == 2
    line = one_line(r.stderr)
    assert "climbs out of its folder" in line and "TRAVERSED.txt" in line


def native_package(path: Path, marker: Path, tmp_path: Path) -> None:
    """An AOTInductor package's layout around a library whose constructor writes ``marker``:
    what ``dlopen`` of it runs, before torch looks for any symbol."""
    source = tmp_path / "planted.c"
    source.write_text(
        "#include <stdio.h>\n"
        "__attribute__((constructor)) static void planted(void) {\n"
        f'  FILE *f = fopen("{marker}", "w"); if (f) {{ fputs("ran", f); fclose(f); }}\n'
        "}\n"
    )
    library = tmp_path / "planted.so"
    assert COMPILER is not None
    subprocess.run([COMPILER, "-shared", "-fPIC", "-o", library, source], check=True)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("pkg/archive_format", "pt2")
        zf.writestr(
            "pkg/data/aotinductor/model/x.wrapper_metadata.json", '{"AOTI_DEVICE_KEY": "cpu"}'
        )
        zf.write(library, "pkg/data/aotinductor/model/x.wrapper.so")


@pytest.mark.skipif(COMPILER is None, reason="no C compiler to build the planted library")
def test_a_packages_native_code_runs_only_with_trust_native(
    tmp_path: Path, record_dir: Path
) -> None:
    marker = tmp_path / "CONSTRUCTOR_RAN"
    package = tmp_path / "model.pt2"
    native_package(package, marker, tmp_path)
    refused = warmscope("run", str(package), "--iters", "1")
    assert not marker.exists(), "the package's library ran without consent"
    assert refused.code == 2
    line = one_line(refused.stderr)
    assert "AOTInductor package" in line and "x.wrapper.so" in line
    assert "--trust-native" in line

    # Under another name, the same bytes are refused even with consent: a package is a .pt2.
    disguised = tmp_path / "model.pt"
    disguised.write_bytes(package.read_bytes())
    named = warmscope("run", str(disguised), "--trust-native", "--iters", "1")
    assert not marker.exists() and named.code == 2
    assert "not named .pt2" in one_line(named.stderr)

    # With consent it is loaded as torch loads a package: its library runs (and, not being a
    # real model, fails to load, in one line).
    trusted = warmscope("run", str(package), "--trust-native", "--iters", "1")
    assert marker.exists() and trusted.code == 2
    assert "cannot load this AOTInductor package" in trusted.stderr


def deflated_bomb(path: Path, member: str, extra: dict[str, bytes]) -> None:
    """A 1 MB zip whose ``member`` inflates to 1 GiB of spaces (level 6 packs spaces as
    tightly as 9 does, in half the time)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
        for name, data in extra.items():
            zf.writestr(name, data)
        with zf.open(member, "w", force_zip64=True) as f:
            chunk = b" " * (1 << 20)
            for _ in range(BOMB_BYTES // len(chunk)):
                f.write(chunk)


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("bombs")
    script = tmp / "model.pt"
    deflated_bomb(
        script,
        "b/code/__torch__/m.py",
        {"b/data.pkl": b"\x80\x02}q\x00.", "b/constants.pkl": b"\x80\x02)."},
    )
    program = tmp / "model.pt2"
    deflated_bomb(program, "b/models/model.json", {"b/archive_format": b"pt2"})
    # An inputs file is any zip: the script's bomb serves (each bomb is seconds of deflate).
    return {"script": script, "program": program, "inputs": script}


@pytest.mark.parametrize("kind", ["script", "program"])
def test_a_one_megabyte_zip_bomb_is_refused_in_one_line(
    kind: str, bombs: dict[str, Path], record_dir: Path
) -> None:
    bomb = bombs[kind]
    assert bomb.stat().st_size < 2 << 20
    # The check itself, from the central directory: nothing is inflated.
    with pytest.raises(target_files.Refused, match="zip bomb"):
        target_files.archive(str(bomb), trust_pickle=False)
    t0 = time.monotonic()
    r = warmscope("run", str(bomb), "--input", "2x8", "--iters", "1", timeout=60)
    assert time.monotonic() - t0 < 60
    assert r.code == 2
    line = one_line(r.stderr)
    assert "1024.0 MiB" in line and "zip bomb" in line


def test_an_inputs_file_that_is_a_zip_bomb_is_refused(
    bombs: dict[str, Path], record_dir: Path
) -> None:
    with pytest.raises(target_files.Refused, match="zip bomb"):
        target_files.check_zip(str(bombs["inputs"]))
    r = warmscope("run", "sample:trivial", "--inputs", str(bombs["inputs"]), timeout=60)
    assert r.code == 2
    assert "--inputs" in one_line(r.stderr) and "zip bomb" in r.stderr


def test_links_absolute_names_and_odd_compression_are_refused(tmp_path: Path) -> None:
    def made(name: str, info: zipfile.ZipInfo) -> Path:
        path = tmp_path / name
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("m/code/__torch__/m.py", "x = 1\n")
            zf.writestr(info, "target")
        return path

    link = zipfile.ZipInfo("m/code/link")
    link.external_attr = 0o120777 << 16
    absolute = zipfile.ZipInfo("/etc/cron.d/planted")
    bzip = zipfile.ZipInfo("m/code/other.py")
    bzip.compress_type = zipfile.ZIP_BZIP2
    cases = {
        "link.pt": (link, "is a symbolic link"),
        "absolute.pt": (absolute, "is an absolute path"),
        "bzip.pt": (bzip, "compressed with method 12"),
    }
    for name, (info, why) in cases.items():
        with pytest.raises(target_files.Refused, match=why):
            target_files.archive(str(made(name, info)), trust_pickle=False)


def test_members_that_share_their_bytes_are_refused(tmp_path: Path) -> None:
    """Many central-directory entries over one member's bytes (an overlapping zip bomb)."""
    path = tmp_path / "overlap.pt"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("m/code/__torch__/a.py", b"x" * 4096)
    data = bytearray(path.read_bytes())
    start = data.index(b"PK\x01\x02")
    end = data.index(b"PK\x05\x06")
    entry = bytes(data[start:end])
    copies = [entry.replace(b"a.py", f"{n:04d}"[:4].encode()) for n in range(100)]
    directory = b"".join(copies)
    tail = bytearray(data[end:])
    tail[8:10] = tail[10:12] = len(copies).to_bytes(2, "little")
    tail[12:16] = len(directory).to_bytes(4, "little")
    path.write_bytes(bytes(data[:start]) + directory + bytes(tail))
    assert len(zipfile.ZipFile(path).namelist()) == 100
    with pytest.raises(target_files.Refused, match="share their bytes"):
        target_files.archive(str(path), trust_pickle=False)


def test_real_archives_pass_the_checks(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(4, 2)
    scripted = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(model), str(scripted))
    program = tmp_path / "model.pt2"
    torch.export.save(torch.export.export(model, (torch.randn(1, 4),)), str(program))
    assert target_files.archive(str(scripted), trust_pickle=False)["kind"] == "archive"
    assert target_files.archive(str(program), trust_pickle=False)["kind"] == "export"
    assert os.path.getsize(program) > 0
