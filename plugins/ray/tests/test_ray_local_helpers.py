"""A local Ray's helpers die with its driver: after ``kill -9`` of a driver, its dashboard and runtime-env
agents used to linger a minute (issue 40, case 6); now every process Ray started is gone in seconds, and a
process the driver started itself is left alone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import deckhand_ray.cluster as cluster
import psutil
import pytest
from deckhand.api import ConfigError
from deckhand_ray.cluster import LOCAL_OBJECT_STORE_MB, MB, connected
from deckhand_ray.options import RayOptions

#: A driver of a local Ray (no RAY_ADDRESS): says READY once Ray started, then waits to be killed.
DRIVER = textwrap.dedent(
    """
    import subprocess, time
    import ray
    from deckhand_ray.cluster import connected
    from deckhand_ray.options import RayOptions

    own = subprocess.Popen(["sleep", "600"])  # a child of the driver's own, not Ray's
    with connected(RayOptions(num_cpus=1)):
        print("READY", own.pid, int(ray.cluster_resources()["object_store_memory"]), flush=True)
        time.sleep(600)
    """
)
#: Seconds the helpers may take to go (Ray's agents took 61 s on their own; the watcher takes well under one).
GONE_WITHIN_S = 15.0


def test_a_killed_local_drivers_helpers_die_with_it() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_AUTH_MODE")}
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env
    )
    try:
        assert driver.stdout is not None
        ready, own, store = driver.stdout.readline().split()
        assert ready == "READY"
        assert int(store) == LOCAL_OBJECT_STORE_MB * MB  # started lean: not Ray's 30 % of the machine's memory
        deadline = time.monotonic() + 60
        while True:  # the agents are up once Ray answers; wait until the raylet's children show
            helpers = [p for p in psutil.Process(driver.pid).children(recursive=True) if p.pid != int(own)]
            names = " ".join(" ".join(p.cmdline()) for p in helpers if p.is_running())
            if ("DashboardAgent" in names and "RuntimeEnvAgent" in names) or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert "DashboardAgent" in names and "RuntimeEnvAgent" in names, names
    finally:
        driver.send_signal(signal.SIGKILL)
        driver.wait(30)
    _, alive = psutil.wait_procs(helpers, timeout=GONE_WITHIN_S)
    mine = psutil.Process(int(own))
    assert mine.is_running() and mine.status() != psutil.STATUS_ZOMBIE, "the driver's own child is left alone"
    mine.kill()
    left = [" ".join(p.cmdline())[:80] for p in alive]
    for process in alive:  # not to leave them to the next test
        process.kill()
    assert left == [], f"still running {GONE_WITHIN_S:.0f}s after kill -9 of the driver: {left}"


@pytest.mark.parametrize(("setting", "value"), [("num_cpus", 2), ("object_store_mb", 100)])
def test_local_settings_beside_an_address_are_refused(
    setting: str, value: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``num_cpus`` and ``object_store_mb`` set up the local Ray of a run; a cluster to join has its own."""
    monkeypatch.setattr(cluster.ray, "is_initialized", lambda: False)
    options = RayOptions.model_validate({"address": "127.0.0.1:1", setting: value})
    refused = f"^executor ray: {setting} sets up a local Ray; the cluster at 127.0.0.1:1 has its own"
    with pytest.raises(ConfigError, match=refused), connected(options):
        pass
