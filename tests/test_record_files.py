"""Record files as the file system has them: one run per record, no link followed, no file
clobbered, and a record from someone else read or refused in one line (``RecordError``).

Real files in ``tmp_path``; no mocks.
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

import pytest

from warmscope.core.data import record as record_module
from warmscope.core.data.document import to_document
from warmscope.core.data.record import (
    VERSION,
    RecordError,
    RecordExistsError,
    RecordWriter,
    create_unique,
    default_record_path,
    is_live,
    open_side_file,
    read_run,
    side_file_path,
    unique_record_path,
)

HEADER: dict[str, Any] = {
    "type": "header",
    "format": "warmscope-record",
    "version": VERSION,
    "settings": {"target": "t", "knobs": {"mode": "eager"}},
}
ITERS: dict[str, Any] = {"type": "iters", "i0": 0, "ns": [5_000_000, 2_000_000], "st": [0, 5]}
END: dict[str, Any] = {"type": "end", "status": "ok", "exit_code": 0}


def write_lines(path: Path, *entries: Any) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries))
    return path


def one_line(exc: pytest.ExceptionInfo[RecordError]) -> str:
    message = str(exc.value)
    assert "\n" not in message
    return message


# -- writing: one run per record ---------------------------------------------------------------


def test_a_second_writer_on_the_same_path_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    first = RecordWriter.create(path)
    first.write(HEADER)
    first.flush()
    with pytest.raises(RecordExistsError) as exc:
        RecordWriter.create(path)
    assert one_line(exc) == (
        f"{path} exists: choose another --record path, or pass --overwrite to replace it"
    )
    with pytest.raises(RecordError, match=rf"being written by a live run \(pid {os.getpid()}\)"):
        RecordWriter.create(path, overwrite=True)
    first.write(END)
    first.close()
    assert read_run(path).status == "ok"  # the first run's record, whole


def test_an_existing_file_is_kept_unless_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    path.write_text("someone's notes\n")
    with pytest.raises(RecordExistsError, match="pass --overwrite"):
        RecordWriter.create(path)
    assert path.read_text() == "someone's notes\n"
    with pytest.raises(RecordExistsError):
        RecordWriter(path)  # the constructor is ``create``
    assert path.read_text() == "someone's notes\n"

    with RecordWriter.create(path, overwrite=True) as w:
        w.write(HEADER)
        w.write(END)
    assert read_run(path).status == "ok"


def test_overwrite_refused_while_a_live_run_holds_the_record(tmp_path: Path) -> None:
    path = tmp_path / "live.jsonl"
    live = RecordWriter.create(path)
    live.write(HEADER)
    live.flush()
    assert is_live(path)
    with pytest.raises(RecordError) as exc:
        RecordWriter.create(path, overwrite=True)
    assert "is being written by a live run" in one_line(exc)
    assert path.read_text().startswith('{"type":"header"')  # untouched
    live.close()
    assert not is_live(path)
    RecordWriter.create(path, overwrite=True).close()  # a finished record may be replaced
    assert path.read_text() == ""


def test_is_live_on_what_is_not_a_live_record(tmp_path: Path) -> None:
    assert not is_live(tmp_path / "missing.jsonl")
    assert not is_live(tmp_path)
    assert not is_live(write_lines(tmp_path / "done.jsonl", HEADER, END))


def test_overwrite_never_replaces_a_link_or_a_folder(tmp_path: Path) -> None:
    target = tmp_path / "precious.txt"
    target.write_text("keep me")
    link = tmp_path / "r.jsonl"
    link.symlink_to(target)
    for overwrite in (False, True):
        with pytest.raises(RecordError, match="symbolic link") as exc:
            RecordWriter.create(link, overwrite=overwrite)
        one_line(exc)
    assert target.read_text() == "keep me" and link.is_symlink()
    dangling = tmp_path / "d.jsonl"
    dangling.symlink_to(tmp_path / "would-be-created")
    with pytest.raises(RecordError, match="symbolic link"):
        RecordWriter.create(dangling)
    assert not (tmp_path / "would-be-created").exists()


def test_create_unique_in_the_same_second_gives_two_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path / "runs"))
    a = create_unique("sample:speech", "script")
    b = create_unique("sample:speech", "script")  # same second, same pid
    try:
        assert a.path != b.path and a.path.parent == b.path.parent == tmp_path / "runs"
        assert a.path.name.endswith(f"-speech-script-{os.getpid()}.jsonl")
        assert b.path.name.endswith(f"-speech-script-{os.getpid()}-2.jsonl")
        a.write({"n": "a"})
        b.write({"n": "b"})
    finally:
        a.close()
        b.close()
    assert a.path.read_text() == '{"n":"a"}\n' and b.path.read_text() == '{"n":"b"}\n'


def test_unique_record_path_skips_taken_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARMSCOPE_RECORD_DIR", str(tmp_path))
    # The clock held still: a second ticking between two calls (a loaded machine) would
    # start the names afresh, with no suffix.
    names: dict[tuple[str, str], str] = {}
    base_name = record_module._base_name
    monkeypatch.setattr(
        record_module,
        "_base_name",
        lambda target, mode: names.setdefault((target, mode), base_name(target, mode)),
    )
    first = unique_record_path("m.py:net", "eager")
    assert not first.exists() and first.suffix == ".jsonl"
    first.touch()
    second = default_record_path("m.py:net", "eager")
    assert second != first and second.name.endswith("-2.jsonl")
    side_file_path(second).touch()  # a leftover side file takes its name too
    third = unique_record_path("m.py:net", "eager")
    assert third.name.endswith("-3.jsonl")
    with create_unique("m.py:net", "eager") as w:
        assert w.path == third


def test_the_writer_flushes_and_closes_safely(tmp_path: Path) -> None:
    path = tmp_path / "w.jsonl"
    w = RecordWriter.create(path)
    w.write(HEADER)
    assert path.read_text() == ""  # buffered
    w.flush()
    assert json.loads(path.read_text()) == HEADER
    assert not w.closed
    w.close()
    w.close()
    assert w.closed and not is_live(path)


def test_a_failed_flush_raises_and_close_does_not(tmp_path: Path) -> None:
    full = Path("/dev/full")
    if not full.exists():
        pytest.skip("no /dev/full")
    w = RecordWriter.create(tmp_path / "w.jsonl")
    # The writer's own file descriptor, pointed at a device that is always full.
    fd = os.open(full, os.O_WRONLY)
    assert w._fd is not None
    os.dup2(fd, w._fd)
    os.close(fd)
    w.write(HEADER)
    with pytest.raises(OSError):
        w.flush()
    assert w.failed
    w.close()  # a failure already raised is not raised again
    w.close()
    assert w.closed


@pytest.mark.parametrize("kind", ["read-only folder", "under /proc"])
def test_a_record_where_nothing_can_be_written(kind: str, tmp_path: Path) -> None:
    if kind == "read-only folder":
        folder = tmp_path / "ro"
        folder.mkdir(mode=0o555)
        try:
            (folder / "probe").touch()
        except PermissionError:
            pass
        else:
            pytest.skip("permissions do not bite here (root)")
        path = folder / "x.jsonl"
    else:
        path = Path("/proc/warmscope-test/x.jsonl")
    with pytest.raises(RecordError) as exc:
        RecordWriter.create(path)
    assert one_line(exc).startswith(f"cannot write the record {path}: ")


def test_a_record_path_that_is_a_folder(tmp_path: Path) -> None:
    for overwrite in (False, True):
        with pytest.raises(RecordError) as exc:
            RecordWriter.create(tmp_path, overwrite=overwrite)
        assert one_line(exc) == f"cannot write the record {tmp_path}: Is a directory"
    assert tmp_path.is_dir()
    blocker = tmp_path / "a-file"
    blocker.touch()
    with pytest.raises(RecordError) as exc:
        RecordWriter.create(blocker / "x.jsonl")
    assert one_line(exc).startswith(f"cannot write the record {blocker / 'x.jsonl'}: ")


# -- the side file ------------------------------------------------------------------------------


def test_side_file_refuses_a_planted_symlink(tmp_path: Path) -> None:
    target = tmp_path / "root-owned-secret"
    target.write_text("secret")
    target.chmod(0o600)
    side = side_file_path(tmp_path / "run.jsonl")
    assert side.name == "run.stderr.txt"
    side.symlink_to(target)
    for overwrite in (False, True):
        with pytest.raises(RecordError) as exc:
            open_side_file(side, overwrite=overwrite)
        assert str(side) in one_line(exc) and "symbolic link" in str(exc.value)
    assert target.read_text() == "secret" and side.is_symlink()
    assert oct(target.stat().st_mode & 0o777) == oct(0o600)


def test_side_file_never_truncates_a_leftover(tmp_path: Path) -> None:
    side = tmp_path / "run.stderr.txt"
    side.write_bytes(b"an earlier run's stderr\n")
    with pytest.raises(RecordError, match=r"run\.stderr\.txt exists"):
        open_side_file(side)
    assert side.read_bytes() == b"an earlier run's stderr\n"
    with open_side_file(side, overwrite=True) as f:
        f.write(b"new\n")
    assert side.read_bytes() == b"new\n"


def test_side_file_is_created_new(tmp_path: Path) -> None:
    side = tmp_path / "new.stderr.txt"
    with open_side_file(side) as f:
        f.write(b"line\n")
    assert side.read_bytes() == b"line\n"
    assert side.stat().st_mode & 0o777 == 0o644 & ~current_umask()


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# -- reading records from someone else ---------------------------------------------------------


def test_a_newer_version_is_refused(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "new.jsonl", {**HEADER, "version": VERSION + 1}, ITERS, END)
    with pytest.raises(RecordError) as exc:
        read_run(path)
    assert one_line(exc) == (
        f"{path} is a warmscope record of version {VERSION + 1}; "
        f"this warmscope reads version {VERSION} (upgrade warmscope)"
    )


def test_a_newer_json_document_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps({"format": "warmscope-run", "version": VERSION + 1}))
    with pytest.raises(RecordError, match="upgrade warmscope"):
        read_run(path)


BAD_LINES: list[tuple[str, list[Any]]] = [
    ("settings not a dict", [{**HEADER, "settings": "fast"}]),
    ("settings a list", [{**HEADER, "settings": [1, 2]}]),
    ("knobs not a dict", [{**HEADER, "settings": {"knobs": ["mode"]}}]),
    ("target not a dict", [{**HEADER, "target": 3}]),
    ("command not a list", [{**HEADER, "command": "rm -rf"}]),
    ("version a string", [{**HEADER, "version": "2"}]),
    ("iters with a string", [HEADER, {**ITERS, "ns": ["x", 1]}]),
    ("iters i0 a string", [HEADER, {"type": "iters", "i0": "x"}]),
    ("iters without values", [HEADER, {"type": "iters", "i0": 0}]),
    ("iters lengths differ", [HEADER, {**ITERS, "st": [0]}]),
    ("iters a gap", [HEADER, {**ITERS, "i0": 5}]),
    ("iters nested list", [HEADER, {**ITERS, "ns": [[1], [2]]}]),
    ("iters not finite", [HEADER, {**ITERS, "ns": [float("nan"), 1]}]),
    (
        "iters early form, strings",
        [HEADER, {"type": "iters", "i0": 0, "ms": "ab", "start_ms": "cd"}],
    ),
    ("spawned without pid", [HEADER, {"type": "spawned"}]),
    ("phase without ms", [HEADER, {"type": "phase", "name": "load"}]),
    ("phase name a list", [HEADER, {"type": "phase", "name": [], "ms": 1}]),
    ("env a list", [HEADER, {"type": "env", "env": [1]}]),
    ("event iteration a string", [HEADER, {"type": "event", "iteration": "3", "title": "x"}]),
    ("event title a dict", [HEADER, {"type": "event", "title": {"a": 1}}]),
    ("event data a list", [HEADER, {"type": "event", "data": [1]}]),
    ("sample cpu a string", [HEADER, {"type": "sample", "cpu": "lots"}]),
    ("profile without iteration", [HEADER, {"type": "profile", "wall_ms": 1.0}]),
    ("profile ops not rows", [HEADER, {"type": "profile", "iteration": 0, "ops": [1]}]),
    ("graphs not text", [HEADER, {"type": "graphs", "code": 5}]),
    ("error message a list", [HEADER, {"type": "error", "message": ["x"]}]),
    ("end exit code a string", [HEADER, {"type": "end", "status": "ok", "exit_code": "0"}]),
    ("a line that is an array", [HEADER, [1, 2, 3]]),
    ("a line that is a string", [HEADER, "iters"]),
    ("a second header", [HEADER, ITERS, HEADER]),
]


@pytest.mark.parametrize(("case", "entries"), BAD_LINES, ids=[c for c, _ in BAD_LINES])
def test_a_line_of_the_wrong_shape_is_a_record_error(
    case: str, entries: list[Any], tmp_path: Path
) -> None:
    path = write_lines(tmp_path / "bad.jsonl", *entries)
    with pytest.raises(RecordError) as exc:
        read_run(path)
    message = one_line(exc)
    assert message.startswith(f"{path}:{len(entries)}: not a valid record line (")


BAD_DOCUMENTS: list[tuple[str, Any]] = [
    ("a list", [1, 2]),
    ("settings a string", {"settings": "x"}),
    ("iterations a dict", {"iterations": {"ms": 1}}),
    ("iteration without ms", {"iterations": [{"start_ms": 0}]}),
    ("iteration ms a string", {"iterations": [{"ms": "1"}]}),
    ("an event that is a list", {"events": [["jit", "x"]]}),
    ("phases of strings", {"phases": ["load"]}),
    ("profile without iteration", {"profiles": [{"wall_ms": 1}]}),
    ("samples a string", {"samples": "none"}),
    ("error a list", {"error": ["x"]}),
    ("graphs a list", {"graphs": ["x"]}),
]


@pytest.mark.parametrize(("case", "body"), BAD_DOCUMENTS, ids=[c for c, _ in BAD_DOCUMENTS])
def test_a_json_document_of_the_wrong_shape_is_a_record_error(
    case: str, body: Any, tmp_path: Path
) -> None:
    doc = body if isinstance(body, list) else {"format": "warmscope-run", "version": 1, **body}
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(RecordError) as exc:
        read_run(path)
    assert one_line(exc).startswith(f"{path}")


def test_a_good_json_document_reads(tmp_path: Path) -> None:
    record = write_lines(tmp_path / "r.jsonl", HEADER, ITERS, END)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(to_document(read_run(record))))
    data = read_run(path)
    assert data.status == "ok" and list(data.ms) == [5.0, 2.0]


def test_unknown_kinds_and_fields_are_skipped(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "r.jsonl",
        {**HEADER, "future": {"x": 1}},
        {"type": "a-newer-kind", "anything": [1]},
        {**ITERS, "shape": "2x8"},
        {"type": "sample", "cpu": 1.0, "future_metric": "text"},
        END,
    )
    data = read_run(path)
    assert data.count == 2 and data.status == "ok"


def test_files_that_are_not_records(tmp_path: Path) -> None:
    cases: dict[str, Path] = {}
    cases["not UTF-8"] = tmp_path / "latin1.jsonl"
    cases["not UTF-8"].write_bytes(b'{"type": "header", "x": "\xe9"}\n')
    cases["folder"] = tmp_path
    cases["missing"] = tmp_path / "missing.jsonl"
    cases["binary"] = tmp_path / "bin.jsonl"
    cases["binary"].write_bytes(bytes(range(256)))
    cases["deep"] = tmp_path / "deep.jsonl"
    cases["deep"].write_text(json.dumps(HEADER) + "\n" + "[" * 100_000 + "\n")
    cases["deep document"] = tmp_path / "deep.json"
    cases["deep document"].write_text("{" + '"a":[' * 100_000)
    cases["huge number"] = tmp_path / "huge.jsonl"
    cases["huge number"].write_text(json.dumps(HEADER) + "\n" + "9" * 10_000 + "\n")
    fifo = tmp_path / "fifo.jsonl"
    os.mkfifo(fifo)
    cases["fifo"] = fifo  # opened without a writer: must not hang
    cases["device"] = Path("/dev/null")
    with socket.socket(socket.AF_UNIX) as sock:
        sock_path = tmp_path / "s.jsonl"
        sock.bind(str(sock_path))
        cases["socket"] = sock_path
        for case, path in cases.items():
            with pytest.raises(RecordError) as exc:
                read_run(path)
            assert str(path) in one_line(exc), case


def test_an_unreadable_record(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "secret.jsonl", HEADER, END)
    path.chmod(0)
    try:
        path.open().close()
    except PermissionError:
        pass
    else:
        pytest.skip("permissions do not bite here (root)")
    with pytest.raises(RecordError) as exc:
        read_run(path)
    assert one_line(exc) == f"cannot read {path}: permission denied"


def test_escape_sequences_do_not_reach_the_terminal(tmp_path: Path) -> None:
    evil = tmp_path / "\x1b]0;pwned\x07.jsonl"
    write_lines(evil, HEADER, {"type": "graphs", "\x1b[2J": 1})
    with pytest.raises(RecordError) as exc:
        read_run(evil)
    assert "\x1b" not in one_line(exc) and "\x07" not in str(exc.value)
    assert "not a valid record line" in str(exc.value)


def test_a_new_kind_of_line_is_one_entry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One ``schema.KINDS`` entry is what the session records, what a reader checks and what
    both fold: nothing else names a kind."""
    from warmscope.core.data import schema
    from warmscope.core.data.fold import record_line

    folded: list[int] = []
    novel = schema.LineKind(
        check=lambda e: schema.field(e, "x", schema.is_int, "an integer", optional=False),
        fold=lambda data, body, packed: folded.append(body["x"]),
        holds=(),
        document=(),
        from_agent=True,
    )
    monkeypatch.setitem(schema.KINDS, "novel", novel)
    assert record_line({"t": "novel", "x": 3}, 0.0) == {"type": "novel", "x": 3}
    read_run(write_lines(tmp_path / "r.jsonl", HEADER, {"type": "novel", "x": 3}, END))
    assert folded == [3]
    bad = write_lines(tmp_path / "bad.jsonl", HEADER, {"type": "novel", "x": "3"}, END)
    with pytest.raises(RecordError) as exc:
        read_run(bad)
    assert (
        one_line(exc) == f"{bad}:2: not a valid record line ('x' is a string, expected an integer)"
    )
