"""What watching a program costs (``warmscope exec``): a 12-layer transformer, watched and not.

Two measures, both on CPU, one thread:

- Fresh processes, in alternation: the same program run plainly and run with the exec
  bootstrap on ``PYTHONPATH`` (its stream drained by a socket here), each timing its steady
  calls one by one. Their medians differ by what watching adds to a call, end to end (the
  timer, the flusher thread that encodes and sends the batches).
- In one watched process, rounds that take the root module's timer out of its call slot and
  put it back, a short block of calls each way, each block's least CPU time of a call: the
  timer's own cost, each round's difference paired against the machine's drift. A tiny module (one
  parameter, a forward that returns its input) gives the cost of the timer alone; the
  transformer gives it with about a hundred submodule calls under it. Their difference,
  divided by the submodule calls, is what each submodule call pays: nothing is expected
  (submodules carry no timer and no hook; the program also reports how many do, and counts
  the Python functions a forward enters, watched and not: an exact count, whatever the load).

Prints figures only (this machine's load moves them by microseconds: the spread of the
rounds is printed beside each median).

    python benchmarks/exec_watch_cost.py [--calls N] [--processes R] [--rounds K]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BOOT = ROOT / "core" / "child" / "exec_boot"

PROGRAM = r"""
import json, statistics, sys, time
import torch
from torch import nn
import torch.nn.functional as F

torch.set_num_threads(1)
torch.manual_seed(0)

class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1, self.act, self.fc2 = nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d)

    def forward(self, x):
        q, k, v = self.qkv(self.ln1(x)).unflatten(-1, (3, 4, -1)).permute(2, 0, 3, 1, 4)
        x = x + self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(2))
        return x + self.fc2(self.act(self.fc1(self.ln2(x))))

class Transformer(nn.Module):
    def __init__(self, layers=12, d=32, vocab=100):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(Block(d) for _ in range(layers))
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.embed(ids)
        for block in self.blocks:
            x = block(x)
        return self.head(x)

class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        return x

def per_call_ns(model, x, calls):
    clock = time.perf_counter_ns
    times = []
    for _ in range(calls):
        t0 = clock(); model(x); times.append(clock() - t0)
    return statistics.median(times)

def submodule_calls(model, x):
    count = [0]
    def hook(module, args):
        count[0] += 1
    handle = nn.modules.module.register_module_forward_pre_hook(hook)
    model(x)
    handle.remove()
    return count[0] - 1

def cpu_per_call_ns(model, x, calls):
    # This thread's CPU time, the least of a block of calls: what another process on this
    # shared machine takes (a preemption, a cache it empties) is not counted, nor the
    # flusher thread's work (the fresh processes count that).
    clock = time.thread_time_ns
    least = None
    for _ in range(calls):
        t0 = clock()
        model(x)
        spent = clock() - t0
        least = spent if least is None else min(least, spent)
    return least

def python_calls(model, x):
    # Python functions a forward enters, counted by a profile hook: exact, whatever the load.
    count = [0]
    def profile(frame, event, arg):
        if event == "call":
            count[0] += 1
    sys.setprofile(profile)
    model(x)
    sys.setprofile(None)
    return count[0]

def alternating(model, x, calls, rounds):
    # The root's timer out, then in, for a short block of calls each, round after round: each
    # round's difference of medians is paired against the machine's drift.
    timer = vars(model).pop("_compiled_call_impl", None)
    differences = []
    for _ in range(rounds):
        vars(model).pop("_compiled_call_impl", None)
        plain = cpu_per_call_ns(model, x, calls)
        vars(model)["_compiled_call_impl"] = timer
        differences.append(cpu_per_call_ns(model, x, calls) - plain)
    return differences

mode, calls, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = {}
with torch.no_grad():
    for name, model, x in (
        ("tiny", Tiny(), torch.randn(8, 32)),
        ("transformer", Transformer(), torch.randint(0, 100, (1, 16))),
    ):
        model.eval()
        for _ in range(50):
            model(x)
        result = {"per_call_ns": per_call_ns(model, x, calls), "python_calls": python_calls(model, x)}
        if mode == "plain":
            result["submodule_calls"] = submodule_calls(model, x)
        else:
            result["carrying"] = sum(
                1 for m in model.modules() if vars(m).get("_compiled_call_impl") is not None
            )
            result["global_hooks"] = len(nn.modules.module._global_forward_pre_hooks) + len(
                nn.modules.module._global_forward_hooks
            )
            result["alternating"] = alternating(model, x, 25, rounds)
        out[name] = result
