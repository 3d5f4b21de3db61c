"""A run's plan: every process one run takes, owned by one ``PlannedRun``.

One run may take up to four processes, one after the other:

- profiling (``--profile-iters`` unless ``--profile-in-run``): a process of its own runs under
  the profiler with its own record (``RUN.profile.jsonl`` beside the run's), and hands its
  profiles to the measured process, which never runs under the profiler (trtexec's
  ``--separateProfileRun``). Running first, it, not the measured one, pays for a cold disk cache;
- warming (``--compile-cache warm`` on a compile run): an unrecorded process fills a scratch
  compile cache that the measured process then finds; the folder goes when the run ends;
- the measured process: a ``RunSession``;
- explaining (the command line and the TUI, unless ``--no-explain``): where a shape's first
  call was slow and no event explains it (``first_call.unexplained``), one more process runs
  under the profiler at those first calls and steady calls of their shapes; its profiles join
  the measured run's record and data (``first_call.notes`` reads them). A run whose first
  calls are explained, or not slow, starts none: it costs them nothing.

The command line, the sweep and the TUI all start runs here, so a run does the same whichever
started it, and its reproduce line (``settings.command_line()``) runs the same plan again.
Starting returns at once: the earlier processes run on a thread of the plan, which lives until
the measured process ends (a child's parent-death signal fires when the thread that spawned it
exits; where the UI keeps a launcher thread, ``launcher`` spawns every child from there).
"""

from __future__ import annotations

import fcntl
import json
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from warmscope.core.base import files
from warmscope.core.child import outcome
from warmscope.core.child.outcome import UsageError
from warmscope.core.data import first_call
from warmscope.core.data.cpp_runtime import is_cpp
from warmscope.core.data.run import Cursor, Event, RunData, Update
from warmscope.core.data.schema import apply_line
from warmscope.core.data.settings import RunSettings
from warmscope.core.run import cpp_build
from warmscope.core.run.cpp_build import BUILDING
from warmscope.core.run.ending import one_line
from warmscope.core.run.run_stop import STOP_GRACE_S
from warmscope.core.run.session import RunSession

QUICK_GRACE_S = 0.5
"""The stop's grace after a hangup or SIGTERM: no one is waiting for the last iterations."""
PROFILING = "profiling in a separate process"
EXPLAINING = "explaining a slow first call in a separate process"
WARMING = "warming the compile cache in a separate process"
WARMING_ITERS = 3
PROFILED_IN_PYTHON = (
    "the C++ agent has no profiler: the operator profile comes from a Python process running "
    "the same file with the same knobs (its calls include Python's call path; the C++ run's do not)"
)

Notify = Callable[[str, bool], None]
"""``(line, warning)``: what the plan tells its caller as it goes (``warning``: something went
wrong that the caller should see even when told to be quiet)."""

__all__ = [
    "QUICK_GRACE_S",
    "STOP_GRACE_S",
    "PlannedRun",
    "drive",
    "explain_record_path",
    "profile_record_path",
    "start_run",
    "warm_cache",
]


# -- the compile cache a run gets ---------------------------------------------------------


def warm_cache(
    settings: RunSettings,
    folder: Path,
    *,
    run: Callable[[RunSession], object] = RunSession.run_to_end,
) -> Path:
    """Fill a compile cache under ``folder`` with one unrecorded process (``run`` takes it to
    its end); the cache folder it filled. ``UsageError`` if that process did not end well."""
    cache = Path(tempfile.mkdtemp(prefix="warm-cache-", dir=folder))
    scratch = Path(tempfile.mkdtemp(prefix="warming-", dir=folder))
    warming = settings.copy()
    warming.iters, warming.duration = min(settings.iters, WARMING_ITERS), None
    warming.profile_iters = None
    session = RunSession(warming, record_path=scratch / "warming.jsonl", warm_cache=cache)
    try:
        run(session)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)  # unrecorded: its record goes too
    if session.data.status != outcome.OK:
        raise UsageError(
            f"the process that warms the compile cache {session.data.status}: "
            f"{session.data.status_detail}"
        )
    return cache


