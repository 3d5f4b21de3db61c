"""The run's GPU as nvitop shows a device: each reading against its ceiling, "N/A" where the
device does not say.

From a run's newest sample (the parent's NVML readings, ``core.child.gpu_sampler``) and its
``env`` (NVML's description of the device: its limits; the child's CUDA facts). Pure, so the
Usage pane draws it and a test reads it without a screen.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from warmscope.core.data import env_keys

NA = "N/A"


@dataclass(frozen=True)
class Reading:
    """One line of the readout: a name, the reading, and what a bar and a sparkline draw."""

    label: str
    text: str
    """The reading, against its ceiling where it has one: ``672 / 700 W``; ``N/A`` where the
    device does not say."""
    fraction: float | None = None
    """The reading as a share of its ceiling, for a bar; ``None``: no bar."""
    key: str = ""
    """The sample key whose history a sparkline draws; empty: none."""
    top: float | None = None
    """The sparkline's ceiling (the device's own limit), so a clock or a power reads against
    what the device can do, not against the largest value seen."""
    room: int = 0
    """How wide ``text`` can grow in this run (its value at the ceiling): a column sized to
    it stays put as the value changes."""


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _int(value: float) -> str:
    return f"{value:,.0f}"


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def against(value: float | None, limit: float | None, unit: str) -> tuple[str, int]:
    """``672 / 700 W``, ``672 W / N/A``, ``N/A / 700 W`` or ``N/A``; with the width the text
    can reach."""
    if value is not None and limit is not None:
        return f"{_int(value)} / {_int(limit)}{unit}", len(f"{_int(limit)} / {_int(limit)}{unit}")
    if value is not None:
        text = f"{_int(value)}{unit} / {NA}"
    elif limit is not None:
        text = f"{NA} / {_int(limit)}{unit}"
    else:
        text = NA
    return text, len(text)


def _share(value: float | None, limit: float | None) -> float | None:
    if value is None or limit is None or limit <= 0:
        return None
    return max(0.0, value / limit)


def _percent(value: float | None) -> str:
    return NA if value is None else f"{value:.0f}%"


def _na(value: float | None, show: Callable[[float], str]) -> str:
    return NA if value is None else show(value)


def has_gpu(sample: dict[str, Any]) -> bool:
    """Whether a sample holds GPU readings (the run's device sampled through NVML)."""
    return any(key.startswith("gpu_") for key in sample)


def device_line(env: dict[str, Any], device: str = "") -> str:
    """``GPU 0 · NVIDIA H100 80GB HBM3 (sm 9.0), CUDA 13.0, cuDNN 9.19.0, module loading LAZY,
    cuDNN autotuning off, TF32 matmul off · driver 580.159.04``: NVML's device (a MIG slice
    said so), the child's CUDA facts as it saw them (``env_keys``), the driver. Without NVML,
    the run's ``device`` stands for NVML's index."""
    gpu = env_keys.nvml_gpu(env)
    cuda_name = str(env_keys.cuda_device(env).get("name") or "")
    index = gpu.get("index")
    text = f"GPU {index}" if isinstance(index, int) else (device or "GPU")
    if gpu.get("mig"):
        text += " (MIG slice)"
    name = str(gpu.get("name") or cuda_name)
    if name:
        text += f" · {name}"
    facts = env_keys.shown(env, "cuda_device")
    if facts and cuda_name == name and facts.startswith(name):
        text += facts[len(name) :]  # the same name twice says nothing: "(sm 9.0), CUDA 13.0"
    elif facts:
        text += f" · {facts}"
    if env.get("driver"):
        text += f" · driver {env['driver']}"
    return text


def readings(
    sample: dict[str, Any], env: dict[str, Any], *, compact: bool = False
) -> list[Reading]:
    """The device's readings in nvitop's order (utilisation, memory, SM clock, power,
    temperature, PCIe), then the child's own share of it (SM, memory). ``compact``: two lines
    fewer, temperature with PCIe and the child's SM share with its memory."""
    gpu = env_keys.nvml_gpu(env)
    total = _num(gpu.get("memory_mb"))

    def get(key: str) -> float | None:
        return _num(sample.get(key))

    util = get("gpu_util")
    used = get("gpu_mem_mb")
    sm, sm_max = get("gpu_sm_mhz"), _num(gpu.get("sm_max_mhz"))
    power, limit = get("gpu_power_w"), _num(gpu.get("power_limit_w"))
    temp = _na(get("gpu_temp_c"), lambda v: f"{v:.0f}°C")
    tx, rx = (get(key) for key in ("gpu_pcie_tx_mbs", "gpu_pcie_rx_mbs"))
    child_sm, child_mem = get("gpu_proc_sm"), get("gpu_proc_mem_mb")
    child_mem_text = _na(child_mem, lambda mb: f"{_int(mb)} MB")

    memory, memory_room = against(used, total, " MB")
    clock, clock_room = against(sm, sm_max, " MHz")
    watts, watts_room = against(power, limit, " W")
    out = [
        Reading("util", _percent(util), _share(util, 100.0), "gpu_util", 100.0, 4),
        Reading("memory", memory, _share(used, total), "gpu_mem_mb", total, memory_room),
        Reading("SM clock", clock, _share(sm, sm_max), room=clock_room),
        Reading("power", watts, _share(power, limit), "gpu_power_w", limit, watts_room),
    ]
    tx_text, rx_text = (_na(v, lambda mbs: f"{_rate(mbs)} MB/s") for v in (tx, rx))
    if compact:
        pcie = NA if tx is None and rx is None else f"tx {tx_text} · rx {rx_text}"
        return [
            *out,
            Reading("temp", f"{temp} · PCIe {pcie}"),
            Reading("child", f"SM {_percent(child_sm)} · memory {child_mem_text}"),
        ]
    mem_room = len(f"{_int(total)} MB") if total is not None else 0
    return [
        *out,
        Reading("temp", temp),
        Reading("PCIe tx", tx_text),
        Reading("PCIe rx", rx_text),
        Reading("child SM", _percent(child_sm), _share(child_sm, 100.0), room=4),
        Reading("child mem", child_mem_text, _share(child_mem, total), room=mem_room),
    ]


def not_reported(env: dict[str, Any]) -> str:
    """The readings NVML said this device does not have, in a line (empty: none)."""
    unsupported = env_keys.nvml_gpu(env).get("unsupported")
    if not unsupported or not isinstance(unsupported, list):
        return ""
    return "not reported by the device: " + ", ".join(map(str, unsupported))
