"""An SSH server on the loopback for ``--host`` tests and benchmarks: asyncssh, in this process.

It runs each command with ``/bin/sh`` as a subprocess of its own (as sshd does), in a home
folder of its own (so that relative paths are the remote's, as over ssh), with its own TMPDIR
so that what the remote end leaves is seen. The OpenSSH client reaches it through
``WARMSCOPE_SSH_OPTIONS`` (``Server.env()``).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncssh


@dataclass
class Server:
    port: int
    key: Path
    remote_tmp: Path
    home: Path
    """The remote commands' working folder: the remote user's home."""

    def options(self, key: Path | None = None, port: int | None = None) -> str:
        return (
            f"-p {port or self.port} -i {key or self.key} -o IdentitiesOnly=yes "
            "-o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
        )

    def env(self, **kw: str) -> dict[str, str]:
        return {"WARMSCOPE_SSH_OPTIONS": self.options(**kw)}  # type: ignore[arg-type]

    def left(self) -> list[str]:
        """What the remote end left in its temporary folder."""
        return sorted(p.name for p in self.remote_tmp.iterdir())

    def python_hiding(self, python: str, *hidden: Path) -> str:
        """A remote interpreter (for ``--python``) to which the ``hidden`` folders of this
        machine do not exist, as on another machine: it runs ``python`` with an audit hook,
        inherited by every Python it starts, that refuses to open anything under them."""
        folder = self.home.parent / f"hiding-{len(list(self.home.parent.glob('hiding-*')))}"
        folder.mkdir()
        (folder / "sitecustomize.py").write_text(HIDING_HOOK)
        script = folder / "python"
        paths = os.pathsep.join(str(p.resolve()) for p in hidden)
        script.write_text(
            "#!/bin/sh\n"
            f"export PYTHONPATH={shlex.quote(str(folder))} WARMSCOPE_TEST_HIDDEN={shlex.quote(paths)}\n"
            f'exec {shlex.quote(python)} "$@"\n'
        )
        script.chmod(0o755)
        return str(script)


HIDING_HOOK = """import os
import sys

HIDDEN = [p for p in os.environ.get("WARMSCOPE_TEST_HIDDEN", "").split(os.pathsep) if p]


def refuse(event, args):
    if event != "open" or not HIDDEN or not isinstance(args[0], (str, bytes, os.PathLike)):
        return
    path = os.path.realpath(os.fsdecode(args[0]))
    if any(path == h or path.startswith(h + os.sep) for h in HIDDEN):
        raise PermissionError(13, "not on this machine", path)


sys.addaudithook(refuse)
"""


async def _pump_out(reader: asyncio.StreamReader, writer: object) -> None:
    while data := await reader.read(65536):
        writer.write(data)  # type: ignore[attr-defined]


async def _pump_in(process: object, proc: asyncio.subprocess.Process) -> None:
    assert proc.stdin is not None
    try:
        while data := await process.stdin.read(65536):  # type: ignore[attr-defined]
            proc.stdin.write(data)
            await proc.stdin.drain()
    except (asyncssh.Error, OSError):
        pass
    finally:
        proc.stdin.close()  # the connection is gone: EOF, as sshd gives it


def _serve(
    keys: Path, remote_tmp: Path, home: Path, ready: list[int], loop: asyncio.AbstractEventLoop
) -> None:
    async def handle(process: object) -> None:
        pipe = asyncio.subprocess.PIPE
        env = dict(os.environ, TMPDIR=str(remote_tmp))
        env.pop("WARMSCOPE_SSH_OPTIONS", None)
        proc = await asyncio.create_subprocess_shell(
            process.command,  # type: ignore[attr-defined]
            stdin=pipe,
            stdout=pipe,
            stderr=pipe,
            env=env,
            cwd=home,
            start_new_session=True,
        )
        feed = asyncio.ensure_future(_pump_in(process, proc))
        assert proc.stdout is not None and proc.stderr is not None
        with contextlib.suppress(asyncssh.Error, OSError):
            await asyncio.gather(
                _pump_out(proc.stdout, process.stdout),  # type: ignore[attr-defined]
                _pump_out(proc.stderr, process.stderr),  # type: ignore[attr-defined]
            )
        code = await proc.wait()
        feed.cancel()
        process.exit(code)  # type: ignore[attr-defined]

    async def start() -> None:
        server = await asyncssh.create_server(
            asyncssh.SSHServer,
            "127.0.0.1",
            0,
            server_host_keys=[str(keys / "host")],
            authorized_client_keys=str(keys / "client.pub"),
            process_factory=handle,
            encoding=None,
        )
        ready.append(server.sockets[0].getsockname()[1])

    asyncio.set_event_loop(loop)
    loop.run_until_complete(start())
    loop.run_forever()


@contextlib.contextmanager
def ssh_server(folder: Path) -> Iterator[Server]:
    """A running server with fresh keys under ``folder``: ``client`` (authorized), ``stranger``
    (not), and the remote end's ``home`` and ``remote-tmp`` folders."""
    keys = folder / "keys"
    keys.mkdir(parents=True)
    for name in ("host", "client", "stranger"):
        key = asyncssh.generate_private_key("ssh-ed25519")
        key.write_private_key(str(keys / name))
        key.write_public_key(str(keys / f"{name}.pub"))
        os.chmod(keys / name, 0o600)  # ssh refuses a private key others can read
    remote_tmp, home = folder / "remote-tmp", folder / "home"
    remote_tmp.mkdir()
    home.mkdir()
    loop = asyncio.new_event_loop()
    ready: list[int] = []
    thread = threading.Thread(
        target=_serve, args=(keys, remote_tmp, home, ready, loop), daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 30
    while not ready and time.monotonic() < deadline:
        time.sleep(0.05)
    if not ready:
        raise RuntimeError("the SSH server on the loopback did not start")
    try:
        yield Server(ready[0], keys / "client", remote_tmp, home)
    finally:
        loop.call_soon_threadsafe(loop.stop)
