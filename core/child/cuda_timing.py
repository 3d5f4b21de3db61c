"""Waiting for and timing a call's work on the current CUDA stream, as the timed loop, the
opening's replay and the idle probe do.

Child side: loaded by the agent by path (standard library only at import; torch is passed in).
"""

from __future__ import annotations

from typing import Any


def event_calls(torch: Any) -> tuple[Any, Any]:
    """``record(event, stream)`` and ``wait(event)``: the CUDA event base's own methods, called
    without ``torch.cuda.Event``'s Python wrappers (a microsecond a call, inside the timed
    span); the wrappers where a torch has no such base."""
    base = getattr(torch._C, "_CudaEventBase", None)
    record = getattr(base, "record", None)
    wait = getattr(base, "synchronize", None)
    if record is None or wait is None:
        return (lambda event, stream: event.record(stream)), (lambda event: event.synchronize())
    return record, wait


def stream_sync(torch: Any) -> Any:
    """A wait for the work queued on the current stream: an event recorded there after the
    call, then waited on. What reading the call's output waits for, and far cheaper than
    ``torch.cuda.synchronize()`` (every stream of the device: about 20 µs more a call, seen
    on an H100). The stream is the one current when the loop starts."""
    record, wait = event_calls(torch)
    done = torch.cuda.Event()
    stream = torch.cuda.current_stream()

    def sync() -> None:
        record(done, stream)
        wait(done)

    return sync


def device_sync(torch: Any, cfg: dict[str, Any]) -> Any:
    """``stream_sync`` on a CUDA device; ``None`` elsewhere (a CPU call is done when it returns)."""
    return stream_sync(torch) if cfg["knobs"]["device"].startswith("cuda") else None


class DeviceTimer:
    """CUDA event pairs for the loop's calls, used round-robin: more than a batch holds
    (``timed_loop.FLUSH_MAX_ITERS``), so a pair is read before it is recorded again."""

    def __init__(self, torch: Any, size: int) -> None:
        event = torch.cuda.Event
        self.pairs = [(event(enable_timing=True), event(enable_timing=True)) for _ in range(size)]
        self.stream = torch.cuda.current_stream()
        self.record, self.wait = event_calls(torch)

    def read(self, timed: list[int]) -> list[int]:
        """The device time of each call, in integer ns (-1: not timed)."""
        pairs = self.pairs
        return [int(pairs[k][0].elapsed_time(pairs[k][1]) * 1e6) if k >= 0 else -1 for k in timed]
