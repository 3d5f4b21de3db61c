"""How often a Ray Client connection fails because the head's per-connection server died as it
started (ray#63202), with the head's gRPC fork support as Ray leaves it and turned off.

A two-node cluster on this machine, as the tests start it (``ray.cluster_utils.Cluster``,
one CPU a node, a Ray Client server on a free loopback port), takes ``--connections``
``ray.init("ray://…")`` connections one after another, each running one task; a connection
fails as started where the head says "Starting Ray client server failed" (or meets the dead
process). ``--busy`` loops keep the cores busy meanwhile, as a whole test run does.

    python benchmarks/ray_client_connections.py [--connections 45] [--busy 2] [--no-grpc-fork]

Prints one line a connection, then the count, and how often the head skipped gRPC's fork
handlers (its log's ``skipping fork() handlers`` lines).
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the tests' cluster settings

from tests.conftest import two_node_cluster
from warmscope.core.run.ray_executor import client_server_died


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=45)
    parser.add_argument("--busy", type=int, default=2, help="busy loops beside (default 2)")
    parser.add_argument(
        "--no-grpc-fork", action="store_true", help="start the head with GRPC_ENABLE_FORK_SUPPORT=0"
    )
    args = parser.parse_args()
    import ray

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    cluster = two_node_cluster(port, grpc_fork=not args.no_grpc_fork)
    spin = [sys.executable, "-c", "while True: pass"]
    spinners = [subprocess.Popen(spin) for _ in range(args.busy)]
    try:
        died = other = 0
        for i in range(args.connections):
            t0 = time.monotonic()
            try:
                ray.init(address=f"ray://127.0.0.1:{port}", logging_level="ERROR")
                ray.get(ray.remote(lambda: 1).remote())
                what = "ok"
            except Exception as exc:
                if client_server_died(exc):
                    died += 1
                    what = "died as it started"
                else:
                    other += 1
                    what = f"failed otherwise: {str(exc).splitlines()[0][:80]}"
            finally:
                with contextlib.suppress(Exception):
                    ray.shutdown()
            print(f"{i:3d} {time.monotonic() - t0:5.1f} s  {what}", flush=True)
        head_log = Path(cluster.head_node.get_logs_dir_path()) / "ray_client_server.err"
        skipped = head_log.read_text(errors="replace").count("skipping fork() handlers")
        fork = "off" if args.no_grpc_fork else "as Ray leaves it"
        print(
            f"gRPC fork support {fork}: {died} of {args.connections} connections failed as "
            f"started ({other} otherwise); the head skipped gRPC's fork handlers {skipped} times"
        )
    finally:
        for p in spinners:
            p.kill()
            p.wait()
        cluster.shutdown()


if __name__ == "__main__":
    main()
