"""The run's knobs and torch config options, set on the child's torch before the model loads:
each as its declaration says (``knobs``), a knob this torch lacks or refuses reported as an
event, a value this build cannot honour refused before the run.

Child side: loaded by the agent by path (standard library only at import; torch is passed in).
"""

from __future__ import annotations

import contextlib
import importlib
from typing import Any

from . import knobs
from .channel import Channel, event
from .outcome import UsageError


def resolve_attr(root: Any, dotted: str) -> tuple[Any, str]:
    """``torch.backends.cudnn.benchmark`` -> (``torch.backends.cudnn``, ``"benchmark"``)."""
    parts = dotted.split(".")
    obj = root
    for part in parts[1:-1]:
        obj = getattr(obj, part)
    return obj, parts[-1]


def apply_knobs(torch: Any, values: dict[str, Any], channel: Channel) -> None:
    """Apply every knob that is set; report any this torch lacks or refuses."""
    for k in knobs.KNOBS:
        value = values.get(k.name)
        if value is None or k.apply in ("agent",) or k.apply.startswith("env:"):
            continue
        how, _, path = k.apply.partition(":")
        try:
            owner, attr = resolve_attr(torch, path)
            if not hasattr(owner, attr):
                raise AttributeError(attr)
        except AttributeError:
            channel.send(
                event(
                    "knob", f"knob {k.name} not supported by torch {torch.__version__}: no {path}"
                )
            )
            continue
        try:
            if how == "call":
                getattr(owner, attr)(k.torch_value(value))
            else:
                setattr(owner, attr, k.torch_value(value))
        except Exception as exc:
            channel.send(event("knob", f"knob {k.name}={k.show(value)} refused: {exc}"))


CONFIG_MODULES = {"dynamo": "torch._dynamo.config", "inductor": "torch._inductor.config"}


def check_capabilities(torch: Any, values: dict[str, Any]) -> None:
    """Knob values this torch build cannot honour: refused before the run, the reason named."""
    engine = values.get("quantized_engine")
    supported = getattr(torch.backends.quantized, "supported_engines", None)
    if engine and supported is not None and engine not in supported:
        raise UsageError(
            f"quantized_engine={engine}: this torch ({torch.__version__}) has the engines "
            f"{', '.join(e for e in supported if e != 'none')}"
        )
    if values.get("onednn_fusion") and not torch.backends.mkldnn.is_available():
        raise UsageError(
            f"onednn_fusion=on: this torch ({torch.__version__}) was built without oneDNN "
            "(torch.backends.mkldnn.is_available() is False)"
        )
    if values.get("cpu_fusion"):
        llvm = getattr(torch._C, "_llvm_enabled", None)
        if llvm is not None and not llvm():
            raise UsageError(
                f"cpu_fusion=on: this torch ({torch.__version__}) was built without LLVM, so "
                "the TensorExpr fuser cannot generate CPU code; leave cpu_fusion at default"
            )


def apply_torch_config(config: dict[str, str], channel: Channel) -> None:
    """``dynamo.NAME=VALUE`` / ``inductor.NAME=VALUE`` on the installed torch's config
    modules, the text converted to the option's current type; a refusal is an event."""
    for key, text in config.items():
        prefix, _, name = key.partition(".")
        try:
            owner: Any = importlib.import_module(CONFIG_MODULES[prefix])
            *path, attr = name.split(".")
            for part in path:
                owner = getattr(owner, part)
            if not hasattr(owner, attr):
                raise AttributeError(f"torch has no {CONFIG_MODULES[prefix]}.{name}")
            setattr(owner, attr, config_value(getattr(owner, attr), text))
        except Exception as exc:
            channel.send(event("knob", f"knob {key}={text} refused: {exc}"))


def config_value(current: Any, text: str) -> Any:
    """``text`` as the type of the option's current value (bool, int, float, text, None)."""
    word = text.strip()
    if isinstance(current, bool):
        if word.lower() not in knobs.BOOL_WORDS:
            raise ValueError(f"expected on/off, got {text!r}")
        return knobs.BOOL_WORDS[word.lower()]
    if isinstance(current, int):
        return int(word)
    if isinstance(current, float):
        return float(word)
    if current is None:
        if word.lower() in ("none", ""):
            return None
        for kind in (int, float):
            with contextlib.suppress(ValueError):
                return kind(word)
        return word
    if isinstance(current, str):
        return text
    raise ValueError(
        f"options of type {type(current).__name__} cannot be set from the command line"
    )