print(json.dumps(out))
"""


def drain(server: socket.socket) -> None:
    """Accept the watched processes' streams and read them to the end."""

    def read(conn: socket.socket) -> None:
        with conn:
            while conn.recv(1 << 16):
                pass

    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        threading.Thread(target=read, args=(conn,), daemon=True).start()


def run(program: Path, mode: str, calls: int, rounds: int, sock: str) -> dict:
    env = dict(os.environ)
    if mode == "watched":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(BOOT), env.get("PYTHONPATH")]))
        env["WARMSCOPE_EXEC_SOCKET"] = sock
    proc = subprocess.run(
        [sys.executable, str(program), mode, str(calls), str(rounds)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def spread(values: list[float]) -> str:
    """The median and the range of the middle half, in µs."""
    q = statistics.quantiles(values, n=4) if len(values) > 1 else [values[0]] * 3
    return (
        f"{statistics.median(values) / 1e3:7.2f} µs  (mid-half {q[0] / 1e3:.2f}..{q[2] / 1e3:.2f})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000, help="steady calls timed per model")
    parser.add_argument("--processes", type=int, default=3, help="fresh processes per arm")
    parser.add_argument("--rounds", type=int, default=300, help="alternations in one process")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        program = Path(folder) / "program.py"
        program.write_text(PROGRAM)
        sock = os.path.join(folder, "exec.sock")
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(sock)
        server.listen(8)
        threading.Thread(target=drain, args=(server,), daemon=True).start()
        results: dict[str, list[dict]] = {"plain": [], "watched": []}
        for _ in range(args.processes):
            for mode in results:
                results[mode].append(run(program, mode, args.calls, args.rounds, sock))
        server.close()

    print(f"fresh processes, {args.processes} per arm, median of {args.calls} steady calls each")
    for model in ("tiny", "transformer"):
        plain = [r[model]["per_call_ns"] for r in results["plain"]]
        watched = [r[model]["per_call_ns"] for r in results["watched"]]
        added = statistics.median(watched) - statistics.median(plain)
        print(f"  {model:12} plain {spread(plain)}")
        print(f"  {'':12} watched {spread(watched)}   added {added / 1e3:+.2f} µs a call")

    print(
        f"\none watched process, the root's timer out then in, 25 calls each, {args.rounds} "
        "rounds (the thread's CPU time)"
    )
    added_by_model = {}
    differences = {}
    for model in ("tiny", "transformer"):
        differences[model] = [v for r in results["watched"] for v in r[model]["alternating"]]
        added_by_model[model] = statistics.median(differences[model])
        print(f"  {model:12} added {spread(differences[model])} a call")

    subs = statistics.median(r["transformer"]["submodule_calls"] for r in results["plain"])
    carrying = max(r["transformer"]["carrying"] for r in results["watched"])
    hooks = max(r["transformer"]["global_hooks"] for r in results["watched"])
    quartiles = statistics.quantiles(differences["transformer"], n=4)
    low, high = ((q - added_by_model["tiny"]) / max(subs, 1) for q in (quartiles[0], quartiles[2]))
    per_sub = (added_by_model["transformer"] - added_by_model["tiny"]) / max(subs, 1)
    entered = {
        model: [
            statistics.median(r[model]["python_calls"] for r in results[mode])
            for mode in ("plain", "watched")
        ]
        for model in ("tiny", "transformer")
    }
    print(
        "\nPython functions a forward enters (a profile hook's count, exact): "
        + ", ".join(f"{m} {p:.0f} -> {w:.0f} ({w - p:+.0f})" for m, (p, w) in entered.items())
    )
    print(
        f"per submodule call: {per_sub:+.1f} ns (the rounds' middle half: {low:+.1f}..{high:+.1f};"
        f" {subs:.0f} submodule calls a forward)\nmodules carrying a timer: {carrying} of the"
        f" tree (the root); global forward hooks: {hooks}"
    )


if __name__ == "__main__":
    main()
