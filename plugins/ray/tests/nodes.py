"""Ray nodes started with ``ray start`` on this machine, standing in for the machines of a cluster, and stopped
by process id (never ``ray stop``, which stops every Ray of this user on the machine: other runs' too).

Each node is ``ray start ... --block`` in a session of its own: its Ray processes (GCS, raylet, agents and the
raylet's workers) are its descendants, and each carries :data:`MARKER` in its environment, so stopping a node
ends exactly the processes it started, even one that was re-parented when its parent died first.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

#: A loopback address Ray keeps as it is (``127.0.0.1`` is replaced by the machine's first interface address).
NODE_IP = "127.0.0.2"
#: The environment variable marking every process of one test cluster (its value: the cluster's temp dir).
MARKER = "DH_TEST_RAY_CLUSTER"
#: Seconds a node may take to start (a loaded 2-core machine takes 10-30 s for a head).
START_TIMEOUT_S = 120.0


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((NODE_IP, 0))
        port: int = probe.getsockname()[1]
    return port


def node_flags() -> list[str]:
    """What a test node adds to a documented ``ray start``: one CPU, the loopback address,
    no dashboard or usage report, and free ports for everything a second node on the same machine would clash on."""
    ports = [
        "--node-manager-port", "--object-manager-port", "--dashboard-agent-listen-port", "--dashboard-agent-grpc-port",
        "--runtime-env-agent-port", "--metrics-export-port",
    ]  # fmt: skip
    flags = ["--num-cpus", "1", "--node-ip-address", NODE_IP, "--disable-usage-stats", "--block"]
    for port in ports:
        flags += [port, str(free_port())]
    return flags


class TestCluster:
    """Nodes started by ``ray start`` command lines, stopped (with every process they started) on exit."""

    __test__ = False  # not a pytest test class

    def __init__(self) -> None:
        self.temp_dir = Path(tempfile.mkdtemp(prefix="dh-ray-", dir="/tmp"))  # short: Ray's socket paths
        self.nodes: list[subprocess.Popen[bytes]] = []

    def __enter__(self) -> TestCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self, line: str) -> None:
        """Run ``line`` (a ``ray start`` as a shell would, ``NAME=value`` prefixes set in its environment; the test
        flags added) and return once its node is up."""
        words = shlex.split(line)
        env = {**os.environ, MARKER: str(self.temp_dir)}
        for inherited in ("RAY_ADDRESS", "RAY_AUTH_MODE"):  # what a node gets is what the command line says
            env.pop(inherited, None)
        while "=" in words[0]:
            name, value = words.pop(0).split("=", 1)
            env[name] = value
        command = words
        assert command[:2] == ["ray", "start"], line
        log = self.temp_dir / f"node-{len(self.nodes)}.log"
        extra = [*node_flags(), "--temp-dir", str(self.temp_dir)]
        if "--head" in command:
            extra += ["--include-dashboard", "false"]
        ray = str(Path(sys.executable).parent / "ray")
        with log.open("wb") as out:
            node = subprocess.Popen(
                [ray, *command[1:], *extra], stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        self.nodes.append(node)
        deadline = time.monotonic() + START_TIMEOUT_S
        while b"Ray runtime started" not in log.read_bytes():
            if node.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{' '.join(command)} did not start:\n{log.read_text(errors='replace')[-3000:]}")
            time.sleep(0.25)

    def node_id(self, index: int) -> str:
        """The Ray node id of the ``index``-th node started (read from its raylet's command line)."""
        for process in psutil.Process(self.nodes[index].pid).children(recursive=True):
            if process.name() == "raylet":
                flag = next(a for a in process.cmdline() if a.startswith("--node_id="))
                return flag.removeprefix("--node_id=")
        raise LookupError(f"node {index} has no raylet")

    def processes(self) -> list[psutil.Process]:
        """Every live process this cluster started: the nodes, their descendants, and any marked one."""
        found: dict[int, psutil.Process] = {}
        for node in self.nodes:
            try:
                parent = psutil.Process(node.pid)
                found.update({p.pid: p for p in [parent, *parent.children(recursive=True)]})
            except psutil.NoSuchProcess:
                pass
        for process in psutil.process_iter():
            try:
                if process.environ().get(MARKER) == str(self.temp_dir):
                    found[process.pid] = process
            except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
                pass
        return list(found.values())

    def stop(self) -> None:
        """End every process of this cluster (SIGTERM, then SIGKILL after 10 s), the last node started first."""
        for _ in range(3):  # a worker may be forked while the others end
            processes = self.processes()
            if not processes:
                break
            for process in processes:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.send_signal(signal.SIGTERM)
            _, alive = psutil.wait_procs(processes, timeout=10)
            for process in alive:
                with contextlib.suppress(psutil.NoSuchProcess):
                    process.kill()
            psutil.wait_procs(alive, timeout=5)
        for node in self.nodes:
            node.wait(timeout=5)
        shutil.rmtree(self.temp_dir, ignore_errors=True)
