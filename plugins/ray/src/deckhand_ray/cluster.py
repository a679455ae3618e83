"""Joining the Ray cluster an ingest runs on, and leaving it.

``address`` (or ``$RAY_ADDRESS``) joins a running cluster and leaves it running; without either a
local Ray is started for the run and stopped after it, lean: no dashboard, its workers' output kept out of the
terminal, an object store of 256 MB (``object_store_mb``) rather than Ray's 30 % of the machine's memory. A
process that already joined one (a test, a notebook) keeps it.

A local Ray's helpers die with the driver, however it ends: its GCS and raylet do at once (Ray sees to that),
but its dashboard and runtime-env agents, told of the raylet's death at once too, first try to report it to the
GCS that died with it and linger a minute (Ray 2.60, measured after ``kill -9`` of the driver: 61 s, ~170 MB;
``include_dashboard=False`` already, and ``ray.init`` has no option for it). So a small watcher process, started
before Ray and reading a pipe only the driver holds, is told the driver's descendants once Ray started, and
kills those still running once the pipe closes: 0.2 s after the kill (Linux, where ``/proc`` lists them;
elsewhere the agents end on their own a minute later).
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import ray
from deckhand.api import ConfigError

from deckhand_ray.options import RAY_ADDRESS, RayOptions

log = logging.getLogger("deckhand.ray")

LOOPBACK = "127.0.0.1"
#: The object store of a local Ray (MB) unless ``object_store_mb`` says otherwise, and a megabyte in bytes.
LOCAL_OBJECT_STORE_MB = 256
MB = 1024 * 1024
#: The watcher: reads ``pid start-time`` lines of the driver's helpers until the driver's end closes the pipe,
#: then kills those still running (the same start time: never a process that took a freed pid).
_WATCHER = """
import os, signal, sys
known = {}
for line in sys.stdin.buffer:
    pid, _, started = line.decode().strip().partition(" ")
    known[int(pid)] = started
for pid, started in known.items():
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            fields = stat.read().rpartition(b")")[2].split()
        if fields[19].decode() == started:
            os.kill(pid, signal.SIGKILL)
    except (OSError, IndexError):
        pass
"""
#: The logger of Ray's notice about token authentication.
AUTH_LOGGER = "ray._private.authentication.authentication_token_setup"


class _SecureDefaultNotice(logging.Filter):
    """Drops Ray's notice that token authentication is on (the secure default, told on every run); its warning
    that authentication is off still shows."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Token authentication is enabled")


logging.getLogger(AUTH_LOGGER).addFilter(_SecureDefaultNotice())


def address_of(options: RayOptions) -> str | None:
    """The cluster to join (``address``, else ``$RAY_ADDRESS``), or None for a local Ray of this run."""
    given = options.address or os.environ.get(RAY_ADDRESS, "").strip()
    return given or None


@contextmanager
def connected(options: RayOptions) -> Iterator[None]:
    """Inside the block this process is a Ray driver: of the cluster it already joined, of the one at
    :func:`address_of`, or of a local Ray started here and stopped when the block ends."""
    if ray.is_initialized():
        yield
        return
    address = address_of(options)
    settings: dict[str, object] = {"include_dashboard": False, "log_to_driver": False, "logging_level": logging.WARNING}
    if address is None:
        # A Ray of this run only, started lean: its servers on the loopback interface, an object store sized
        # for the files in flight (Ray's default is 30 % of the machine's memory).
        store_mb = options.object_store_mb or LOCAL_OBJECT_STORE_MB
        settings.update(
            address="local", num_cpus=options.num_cpus, object_store_memory=store_mb * MB, _node_ip_address=LOOPBACK
        )
    elif options.num_cpus is not None or options.object_store_mb is not None:
        setting, flag = (
            ("num_cpus", "--num-cpus N")
            if options.num_cpus is not None
            else ("object_store_mb", "--object-store-memory BYTES")
        )
        raise ConfigError(
            f"executor ray: {setting} sets up a local Ray; the cluster at {address} has its own "
            f"(set it with `ray start {flag}`), so remove {setting} or the address"
        )
    else:
        settings["address"] = address
    with _helpers_die_with_this_process(local=address is None) as started:
        try:
            ray.init(**settings)  # type: ignore[arg-type]
        except ConnectionError as exc:
            raise ConnectionError(f"executor ray: cannot join the Ray cluster at {address}: {exc}") from None
        started()
        log.debug("ray: %s", "a local Ray for this run" if address is None else f"joined {address}")
        try:
            yield
        finally:
            ray.shutdown()


@contextmanager
def _helpers_die_with_this_process(*, local: bool) -> Iterator[Callable[[], None]]:
    """A watcher that kills the processes of a local Ray left when this process ends, by ``ray.shutdown()`` or by
    ``kill -9`` (see the module docstring); the block's value, called once Ray started, tells it which they are."""
    if not local or not os.path.isdir("/proc"):
        yield lambda: None
        return
    watcher = subprocess.Popen(
        [sys.executable, "-c", _WATCHER],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C to the terminal's process group leaves it to do its work
    )
    assert watcher.stdin is not None
    before = {*children(os.getpid())}  # this process's own children (and theirs) are not Ray's: never killed
    try:
        yield lambda: _tell_watcher(watcher, before)
    finally:
        with contextlib.suppress(OSError):
            watcher.stdin.close()  # what kill -9 of this process does too
        with contextlib.suppress(subprocess.TimeoutExpired):
            watcher.wait(10)


def _tell_watcher(watcher: subprocess.Popen[bytes], before: set[tuple[int, str]]) -> None:
    """Send the watcher, as ``pid start-time`` lines, what Ray started: this process's children that were not
    there ``before`` it, and their descendants (a process started earlier, and its children, are left alone)."""
    tree = _process_tree()
    helpers = [child for child in tree.get(os.getpid(), []) if child not in before]
    for helper in helpers:  # grows while it is walked: the children of each helper are helpers too
        helpers.extend(tree.get(helper[0], []))
    assert watcher.stdin is not None
    with contextlib.suppress(OSError):
        watcher.stdin.write("".join(f"{pid} {started}\n" for pid, started in helpers).encode())
        watcher.stdin.flush()


def children(root: int) -> list[tuple[int, str]]:
    """``(pid, start time)`` of ``root``'s children, read from ``/proc``."""
    return _process_tree().get(root, [])


def _process_tree() -> dict[int, list[tuple[int, str]]]:
    """Every process's children as ``(pid, start time)``, by parent pid, read from ``/proc``."""
    tree: dict[int, list[tuple[int, str]]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
            tree.setdefault(int(fields[1]), []).append((int(name), fields[19].decode()))
        except (OSError, IndexError, ValueError):
            continue
    return tree
