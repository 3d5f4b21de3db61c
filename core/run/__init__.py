"""The parent's run machinery: the run plan, the session and its parts, sweeps, warm-up verification, samplers, process containment."""
