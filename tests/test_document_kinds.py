"""Every record line kind is declared once (``schema.KINDS``: its check, its fold, the
``RunData`` fields it holds, the ``--json`` keys it travels under), and the declaration holds:

- a real run that writes most kinds at once (shapes, an idle probe, the opening replayed, a
  profile in the run, samples, memory), and records kept as real runs wrote them (a GPU's
  device times, a failure, a TorchScript graph), folded line by line: each line writes only
  the fields its kind declares;
- the run's record and its ``--json`` document read back to the same fields, kind by kind;
- every kind's document keys are in the document, so a kind cannot be dropped from it;
- a snapshot taken half way keeps what it held while the rest of the record is folded.
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import FACTORIES, warmscope
from warmscope.core.data import schema
from warmscope.core.data.document import read_document
from warmscope.core.data.packing import MsView, Starts
from warmscope.core.data.reading import read_run
from warmscope.core.data.run import RunData

DATA = Path(__file__).parent / "data"
KEPT = [
    DATA / "failed-at-3.jsonl",  # a model that failed
    DATA / "feeding-shapes.jsonl",  # shapes, inputs
    # a TorchScript run on an H100, from a cold page cache: graphs, device times, disk reads
    DATA / "gpu_h100" / "runs" / "cnn-script-cold-page-cache-phases" / "c1.jsonl",
    # `warmscope exec` of a program calling a torch.compile'd module at two batch sizes
    DATA / "exec-compiled.jsonl",
]


@pytest.fixture(scope="module")
def real_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """One real run writing most kinds, its record and its ``--json`` document."""
    folder = tmp_path_factory.mktemp("kinds")
    record, doc_path = folder / "run.jsonl", folder / "run.json"
    r = warmscope(
        "run", f"{FACTORIES}:tiny", "--input", "2xNx8", "--dim", "N=4,8", "--iters", "24",
        "--idle-probe", "0.05", "--replay-opening", "--profile-iters", "1",
        "--profile-in-run", "--record", str(record), "--no-explain", json_path=doc_path,
    )  # fmt: skip
    assert r.code == 0, r.stderr
    return record, doc_path


def lines(path: Path) -> Iterator[dict[str, Any]]:
    for text in path.read_text().splitlines():
        if text.strip():
            yield json.loads(text)


def plain(value: Any) -> Any:
    """A field's value to compare: arrays and other sequences as lists."""
    if isinstance(value, (array, Starts, MsView)):
        return list(value)
    return value


def held(data: RunData, kind: str) -> dict[str, Any]:
    return {name: plain(getattr(data, name)) for name in schema.KINDS[kind].holds}


def every_field(data: RunData) -> dict[str, Any]:
    return {name: repr(plain(value)) for name, value in vars(data).items()}


def test_each_line_writes_only_the_fields_its_kind_declares(real_run: tuple[Path, Path]) -> None:
    seen: set[str] = set()
    for path in [real_run[0], *KEPT]:
        data = RunData()
        for line in lines(path):
            kind = line.get("type")
            if kind not in schema.KINDS:
                continue
            before = every_field(data)
            schema.check_line(line)
            schema.apply_line(data, line)
            after = every_field(data)
            written = {name for name in after if after[name] != before.get(name)}
            # The caches a fold clears or fills are the run's own, not a kind's.
            written -= {"_summary", "_state", "_shapes"}
            assert written <= set(schema.KINDS[kind].holds), (path.name, kind, written)
            seen.add(kind)
    # The kinds these runs write; the error line of a model that raised is
    # tests/test_reliability.py's.
    assert set(schema.KINDS) - seen <= {"error"}, set(schema.KINDS) - seen


def test_a_real_runs_kinds_read_back_the_same_from_its_document(
    real_run: tuple[Path, Path],
) -> None:
    record, doc_path = real_run
    kinds = {line["type"] for line in lines(record)}
    assert {"shapes", "idle_probe", "opening", "profile", "memory", "iters"} <= kinds, kinds
    doc = json.loads(doc_path.read_text())
    for kind, declared in schema.KINDS.items():
        missing = [key for key in declared.document if key not in doc]
        assert missing == [], f"{kind}: the document has no {missing}"
    from_record = read_run(record)
    from_document = read_document(doc, doc_path)
    differ = {
        kind: (held(from_record, kind), held(from_document, kind))
        for kind in sorted(kinds)
        # the document's own rounding: times in ms to the µs, a sample's figures
        if kind not in ("header", "spawned", "sample")
        and held(from_record, kind) != held(from_document, kind)
    }
    assert differ == {}


def test_a_snapshot_keeps_what_it_held_while_the_rest_is_folded(
    real_run: tuple[Path, Path],
) -> None:
    entries = list(lines(real_run[0]))
    data = RunData()
    half = len(entries) // 2
    for line in entries[:half]:
        schema.apply_line(data, line)
    snap = data.snapshot()
    before = every_field(snap)
    for line in entries[half:]:
        schema.apply_line(data, line)
    assert every_field(data) != before  # the run went on
    assert every_field(snap) == before
