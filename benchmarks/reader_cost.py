"""What the parent's reader costs per iteration, against the goal of the issue "Light on the
wire" (the UI process at most 10% of a core while a tiny model runs at ~60k iterations/s).

1. offline: batches as the agent sends them (50 ms of a model at ``--rate`` iterations a
   second each) fed to a ``RunSession``'s reader path (decode, pack, fold, record) and polled
   as the TUI polls; microseconds per iteration, by stage;
2. live: ``sample:trivial`` in a real child for ``--seconds``, polled as the TUI polls; the
   CPU of the reader thread and of this whole process, as % of a core, at the rate it ran.

    python benchmarks/reader_cost.py [--rate 60000] [--seconds 10] [--skip-live]
"""

from __future__ import annotations

import argparse
import random
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from warmscope.core.child import protocol
from warmscope.core.data.fold import apply_line, record_entry
from warmscope.core.data.run import Cursor, RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.run.session import RunSession

GOAL_UI = 10.0  # % of a core, the whole UI process at ~60k it/s
POLL_HZ = 20.0  # the TUI's poll (tui/controller.py)
BATCH_S = 0.05  # the agent's flush (core/child/channel.py FLUSH_EVERY_NS)


def batches(rate: float, seconds: float, seed: int = 1) -> list[bytes]:
    """The agent's ``iters`` lines for ``seconds`` of a model at ``rate`` iterations/s."""
    rng = random.Random(seed)
    per = int(rate * BATCH_S)
    period = int(1e9 / rate)
    lines, t, i = [], 0, 0
    for _ in range(int(seconds / BATCH_S)):
        ns, st = [], []
        for _ in range(per):
            d = int(period * 0.8 + rng.expovariate(1 / (period * 0.05)))
            st.append(t + rng.randrange(150, 400))
            ns.append(d)
            t = st[-1] + d
        lines.append(protocol.encode_iters(i, ns, st, None))
        i += per
    return lines


def timed(fn: Callable[[], object]) -> float:
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def offline(rate: float, seconds: float, tmp: Path) -> None:
    lines = batches(rate, seconds)
    n = int(rate * BATCH_S) * len(lines)
    per_poll = max(1, round(1 / POLL_HZ / BATCH_S))

    # By stage, outside the session: what each one costs alone.
    msgs: list[dict] = []
    entries: list[tuple[dict, Any]] = []
    data = RunData()
    decode = timed(lambda: msgs.extend(protocol.decode(line) for line in lines))
    pack = timed(lambda: entries.extend(record_entry(m, 0.0) for m in msgs))

    def fold() -> None:
        for line, packed in entries:
            apply_line(data, line, packed)

    fold_s = timed(fold)
    data, cursor = RunData(), Cursor()  # again, polled as the TUI polls

    def fold_and_poll() -> None:
        for k, (line, packed) in enumerate(entries):
            apply_line(data, line, packed)
            if k % per_poll == per_poll - 1:
                data.since(cursor, starts=False)

    fold_poll = timed(fold_and_poll)

    # The session's own path: decode, pack, fold and write, under its lock, polled.
    session = RunSession(
        RunSettings(target="sample:trivial"), record_path=tmp / "offline.jsonl", overwrite=True
    )
    session._t0 = time.monotonic()
    cur = Cursor()

    def whole() -> None:
        for k, line in enumerate(lines):
            session.protocol_lines([line])
            if k % per_poll == per_poll - 1:
                session.poll(cur)
        session.record.flush()

    total = timed(whole)
    us = 1e6 / n
    print(f"1. offline: {n:,} iterations in {len(lines)} batches of {n // len(lines):,}")
    print(f"   decode JSON        {decode * us:6.3f} us/iteration")
    print(f"   record_line (pack) {pack * us:6.3f} us/iteration")
    print(f"   apply_line (fold)  {fold_s * us:6.3f} us/iteration")
    print(
        f"   fold + poll        {fold_poll * us:6.3f} us/iteration (poll: {(fold_poll - fold_s) * us:.3f})"
    )
    cost = total * us
    print(
        f"   session, all told  {cost:6.3f} us/iteration: {cost * rate / 1e4:.1f}% of a core "
        f"at {rate:,.0f} it/s"
    )


def child_flush(rate: float) -> None:
    """What the child pays to encode one batch: the columns as base64 (protocol 2) against
    JSON lists of integers (protocol 1)."""
    per = int(rate * BATCH_S)
    ns = [int(1e9 / rate) + k % 97 for k in range(per)]
    st = [10**9 + k * int(1e9 / rate) for k in range(per)]
    rounds = 200

    def cost(encode: Callable[[], bytes]) -> float:
        return timed(lambda: [encode() for _ in range(rounds)]) / rounds * 1e6

    lists = cost(lambda: protocol.encode({"t": "iters", "i0": 0, "ns": ns, "st": st}))
    columns = cost(lambda: protocol.encode_iters(0, ns, st, None))
    print(
        f"   the child's flush of {per:,} iterations: {columns:.0f} us as base64 columns, "
        f"{lists:.0f} us as JSON lists (protocol 1)"
    )


def live(seconds: float, tmp: Path) -> None:
    settings = RunSettings(target="sample:trivial", duration=seconds + 6)
    session = RunSession(settings, record_path=tmp / "live.jsonl", overwrite=True)
    me = psutil.Process()
    session.start()
    reader = next(t for t in threading.enumerate() if t.name == "warmscope-reader")
    cursor = Cursor()

    def reader_cpu() -> float:
        for th in me.threads():
            if th.id == reader.native_id:
                return th.user_time + th.system_time
        return 0.0

    while session.data.count < 1000 and not session.is_finished():
        session.poll(cursor)
        time.sleep(1 / POLL_HZ)
    time.sleep(1.0)  # past the first batches
    c0, r0, n0, t0 = me.cpu_times(), reader_cpu(), session.data.count, time.monotonic()
    while time.monotonic() - t0 < seconds and not session.is_finished():
        session.poll(cursor)
        time.sleep(1 / POLL_HZ)
    c1, r1, n1, t1 = me.cpu_times(), reader_cpu(), session.data.count, time.monotonic()
    session.stop()
    session.wait(30)
    wall = t1 - t0
    proc = (c1.user + c1.system - c0.user - c0.system) / wall * 100
    rate = (n1 - n0) / wall
    print(f"2. live sample:trivial, {wall:.1f} s at {rate:,.0f} it/s, polled at {POLL_HZ:g} Hz:")
    print(
        f"   reader thread {(r1 - r0) / wall * 100:5.1f}% of a core; this process "
        f"{proc:5.1f}% ({(c1.user + c1.system - c0.user - c0.system) / max(n1 - n0, 1) * 1e6:.2f}"
        f" us/iteration); goal for the whole UI process <= {GOAL_UI:g}% at ~60k it/s"
    )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rate", type=float, default=60000.0, help="iterations/s, offline")
    p.add_argument("--offline-seconds", type=float, default=20.0)
    p.add_argument("--seconds", type=float, default=10.0, help="the live run's measured time")
    p.add_argument("--skip-live", action="store_true")
    args = p.parse_args()
    with tempfile.TemporaryDirectory(prefix="warmscope-reader-") as name:
        offline(args.rate, args.offline_seconds, Path(name))
        child_flush(args.rate)
        if not args.skip_live:
            live(args.seconds, Path(name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
