"""Archives handed over by someone else: checked from their central directory in the parent,
before any child loads them. Every file is a real zip: a member that climbs out of its folder,
a package whose compiled library has a constructor, a 1 MB zip bomb, a package under another
name. What the parent refuses is refused by ``warmscope run``'s ``main()`` in-process (a child
started there fails the test), and by a real process for the zip bomb; the package that is
trusted runs in a real child."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import time
import zipfile
import zlib
from pathlib import Path

import pytest

from tests.cli_in_process import main_here
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
    name: str, tmp_path: Path, record_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    landing = tmp_path / "outside" / "TRAVERSED.txt"
    package = tmp_path / name
    climbing_package(package, landing)
    r = main_here(capsys, "run", str(package), "--iters", "1")
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
    tmp_path: Path, record_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    marker = tmp_path / "CONSTRUCTOR_RAN"
    package = tmp_path / "model.pt2"
    native_package(package, marker, tmp_path)
    refused = main_here(capsys, "run", str(package), "--iters", "1")
    assert not marker.exists(), "the package's library ran without consent"
    assert refused.code == 2
    line = one_line(refused.stderr)
    assert "AOTInductor package" in line and "x.wrapper.so" in line
    assert "--trust-native" in line

    # Under another name, the same bytes are refused even with consent: a package is a .pt2.
    disguised = tmp_path / "model.pt"
    disguised.write_bytes(package.read_bytes())
    named = main_here(capsys, "run", str(disguised), "--trust-native", "--iters", "1")
    assert not marker.exists() and named.code == 2
    assert "not named .pt2" in one_line(named.stderr)

    # With consent it is loaded as torch loads a package, in a real child: its library runs
    # (and, not being a real model, fails to load, in one line).
    trusted = warmscope("run", str(package), "--trust-native", "--iters", "1")
    assert marker.exists() and trusted.code == 2
    assert "cannot load this AOTInductor package" in trusted.stderr


SPACES = b" " * (1 << 20)


def _spaces_deflated() -> tuple[bytes, int]:
    """A raw deflate stream of ``BOMB_BYTES`` spaces (level 6 packs spaces as tightly as 9
    does) and their CRC-32, without deflating a GiB: one MiB deflated, ended by a full flush
    (on a byte, nothing carried over to what follows), is repeated; a final empty block ends
    the stream. What inflates is the same GiB of spaces."""
    deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
    mib = deflate.compress(SPACES) + deflate.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(BOMB_BYTES // len(SPACES)):
        crc = zlib.crc32(SPACES, crc)
    return mib * (BOMB_BYTES // len(SPACES)) + zlib.compressobj(6, zlib.DEFLATED, -15).flush(), crc


def write_zip(path: Path, members: list[tuple[str, int, bytes, int, int]]) -> None:
    """A zip of ``members`` (name, method, the bytes as stored, CRC-32, size inflated):
    each local header and its bytes, the central directory, its end (PKWARE's APPNOTE 4.3)."""
    body, directory = b"", b""
    for name, method, data, crc, size in members:
        raw = name.encode()
        fields = struct.pack(
            "<HHHHHIIIHH", 20, 0, method, 0, 0x21, crc, len(data), size, len(raw), 0
        )
        directory += (
            b"PK\x01\x02"
            + struct.pack("<H", 20)
            + fields
            + struct.pack("<HHHII", 0, 0, 0, 0o100644 << 16, len(body))
            + raw
        )
        body += b"PK\x03\x04" + fields + raw + data
    end = struct.pack("<HHHHIIH", 0, 0, len(members), len(members), len(directory), len(body), 0)
    path.write_bytes(body + directory + b"PK\x05\x06" + end)


def deflated_bomb(
    path: Path, member: str, extra: dict[str, bytes], bomb: tuple[bytes, int]
) -> None:
    """A 1 MB zip whose ``member`` inflates to 1 GiB of spaces (``bomb``: the stream and its
    CRC), after ``extra`` members stored as they are."""
    members = [(name, 0, data, zlib.crc32(data), len(data)) for name, data in extra.items()]
    write_zip(path, [*members, (member, zipfile.ZIP_DEFLATED, *bomb, BOMB_BYTES)])
    with zipfile.ZipFile(path) as zf:  # a zip that zipfile reads, its bomb a real stream
        assert [i.filename for i in zf.infolist()] == [*extra, member]
        assert all(zf.read(name) == data for name, data in extra.items())
        assert zf.getinfo(member).file_size == BOMB_BYTES
        with zf.open(member) as f:
            assert f.read(3 << 20) == SPACES * 3


@pytest.fixture(scope="module")
def bombs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("bombs")
    bomb = _spaces_deflated()
    script = tmp / "model.pt"
    deflated_bomb(
        script,
        "b/code/__torch__/m.py",
        {"b/data.pkl": b"\x80\x02}q\x00.", "b/constants.pkl": b"\x80\x02)."},
        bomb,
    )
    program = tmp / "model.pt2"
    deflated_bomb(program, "b/models/model.json", {"b/archive_format": b"pt2"}, bomb)
    # An inputs file is any zip: the script's bomb serves.
    return {"script": script, "program": program, "inputs": script}


@pytest.mark.parametrize("kind", ["script", "program"])
def test_a_one_megabyte_zip_bomb_is_refused_in_one_line(
    kind: str, bombs: dict[str, Path], record_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bomb = bombs[kind]
    assert bomb.stat().st_size < 2 << 20
    # The check itself, from the central directory: nothing is inflated.
    with pytest.raises(target_files.Refused, match="zip bomb"):
        target_files.archive(str(bomb), trust_pickle=False)
    t0 = time.monotonic()
    args = ("run", str(bomb), "--input", "2x8", "--iters", "1")
    # The script's by a real process; the program's by main() here.
    r = warmscope(*args, timeout=60) if kind == "script" else main_here(capsys, *args)
    assert time.monotonic() - t0 < 60
    assert r.code == 2
    line = one_line(r.stderr)
    assert "1024.0 MiB" in line and "zip bomb" in line


def test_an_inputs_file_that_is_a_zip_bomb_is_refused(
    bombs: dict[str, Path], record_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(target_files.Refused, match="zip bomb"):
        target_files.check_zip(str(bombs["inputs"]))
    r = main_here(capsys, "run", "sample:trivial", "--inputs", str(bombs["inputs"]))
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
