"""Hostile models and unlucky conditions, each with a real child, headless.

After every case: warmscope ended by itself (no hang), the status and exit code say what
happened, the record reads back, and no process of the run survives: neither the agent nor
the helpers the model started (tests/faults/hostile.py writes their pids down).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest

from tests.conftest import FACTORIES, Result, run_id_of, running, survivors, wait_gone, warmscope
from warmscope.core.data.record import read_run, side_file_path
from warmscope.core.data.settings import RunSettings
from warmscope.core.run.integrity import INTEGRITY
from warmscope.core.run.session import RunSession
from warmscope.core.run.side_cap import STDERR_CAP_BYTES

HOSTILE = Path(__file__).parent / "faults" / "hostile.py"
TOGETHER = HOSTILE.with_name("hostile_together.py")
"""Acts that one model does together: one child for the tests that each read their own."""


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


Ran = tuple[Result, Path, list[int], float]
"""What a hostile run left: its result, its record, the helpers' pids, how long it took."""


def run_hostile(tmp_path: Path, name: str, *extra: str, timeout: float = 90) -> Ran:
    pids = tmp_path / "pids.txt"
    record = tmp_path / "r.jsonl"
    started = time.monotonic()
    r = warmscope(
        "run",
        name if ":" in name else f"{HOSTILE}:{name}",
        "--input",
        "4",
        "--iters",
        "20",
        "--record",
        str(record),
        "--no-explain",  # what is under test is the run; a profile process would double it
        *extra,
        json_path=tmp_path / "r.json",
        timeout=timeout,
        env={"HOSTILE_PIDS": str(pids)},
    )
    took = time.monotonic() - started
    helpers = [int(p) for p in pids.read_text().split()] if pids.exists() else []
    return r, record, helpers, took


def assert_nothing_left(record: Path, helpers: list[int]) -> None:
    assert wait_gone(run_id_of(record), 3) == [], "no process carrying the run id"
    deadline = time.monotonic() + 3
    while any(alive(p) for p in helpers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [p for p in helpers if alive(p)], "every helper the model started is gone"


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Ran]:
    """One run per hostile model for the whole module, started when a test first asks for
    it: the tests that read the same model share that child."""
    done: dict[str, Ran] = {}

    def run(name: str) -> Ran:
        if name not in done:
            done[name] = run_hostile(tmp_path_factory.mktemp("hostile"), name)
        return done[name]

    return run


@pytest.mark.parametrize(
    ("name", "status", "code", "count"),
    [
        # Holding the stderr pipe, escaped to a session of its own, on /dev/null, a forked
        # copy of the agent: one model starts all four (then closes its own fd 2).
        (f"{TOGETHER}:every_helper", "ok", 0, 4),
        ("spawns_then_raises", "failed", 1, 1),
    ],
    ids=["every_helper-ok-0", "spawns_then_raises-failed-1"],
)
def test_helpers_holding_the_pipes_neither_hang_the_run_nor_survive_it(
    name: str, status: str, code: int, count: int, hostile_run: Callable[[str], Ran]
) -> None:
    r, record, helpers, took = hostile_run(name)
    assert len(helpers) == count, "the model started its helpers"
    assert r.code == code, r.stderr
    assert r.doc is not None and r.doc["status"] == status
    assert r.doc["summary"]["first_ms"] is not None
    if status == "failed":
        assert "planted failure after spawning a helper" in r.stderr
    assert took < 60, "ended by the agent's exit, not by the helper's 1000 s"
    assert read_run(record).status == status
    assert_nothing_left(record, helpers)


def test_a_helper_that_scrubbed_its_environment_ends_with_the_run(tmp_path: Path) -> None:
    """Out of the session and with no environment, it is found by the run's cgroup (where a
    cgroup v2 is writable, as for root here); the record says how the run held its processes."""
    r, record, helpers, _ = run_hostile(tmp_path, "spawns_scrubbed")
    assert helpers and r.code == 0, r.stderr
    containment = read_run(record).env["containment"]
    if containment["by"] != "cgroup":
        pytest.skip(f"no cgroup for the run here: {containment['why']}")
    assert_nothing_left(record, helpers)
    assert any("left in its cgroup" in e.title for e in read_run(record).events)
    assert not Path(containment["path"]).exists(), "the run's cgroup is removed with it"


