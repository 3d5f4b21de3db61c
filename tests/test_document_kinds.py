"""Every record line kind reaches the ``--json`` document and reads back from it: a real run
that writes most kinds at once (shapes, an idle probe, the opening replayed, a profile in the
run, samples, memory, waits for a core), its record and its document read back to the same
data, kind by kind; a kind the table gains without a way into the document fails here."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.conftest import FACTORIES, warmscope
from warmscope.core.data import schema
from warmscope.core.data.document import read_document
from warmscope.core.data.reading import read_run
from warmscope.core.data.run import RunData

SAME: dict[str, Callable[[RunData], Any]] = {
    "header": lambda d: (d.settings.to_json(), d.mode, d.run_id),
    "spawned": lambda d: d.env.get("agent_pid"),
    "env": lambda d: d.env,
    "phase": lambda d: (d.phases, d.phase_reads),
    "iters": lambda d: (d.count, list(d.ms), list(d.shape_of)),
    "device": lambda d: (list(d.device_ns), list(d.launch_ns)),
    "reads": lambda d: d.disk_reads,
    "waits": lambda d: d.cpu_waits,
    "event": lambda d: [(e.kind, e.title, e.iteration) for e in d.events],
    "sample": lambda d: d.samples,
    "profile": lambda d: sorted(d.profiles),
    "graphs": lambda d: d.graphs,
    "inputs": lambda d: (d.inputs, d.inputs_source),
    "shapes": lambda d: (d.shape_keys, d.shape_dims),
    "idle_probe": lambda d: d.idle_probe,
    "opening": lambda d: d.opening,
    "memory": lambda d: d.memory,
    "error": lambda d: d.error,
    "end": lambda d: (d.status, d.status_detail, d.exit_code),
}
"""What each kind folds into, as the record and the document must both give it."""


def test_every_kind_has_its_place_in_the_document() -> None:
    assert set(SAME) == set(schema.KINDS), "a new kind: say here what it folds into"


def test_a_real_runs_kinds_read_back_the_same_from_its_document(tmp_path: Path) -> None:
    record, doc_path = tmp_path / "run.jsonl", tmp_path / "run.json"
    r = warmscope(
        "run", f"{FACTORIES}:tiny", "--input", "2xNx8", "--dim", "N=4,8", "--iters", "24",
        "--idle-probe", "0.05", "--replay-opening", "--profile-iters", "1",
        "--profile-in-run", "--record", str(record), "--no-explain", json_path=doc_path,
    )  # fmt: skip
    assert r.code == 0, r.stderr
    kinds = {json.loads(line)["type"] for line in record.read_text().splitlines()}
    # The kinds this run writes (the rest: a failure, a CUDA device, reads from a cold disk,
    # a TorchScript graph, a run that waited for a core, are other runs').
    assert {"shapes", "idle_probe", "opening", "profile", "memory", "iters"} <= kinds, kinds
    from_record = read_run(record)
    from_document = read_document(json.loads(doc_path.read_text()), doc_path)
    differ = [
        kind
        for kind in sorted(kinds & set(SAME))
        if kind not in ("header", "spawned", "sample")  # the document's own rounding
        and SAME[kind](from_record) != SAME[kind](from_document)
    ]
    assert differ == [], {k: (SAME[k](from_record), SAME[k](from_document)) for k in differ}
