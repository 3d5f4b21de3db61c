"""A noisy run says so: the summary, the --json document and the report carry a warning."""

from __future__ import annotations

import random

from warmscope.core.data.document import to_document
from warmscope.core.data.run import RunData
from warmscope.core.data.settings import RunSettings
from warmscope.core.output.report import report
from warmscope.core.output.text_views import render_summary


def run_of(ms: list[float]) -> RunData:
    data = RunData(settings=RunSettings(target="sample:trivial"), mode="eager")
    data.add_iterations(0, ms, [float(i) for i in range(len(ms))])
    data.status, data.status_detail = "ok", f"{len(ms)} iterations"
    return data


def noisy_ms() -> list[float]:
    rnd = random.Random(3)
    return [40.0] + [rnd.choice([2.0, 2.1, 4.5, 1.6, 6.0]) for _ in range(80)]


def quiet_ms() -> list[float]:
    return [40.0, 6.0] + [2.0 + 0.01 * (i % 5) for i in range(80)]


def test_a_noisy_run_is_flagged_everywhere() -> None:
    data = run_of(noisy_ms())
    doc = to_document(data)
    assert doc["summary"]["noisy"] is True
    assert any("IQR" in w for w in doc["warnings"])
    assert "warning    noisy: steady IQR" in render_summary(data)
    assert "> **Warning:** noisy:" in report(data)


def test_a_quiet_run_has_no_warning() -> None:
    data = run_of(quiet_ms())
    doc = to_document(data)
    assert doc["summary"]["noisy"] is False and doc["warnings"] == []
    assert "warning" not in render_summary(data)
    assert "Warning" not in report(data)