def test_timeout_and_a_killed_warmscope_end_the_helpers_too(tmp_path: Path) -> None:
    """The guardian ends the run's processes even when warmscope dies by SIGKILL: the child
    within 2 s, the helper escaped to a session of its own too; the record it leaves reads
    back, through the command line too, and says warmscope died."""
    pids = tmp_path / "pids.txt"
    record = tmp_path / "r.jsonl"
    with running(
        "run",
        f"{HOSTILE}:spawns_escaped",
        "--input",
        "4",
        "--duration",
        "120",
        "--gap",  # a pass every 50 ms: the child sleeps until it is killed
        "0.05",
        "--no-explain",
        "--record",
        str(record),
        env=dict(os.environ, HOSTILE_PIDS=str(pids)),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    ) as proc:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (
            pids.exists() and pids.read_text().strip() and '"type":"iters"' in record.read_text()
        ):
            time.sleep(0.1)
        helpers = [int(p) for p in pids.read_text().split()]
        assert helpers and all(alive(p) for p in helpers)
        run_id = run_id_of(record)
        assert survivors(run_id), "the child is running"
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        assert wait_gone(run_id, 2) == [], "the child is gone within 2 s"
        assert_nothing_left(record, helpers)
        data = read_run(record)
        assert data.count > 0
        assert data.status == "crashed", "warmscope itself died: the record says so"
    # What `warmscope open` and `compare` do with it: read it through the command line.
    r = warmscope("compare", str(record), str(record))
    assert r.code == 0 and "first_ms" in r.stdout


@pytest.fixture(scope="module")
def stderr_text(tmp_path_factory: pytest.TempPathFactory) -> Ran:
    """One model prints forged markers and escape sequences: the tests read their own."""
    return run_hostile(tmp_path_factory.mktemp("stderr_text"), f"{TOGETHER}:marker_and_escapes")


def test_a_forged_marker_is_a_plain_line(stderr_text: Ran) -> None:
    r, record, _, _ = stderr_text
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["status"] == "ok"
    assert not any(e["title"] == "the child broke the protocol" for e in r.doc["events"])
    assert side_file_path(record).read_bytes().count(b"\x1e@ws it 5\n") >= 1, (
        "kept as what the model printed"
    )


def test_a_child_that_breaks_the_protocol_ends_with_a_clear_status(tmp_path: Path) -> None:
    """A batch out of order (a message of the wrong shape is refused in the same place:
    ``test_a_message_of_the_wrong_shape_is_refused``)."""
    r, record, _, took = run_hostile(tmp_path, "out_of_order")
    assert r.code == 1, r.stderr
    assert r.doc is not None and r.doc["status"] == "failed"
    assert "broke the protocol" in r.doc["status_detail"]
    assert any(e["title"] == "the child broke the protocol" for e in r.doc["events"])
    assert "Traceback" not in r.stderr
    assert took < 60
    assert read_run(record).status == "failed"
    assert_nothing_left(record, [])


def test_a_message_of_the_wrong_shape_is_refused(tmp_path: Path) -> None:
    """The line hostile.py's wrong_shape writes, handed to a session as its reader hands it
    (no child needed to read one line): the child broke the protocol, as for the batch out of
    order above, whose real child shows how such a run ends."""
    settings = RunSettings(target=f"{FACTORIES}:tiny", inputs=["2x8"], iters=1)
    session = RunSession(settings, record_path=tmp_path / "r.jsonl")
    try:
        session.protocol_lines([b'{"t":"iters","i0":0}'])
        broke = [e for e in session.data.events if e.title == "the child broke the protocol"]
        assert broke and "KeyError('ns')" in broke[0].text
    finally:
        session.discard()


