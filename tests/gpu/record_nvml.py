"""Record NVML's answers on a real GPU, for the sampler's tests on machines without one.

Run on a GPU machine (with torch built for CUDA): it starts a child that keeps the GPU busy with
matrix products, then asks NVML every call the sampler makes (``tests/nvml_replay.CALLS``) for every
device, and writes each answer, or the NVML error code it raised, as JSON:

    python tests/gpu/record_nvml.py tests/data/nvml/recorded-<gpu>.json

The child's pid is written as ``child_pid``: the tests map it to a pid of their own.
"""

from __future__ import annotations

import ctypes
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pynvml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script, too
from tests.nvml_replay import CALLS, KEYED

BUSY = (
    "import torch, time\n"
    "a = torch.randn(4096, 4096, device='cuda')\n"
    "t = time.monotonic()\n"
    "while time.monotonic() - t < 30: a = a @ a; a /= a.norm(); torch.cuda.synchronize()\n"
)


def plain(value: Any) -> Any:
    """An NVML answer as JSON, as ``tests/nvml_replay`` reads it back.

    pynvml answers in several shapes: ctypes structures (memory, utilization), plain ints and
    text, ctypes scalars (``nvmlDeviceIsMigDeviceHandle`` returns a ``c_uint``), lists of
    structures sliced from ctypes arrays (process utilization) and ``nvmlFriendlyObject``s
    (running processes). Structures and friendly objects become dicts of their fields, scalars
    their value, arrays and sequences lists, bytes text.
    """
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, pynvml.nvmlFriendlyObject):
        return {name: plain(v) for name, v in vars(value).items()}
    if isinstance(value, (ctypes.Structure, ctypes.Union)):
        return {name: plain(getattr(value, name)) for name, *_ in value._fields_}
    if isinstance(value, ctypes._SimpleCData):  # the documented base of c_uint and its kin
        return plain(value.value)
    if isinstance(value, (ctypes.Array, list, tuple)):
        return [plain(v) for v in value]
    return value


def ask(call: str, *args: Any) -> Any:
    try:
        return plain(getattr(pynvml, call)(*args))
    except pynvml.NVMLError as exc:
        return {"error_code": exc.value, "error": str(exc)}


def main() -> int:
    out = Path(sys.argv[1])
    child = subprocess.Popen([sys.executable, "-c", BUSY])
    try:
        time.sleep(8)  # the context made and the kernels running
        pynvml.nvmlInit()
        devices = []
        for index in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(index)
            calls: dict[str, Any] = {}
            for call in CALLS:
                if call in KEYED:
                    calls[call] = {
                        str(getattr(pynvml, kind)): ask(call, h, getattr(pynvml, kind))
                        for kind in KEYED[call]
                    }
                elif call == "nvmlDeviceGetProcessUtilization":
                    calls[call] = ask(call, h, 0)
                else:
                    calls[call] = ask(call, h)
            devices.append({"index": index, "calls": calls})
        recording = {
            "recorded": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "driver": ask("nvmlSystemGetDriverVersion"),
            "child_pid": child.pid,
            "devices": devices,
        }
    finally:
        child.kill()
        child.wait()
    out.write_text(json.dumps(recording, indent=1) + "\n", encoding="utf-8")
    print(f"recorded {len(devices)} device(s) into {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
