"""How a run ends other than by itself: the graceful stop (SIGINT to the agent, which finishes
and reports; then SIGTERM, then SIGKILL to every process of the run), a kill, and warmscope
ending it with a status of its own (a fault of the child's or of warmscope's), and what of
that ``ending.classify`` reads.
"""

from __future__ import annotations

import signal
import threading

from warmscope.core.run.agent_process import AgentProcess
from warmscope.core.run.ending import Ending

STOP_GRACE_S = 3.0


class RunStop:
    """The stops asked of one run (``agent``'s), until it has ``finished``."""

    def __init__(self, agent: AgentProcess, finished: threading.Event) -> None:
        self.agent = agent
        self.finished = finished
        self.requested = False
        """A stop (or a kill, or an end of warmscope's) was asked."""
        self.killed = False
        self.timed_out = False
        self.fault: Ending | None = None
        """Why warmscope ended the run itself."""

    def stop(self, grace: float = STOP_GRACE_S) -> None:
        """Graceful stop: SIGINT (the agent finishes and reports), then SIGTERM, then SIGKILL."""
        if self.agent.proc is None or self.finished.is_set() or self.requested:
            return
        self.requested = True
        self.agent.signal(signal.SIGINT, group=False)

        def escalate() -> None:
            for sig in (signal.SIGTERM, signal.SIGKILL):
                if self.finished.wait(grace):
                    return
                self.agent.signal(sig, group=True)

        threading.Thread(target=escalate, name="warmscope-stop", daemon=True).start()

    def kill(self) -> None:
        """SIGKILL the child and every process of the run, now."""
        self.requested = True
        self.killed = True
        self.agent.signal(signal.SIGKILL, group=True)

    def end(self, status: str, detail: str, exit_code: int) -> None:
        """warmscope ends the run itself (a fault of the child or of warmscope): the status is
        this one, whatever the child says after; its processes are killed."""
        if self.fault is None:
            self.fault = Ending(status, detail, exit_code)
        self.requested = True
        self.agent.signal(signal.SIGKILL, group=True)