def test_escape_sequences_never_reach_a_terminal(stderr_text: Ran, tmp_path: Path) -> None:
    r, record, _, _ = stderr_text
    assert r.code == 0, r.stderr
    assert r.doc is not None
    texts = [e["title"] + e["text"] for e in r.doc["events"]]
    assert any("wiped" in t for t in texts)
    assert not any("\x1b" in t or "\x07" in t for t in texts)
    report = warmscope("report", str(record))
    assert report.code == 0 and "\x1b" not in report.stdout and "\x07" not in report.stdout
    # A record handed over by someone else: escapes in its target and knob values.
    lines = record.read_text().splitlines()
    header = json.loads(lines[0])
    header["settings"]["target"] = "evil\x1b]0;title\x07.py:f"
    header["settings"]["knobs"]["compile_backend"] = "\x1b[2Jinductor"
    forged = tmp_path / "forged.jsonl"
    forged.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n")
    for command in ("compare", "report"):
        args = [str(forged), str(record)] if command == "compare" else [str(forged)]
        out = warmscope(command, *args)
        assert out.code == 0, out.stderr
        assert "\x1b" not in out.stdout and "\x07" not in out.stdout
        assert "evil" in out.stdout or command == "compare"


def test_a_model_printing_every_pass_keeps_memory_bounded(tmp_path: Path) -> None:
    r, _, _, _ = run_hostile(tmp_path, "prints_every_pass", "--iters", "3000")
    assert r.code == 0, r.stderr
    assert r.doc is not None and len(r.doc["iterations"]) == 3000
    stderr_events = [e for e in r.doc["events"] if e["kind"] == "stderr"]
    assert len(stderr_events) <= 3, [e["title"] for e in stderr_events]
    repeated = [e for e in stderr_events if e.get("data", {}).get("repeats")]
    assert repeated and repeated[-1]["data"]["repeats"] == 2999
    side = Path(r.doc["stderr_file"]).read_text()
    assert side.count("loss") == 3000, "every line is in the side file"


def test_keyboard_interrupt_from_a_factory_is_a_failure(tmp_path: Path) -> None:
    r, _, _, _ = run_hostile(tmp_path, "interrupts_itself")
    assert r.code == 1 and r.doc is not None
    assert r.doc["status"] == "failed" and "KeyboardInterrupt" in r.doc["status_detail"]


def test_a_model_that_closes_fd_2_still_runs_to_the_end(
    hostile_run: Callable[[str], Ran],
) -> None:
    """The model that starts every helper closes its fd 2 after them (hostile.py's
    closes_stderr)."""
    r, _, _, _ = hostile_run(f"{TOGETHER}:every_helper")
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["status"] == "ok" and len(r.doc["iterations"]) == 20


