"""A benchmark's verdict says what its measurement can tell: ``benchmarks/device_time_cost.py``
calls its goal met or missed only where the median's 95% interval lies on one side of it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "device_time_cost.py"
spec = importlib.util.spec_from_file_location("device_time_cost", PATH)
assert spec is not None and spec.loader is not None
cost = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cost)


def test_an_interval_across_the_goal_is_not_resolved() -> None:
    # The H100 blocks of a noisy machine: a median of 8.3 µs whose blocks spread ±20 µs.
    said, code = cost.verdict(-19.54, 20.15, 2.0)
    assert code == 2 and said.startswith("not resolved")
    assert cost.verdict(3.40, 6.86, 2.0) == ("missed", 1)
    assert cost.verdict(0.10, 1.90, 2.0) == ("met", 0)


def test_the_interval_of_forty_blocks_leaves_out_the_outer_thirteen() -> None:
    assert cost.median_rank(40) == 14  # 1-based: the 14th from each end
    assert cost.median_interval([float(i) for i in range(40)]) == (13.0, 26.0)


@pytest.mark.parametrize("n", [6, 7, 16, 21, 40, 80, 200])
def test_the_interval_holds_the_median_at_least_95_times_in_100(n: int) -> None:
    k = cost.median_rank(n)
    assert cost.median_coverage(n, k) >= 0.95
    assert cost.median_coverage(n, k + 1) < 0.95, "and it is the narrowest that does"


def test_too_few_blocks_give_no_interval() -> None:
    assert max(cost.median_coverage(5, k) for k in (1, 2)) < 0.95
    assert cost.median_interval([3.0, 1.0, 2.0]) == (1.0, 3.0)