def profile_record_path(record: Path) -> Path:
    """Where the profiling process of the run recorded at ``record`` keeps its own record."""
    return record.with_name(record.stem + ".profile.jsonl")


def explain_record_path(record: Path) -> Path:
    """Where the process that explains the first calls of the run recorded at ``record``
    keeps its own record."""
    return record.with_name(record.stem + ".explain.jsonl")


def append_lines(path: Path, lines: list[dict[str, Any]]) -> None:
    """Add lines to the end of a finished run's record, under its lock (no reader takes it for
    a live run: ``is_live`` tells the writer's lock, not this short one)."""
    with files.appending(path) as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        f.write("".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines))
        f.flush()


# -- the plan -------------------------------------------------------------------------------


class _Stopped(Exception):
    """A stop or kill came before the measured process started."""


class PlannedRun:
    """Every process of one run, from the profiling one to the measured one; a ``LiveRun``.

    ``data`` is the measured run's from the start (the record is claimed at once); until the
    measured process starts, ``poll`` brings nothing new but says which earlier process runs
    (``Update.phase``), and ``stop``/``kill`` end that process and start nothing after it.
    """

    def __init__(
        self,
        settings: RunSettings,
        *,
        record_path: Path | None = None,
        command: list[str] | None = None,
        overwrite: bool = False,
        warmed: Path | None = None,
        notify: Notify | None = None,
        explain: bool = False,
    ) -> None:
        self.settings = settings
        # Both records are claimed now: one in the way is refused before anything runs.
        self.session = RunSession(
            settings,
            record_path=record_path,
            command=command,
            overwrite=overwrite,
            warm_cache=warmed,
        )
        """The measured process."""
        self.data: RunData = self.session.data
        self.record_path: Path = self.session.record_path
        self.profiling: RunSession | None = None
        """The profiling process, when the profile is taken apart from the measured run."""
        if settings.profile_iters and not settings.profile_in_run:
            profiling = settings.copy()
            profiling.profile_in_run = True
            if is_cpp(profiling):  # the C++ agent has no profiler: Python runs the same file
                profiling.set("runtime=python")
            try:
                self.profiling = RunSession(
                    profiling,
                    record_path=profile_record_path(self.record_path),
                    command=profiling.command_line(),
                    overwrite=overwrite,
                )
            except BaseException:
                self.session.discard()
                raise
        self.warms = (
            warmed is None and settings.compile_cache == "warm" and self.session.mode == "compile"
        )
        """Whether a warming process of this plan fills the compile cache first."""
        self.child = (
            cpp_build.child_for(settings.python, settings.recipe)
            if is_cpp(settings) and not settings.host
            else None
        )
        """What a ``--runtime cpp`` run starts (``cpp_build``: the agent, a recipe's library),
        built as its first step where it is not yet (``UsageError`` here: no compiler)."""
        self.steps = [
            *(["build"] if self.child is not None and not self.child.built else []),
            *(["profile"] if self.profiling else []),
            *(["warm"] if self.warms else []),
            "measure",
        ]
        self.explains = explain and settings.explain
        """Whether a slow first call that no event explains is explained after the measured
        process (``explain``: the caller's wish; ``--no-explain`` says no)."""
        self.explaining: RunSession | None = None
        """The process that explained first calls, once one ran."""
        self.explain_s: float | None = None
        """What that process cost, in seconds of wall time."""
        self._overwrite = overwrite
        self.note: str | None = None
        """The process in progress other than the measured one, as a view says it
        (``PROFILING``, ``WARMING``, ``EXPLAINING``)."""
        self.failure: BaseException | None = None
        """Why the plan ended before its measured process ran (the data says it too)."""
        self._notify = notify
        self._lock = threading.RLock()  # a hangup handler may stop the run from inside a stop
        self._current: RunSession | None = None
        self._measuring = False
        self._halted = False
        self._started_steps: set[str] = set()
        self._thread: threading.Thread | None = None
        self._done = threading.Event()
        self._scratch: Path | None = None
        self._t0 = 0.0

    # -- life cycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Start the plan: the measured process now when it is the only one (``WarmscopeError``
        then, nothing left running or on disk), else a thread that runs the earlier ones."""
        self._t0 = time.monotonic()
        if self.steps == ["measure"]:
            self._started_steps.add("measure")
            self._measuring = True
            self.session.start()
            if self.explains:
                self._thread = threading.Thread(
                    target=self._after_measuring, name="warmscope-plan", daemon=True
                )
                self._thread.start()
            return
        self._thread = threading.Thread(target=self._run_steps, name="warmscope-plan", daemon=True)
        self._thread.start()

    def _after_measuring(self) -> None:
        try:
            self.session.wait()
            self._explain_safely()
        finally:
            self._done.set()

    def _run_steps(self) -> None:
        try:
            if "build" in self.steps:
                self._build()
            profiles = self._profile() if self.profiling is not None else None
            warmed = self._warm() if self.warms else None
            with self._lock:
                if self._halted:
                    raise _Stopped
                self.session.separate_profiles = profiles
                if warmed is not None:
                    self.session.warm_cache = warmed
                self.note = None
                self._started_steps.add("measure")
                self.session.start()
                self._measuring = True
            self.session.wait()  # this thread spawned the child: it lives as long
            if self.explains:
                self._explain_safely()
        except _Stopped:
            where = f"while {self.note}" if self.note else "before it started"
            self._end_early(
                outcome.STOPPED,
                f"stopped {where}: the measured process did not run",
                outcome.EXIT_STOPPED,
            )
        except BaseException as exc:
            self.failure = exc
            exit_code = getattr(exc, "exit_code", outcome.EXIT_FAILED)
            self._end_early(outcome.FAILED, one_line(str(exc) or repr(exc)), exit_code)
        finally:
            if self._scratch is not None:
                shutil.rmtree(self._scratch, ignore_errors=True)
            self._done.set()

    def _step(self, session: RunSession, note: str) -> None:
        """Run one earlier process to its end, unless the plan was stopped first."""
        with self._lock:
            if self._halted:
                raise _Stopped
            self.note = note
            self._current = session
            self._started_steps.add(note)
            session.start()
        session.wait()
        with self._lock:
            self._current = None
            if self._halted:
                raise _Stopped

    def _build(self) -> None:
        """Build the C++ agent (and a recipe's library), the plan's note saying so while the
        compiler runs."""
        child = self.child
        assert child is not None
        with self._lock:
            if self._halted:
                raise _Stopped
            version = child.agent.torch.version
            self.note = f"{BUILDING} against torch {version} (once per torch build)"
            self._started_steps.add(BUILDING)
        try:
            child.build(cancelled=lambda: self._halted, tell=lambda s: self._tell(s, False))
        except UsageError:
            if self._halted:
                raise _Stopped from None
            raise
        with self._lock:
            self.note = None

    def _profile(self) -> list[dict[str, Any]]:
        profiling = self.profiling
        assert profiling is not None
        self._tell(f"profiling in a separate process first ({profiling.record_path})", False)
        if is_cpp(self.settings):
            self._tell(PROFILED_IN_PYTHON, False)
        self._step(profiling, PROFILING)
        data = profiling.data
        if data.status != outcome.OK:
            self._tell(
                f"the profile process {data.status}: {data.status_detail}; "
                "the measured run goes on without a profile",
                True,
            )
        source = str(profiling.record_path)
        return [{**data.profiles[i], "source": source} for i in sorted(data.profiles)]

    def _explain_safely(self) -> None:
        try:
            self._explain()
        except Exception as exc:  # the measured run stands as it ended
            self._tell(f"the first call is not explained: {one_line(str(exc) or repr(exc))}", True)

    def _explain(self) -> None:
        """After the measured process: explain its slow first calls that no event explains,
        with one more process; nothing where there are none. Whatever happens here, the
        measured run stands as it ended."""
        with self.session.lock:
            calls = first_call.unexplained(self.data)
        if not calls or self._halted:
            return
        settings = first_call.explaining_settings(self.settings, calls)
        if is_cpp(settings):  # the C++ agent has no profiler: Python runs the same file
            if settings.recipe is not None:
                self._tell("the first call is not explained: Python cannot run a C++ recipe", True)
                return
            settings.set("runtime=python")
        path = explain_record_path(self.record_path)
        try:
            explaining = RunSession(
                settings,
                record_path=path,
                command=settings.command_line(),
                overwrite=self._overwrite,
            )
        except Exception as exc:  # a record in the way: the run stands without the profile
            self._tell(f"the first call is not explained: {one_line(str(exc))}", True)
            return
        self.explaining = explaining
        which = ", ".join(f"#{c.iteration}" + (f" ({c.shape})" if c.shape else "") for c in calls)
        firsts = all(c.what == first_call.EXPLAINS for c in calls)
        calls_text = ("first call" if firsts else "call") + ("" if len(calls) == 1 else "s")
        self._tell(
            f"explaining the slow {calls_text} {which} in a separate process ({path})", False
        )
        if is_cpp(self.settings):
            self._tell(PROFILED_IN_PYTHON, False)
        t0 = time.monotonic()
        try:
            self._step(explaining, EXPLAINING)
        except _Stopped:
            if EXPLAINING not in self._started_steps:
                explaining.discard()
            return
        finally:
            with self._lock:
                self.note = None
        self.explain_s = time.monotonic() - t0
        got = explaining.data
        if got.status != outcome.OK:
            self._tell(
                f"the process that explains the first call {got.status}: {got.status_detail}",
                True,
            )
            return
        lines = self._explaining_lines(calls, got, str(path))
        with self.session.lock:
            for line in lines:
                apply_line(self.data, line)
            # Each label as an event of its first call: every view of the run's events and
            # warm-up rows (the TUI's too) shows it, live and read back.
            at = self.session.elapsed()
            events = [
                {"type": "event", **_explained_event(note, at).to_json()}
                for note in first_call.notes(self.data)
                if note.get("explain_s") is not None
            ]
            for line in events:
                apply_line(self.data, line)
            lines += events
        try:
            append_lines(self.record_path, lines)
        except OSError as exc:
            self._tell(f"cannot add the first call's profile to the record: {exc}", True)

    def _explaining_lines(
        self, calls: list[first_call.Unexplained], got: RunData, source: str
    ) -> list[dict[str, Any]]:
        """The explaining process's profiles as the measured record's ``profile`` lines."""
        lines: list[dict[str, Any]] = []
        explained = {c.iteration: c for c in calls}
        for i in sorted(got.profiles):
            if i in self.data.profiles:
                continue  # the run's own profile of it stands
            line = {"type": "profile", **got.profiles[i], "separate": True, "source": source}
            if got.settings.knobs.get("runtime") != self.settings.knobs.get("runtime"):
                line["runtime"] = got.settings.knobs.get("runtime")  # a difference to state
            call = explained.get(i)
            if call is not None:
                line.update(explains=call.what, against=call.against)
                line["explain_s"] = round(self.explain_s or 0.0, 3)
                # What decides whether that process saw the same slow call: its own steady
                # calls, unprofiled, and what the run saw.
                reference = first_call.reference_ms(got, call)
                line["reference_ms"] = round(reference, 4) if reference is not None else None
                line.update(run_ms=round(call.ms, 4), run_p50_ms=round(call.p50_ms, 4))
            lines.append(line)
        return lines

    def _warm(self) -> Path:
        self._scratch = Path(tempfile.mkdtemp(prefix="warmscope-warm-"))
        return warm_cache(self.settings, self._scratch, run=lambda s: self._step(s, WARMING))

    def _end_early(self, status: str, detail: str, exit_code: int) -> None:
        """The measured process never ran: its empty record goes, its data says why."""
        if "measure" not in self._started_steps:
            self.session.discard()
        if self.profiling is not None and PROFILING not in self._started_steps:
            self.profiling.discard()
        with self.session.lock:
            self.data.status, self.data.status_detail = status, detail
            self.data.exit_code = exit_code

    def _tell(self, line: str, warning: bool) -> None:
        if self._notify is not None:
            self._notify(line, warning)

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """Graceful stop of the process in progress; nothing starts after it."""
        with self._lock:
            self._halted = True
            target = self._current or (self.session if self._measuring else None)
        if target is not None:
            target.stop(grace)

    def kill(self) -> None:
        """SIGKILL the process in progress and its tree, now; nothing starts after it."""
        with self._lock:
            self._halted = True
            target = self._current or (self.session if self._measuring else None)
        if target is not None:
            target.kill()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the whole plan to end (its scratch folders removed); ``True`` if it did."""
        if self._thread is None:
            return self.session.wait(timeout)
        return self._done.wait(timeout)

    def is_finished(self) -> bool:
        return self._done.is_set() if self._thread is not None else self.session.is_finished()

    @property
    def proc(self) -> subprocess.Popen[bytes] | None:
        """The child in progress: an earlier process's, the measured one's, then the
        explaining one's."""
        current = self._current
        return current.proc if current is not None else self.session.proc

    @property
    def measuring(self) -> bool:
        """Whether the measured process has started."""
        return self._measuring

    # -- consumers ---------------------------------------------------------------------------

    def poll(self, cursor: Cursor, *, starts: bool = False) -> Update:
        """The measured run's news since ``cursor``; before it starts, nothing new but which
        earlier process runs, as the phase in progress."""
        update = self.session.poll(cursor, starts=starts)
        if not self._measuring and not update.finished and self.note is not None:
            update.phase = self.note
        elif update.finished and self._thread is not None and not self._done.is_set():
            # Measured, and explaining its first call: the run is not over until that is.
            update.finished = False
            update.phase = self.note
        return update

    def snapshot(self) -> RunData:
        return self.session.snapshot()

    def elapsed(self) -> float:
        """The measured process's time; before it starts, the earlier processes' time."""
        if self._measuring:
            return self.session.elapsed()
        return time.monotonic() - self._t0 if self._t0 else 0.0


def start_run(
    settings: RunSettings,
    *,
    record_path: Path | None = None,
    command: list[str] | None = None,
    overwrite: bool = False,
    warmed: Path | None = None,
    notify: Notify | None = None,
    explain: bool = False,
) -> PlannedRun:
    """Plan the run of ``settings`` and start it; returns at once.

    ``warmed``: a compile cache an earlier process filled (a sweep warms one per cell): the plan
    then warms none itself and leaves the folder alone. ``explain``: a slow first call that no
    event explains gets one more process after the measured one (a single run's, the command
    line's and the TUI's; a sweep's processes are many samples, not one to explain). Raises before anything runs
    (``SettingsError``, ``RecordError``: a record in the way) and, for a run with no earlier
    process, what ``RunSession.start`` raises; later failures end the run with a status and
    ``PlannedRun.failure``.
    """
    run = PlannedRun(
        settings,
        record_path=record_path,
        command=command,
        overwrite=overwrite,
        warmed=warmed,
        notify=notify,
        explain=explain,
    )
    run.start()
    return run


def _explained_event(note: dict[str, Any], t: float) -> Event:
    """A first call's label as an event of that call (``t``: when it came, as events say)."""
    return Event(
        first_call.EXPLAINED,
        note["label"],
        f"against steady iteration {note['against']}: {first_call.detail(note)}",
        iteration=note["iteration"],
        t=t,
        data={
            "against": note["against"],
            "source": note["source"],
            "reproduced": note.get("reproduced"),
            "share": note.get("share"),
        },
    )


def drive(
    run: PlannedRun,
    *,
    on_update: Callable[[Update], None] | None = None,
    hung_up: Callable[[], bool] | None = None,
    every: float = 0.1,
) -> bool:
    """Take ``run`` to its end, handing each poll's batch to ``on_update``. The first Ctrl-C
    (``KeyboardInterrupt``) stops it gracefully (quickly once ``hung_up()``: no one waits for
    it), a second kills it. ``True`` when Ctrl-C stopped it."""
    cursor = Cursor()
    try:
        while not run.wait(every):
            if on_update is not None:
                on_update(run.poll(cursor))
    except KeyboardInterrupt:
        quick = hung_up is not None and hung_up()
        run.stop(grace=QUICK_GRACE_S if quick else STOP_GRACE_S)
        try:
            run.wait()
        except KeyboardInterrupt:  # a second Ctrl-C: no more grace
            run.kill()
            run.wait()
        return True
    return False