@pytest.mark.parametrize("python", ["/bin/false", "/bin/ls"])
def test_an_interpreter_that_is_not_a_python_is_named_in_one_line(
    python: str, tmp_path: Path
) -> None:
    r = warmscope(
        "run", "sample:trivial", "--python", python, "--record", str(tmp_path / "r.jsonl")
    )
    assert r.code == 2
    assert f"--python {python} is not a Python interpreter" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_an_interpreter_without_torch_is_named_in_one_line(tmp_path: Path) -> None:
    bare = "/usr/bin/python3"
    probe = subprocess.run([bare, "-c", "import torch"], capture_output=True)
    if not Path(bare).exists() or probe.returncode == 0:
        pytest.skip("needs a Python without torch at /usr/bin/python3")
    r = warmscope("run", "sample:trivial", "--python", bare, "--record", str(tmp_path / "r.jsonl"))
    assert r.code == 2 and "has no torch" in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_full_disk_ends_the_run_with_a_status_and_keeps_what_it_can(tmp_path: Path) -> None:
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {done.stderr.decode().strip()}")
    try:
        record = mount / "r.jsonl"
        started = time.monotonic()
        r = warmscope(
            "run",
            "sample:trivial",
            "--duration",
            "60",
            "--no-explain",
            "--record",
            str(record),
            json_path=tmp_path / "r.json",
            timeout=90,
        )
        assert time.monotonic() - started < 50, "ended at the full disk, not at --duration"
        assert r.code == 1, r.stderr
        assert r.doc is not None and r.doc["status"] == "failed"
        assert "the disk is full" in r.doc["status_detail"]
        assert len(r.doc["iterations"]) > 1000, "what was measured is kept in --json"
        assert "Traceback" not in r.stderr
        assert read_run(record).count > 0, "the record holds what fit"
        assert wait_gone(r.doc["run_id"], 3) == []
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def test_a_message_cut_off_by_the_childs_death_is_not_a_broken_protocol(tmp_path: Path) -> None:
    """SIGKILL (the TUI's K) can land while the agent writes a line: the run ends as the
    child's exit says, with a note, not as 'the child broke the protocol'."""
    r, record, _, _ = run_hostile(tmp_path, "dies_mid_message")
    assert r.code == 1 and r.doc is not None
    assert r.doc["status"] == "crashed" and "code 9" in r.doc["status_detail"]
    assert any("cut off" in e["title"] for e in r.doc["events"])
    assert read_run(record).status == "crashed"


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("forges_done", "of --iters 20, unasked"),
        ("writes_ring", "the shared ring"),
    ],
)
def test_a_model_cannot_make_its_run_look_ok(name: str, words: str, tmp_path: Path) -> None:
    """A forged done before an exit, forged ring timings: the run fails, naming the check,
    with the check's event in the record; never ok, never exit 0. (Forged protocol lines a
    live child goes on from: ``test_forged_protocol_lines_fail_the_run``.)"""
    r, record, _, took = run_hostile(tmp_path, name)
    assert r.code == 1, r.stderr
    assert r.doc is not None and r.doc["status"] == "failed"
    assert r.doc["status_detail"].startswith(INTEGRITY), r.doc["status_detail"]
    assert words in r.doc["status_detail"]
    assert [e for e in r.doc["events"] if e["title"] == INTEGRITY]
    assert "Traceback" not in r.stderr
    assert took < 60
    run = read_run(record)
    assert run.status == "failed" and run.status_detail == r.doc["status_detail"]
    assert all(0 <= ms < took * 1000 for ms in run.ms), "no forged timing was kept"
    assert_nothing_left(record, [])


@pytest.mark.parametrize(
    ("lines", "words"),
    [
        # hostile.py's forges_done_lingers: its forged done, then its agent's own.
        ([b'{"t":"done","status":"ok","iterations":0}'] * 2, "a second done"),
        # hostile.py's absurd_latency: one iteration that lasted an hour.
        ([b'{"t":"iters","i0":0,"ns":[3600000000000],"st":[0]}'], "a latency of 3.6e+03 s"),
    ],
    ids=["forges_done_lingers", "absurd_latency"],
)
def test_forged_protocol_lines_fail_the_run(lines: list[bytes], words: str, tmp_path: Path) -> None:
    """What a model writes on the agent's protocol descriptor, handed to a session as its
    reader hands it (no child needed to read lines; the real children above show how a run
    that fails a check ends): the check's event, and no forged timing kept."""
    settings = RunSettings(target=f"{FACTORIES}:tiny", inputs=["4"], iters=20)
    session = RunSession(settings, record_path=tmp_path / "r.jsonl")
    try:
        session.protocol_lines(lines)
        checks = [e for e in session.data.events if e.title == INTEGRITY]
        assert checks and words in checks[0].text, [e.text for e in session.data.events]
        assert session.data.count == 0, "no forged timing was kept"
    finally:
        session.discard()


def test_a_model_flooding_its_stderr_is_cut_at_the_cap(tmp_path: Path) -> None:
    """A megabyte a pass: the side file stops at the cap, the record and the summary say so."""
    iters = (STDERR_CAP_BYTES >> 20) + 16
    r, record, _, _ = run_hostile(tmp_path, "floods_stderr", "--iters", str(iters))
    assert r.code == 0, r.stderr
    assert r.doc is not None and r.doc["status"] == "ok"
    side = side_file_path(record)
    assert 0 < side.stat().st_size <= STDERR_CAP_BYTES
    cut = [e for e in r.doc["events"] if e["title"].startswith("stderr cut at")]
    assert len(cut) == 1
    assert "stderr was cut" in r.doc["status_detail"]
    assert "stderr was cut" in read_run(record).status_detail
    assert_nothing_left(record, [])
