"""The agent applies knobs by their declaration; one this torch lacks or refuses is reported."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest

from warmscope.core.child import knobs, torch_knobs


class Recorder:
    """Stands in for the agent's protocol channel: keeps what would have been sent."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any], *, now: bool = False) -> None:
        self.sent.append(message)


def test_missing_and_refused_knobs_are_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    missing = knobs.Knob(
        "future_knob",
        "bool",
        None,
        "an API a later torch may have",
        "call:torch._C._no_such_setter",
    )
    monkeypatch.setattr(
        torch_knobs.knobs, "KNOBS", (missing, knobs.KNOB_BY_NAME["inter_op_threads"])
    )
    # torch refuses a second set_num_interop_threads: after the first, the knob must be refused.
    with contextlib.suppress(RuntimeError):
        torch.set_num_interop_threads(torch.get_num_interop_threads())
    channel = Recorder()
    torch_knobs.apply_knobs(torch, {"future_knob": True, "inter_op_threads": 1}, channel)  # type: ignore[arg-type]
    titles = [m["title"] for m in channel.sent]
    assert any("future_knob not supported by torch" in t and "_no_such_setter" in t for t in titles)
    assert any(t.startswith("knob inter_op_threads=1 refused") for t in titles), titles
    assert all(m["kind"] == "knob" for m in channel.sent)


def test_applied_knobs_take_effect(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    channel = Recorder()
    was = torch._C._get_graph_executor_optimize()
    try:
        torch_knobs.apply_knobs(torch, {"graph_optimizer": not was, "intra_op_threads": 1}, channel)  # type: ignore[arg-type]
        assert torch._C._get_graph_executor_optimize() is (not was)
        assert torch.get_num_threads() == 1
        assert channel.sent == []
    finally:
        torch._C._set_graph_executor_optimize(was)
