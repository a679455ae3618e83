"""Joining the Ray cluster an ingest runs on, and leaving it.

``address`` (or ``$RAY_ADDRESS``) joins a running cluster and leaves it running; without either a
local Ray is started for the run (no dashboard, its workers' output kept out of the terminal) and
stopped after it. A process that already joined one (a test, a notebook) keeps it.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager

import ray
from deckhand.api import ConfigError

from deckhand_ray.options import RAY_ADDRESS, RayOptions

log = logging.getLogger("deckhand.ray")

LOOPBACK = "127.0.0.1"
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
        # A Ray of this run only: its servers listen on the loopback interface.
        settings.update(address="local", num_cpus=options.num_cpus, _node_ip_address=LOOPBACK)
    elif options.num_cpus is not None:
        raise ConfigError(
            f"executor ray: num_cpus sets the CPUs of a local Ray; the cluster at {address} has its own "
            "(set them with `ray start --num-cpus N`), so remove num_cpus or the address"
        )
    else:
        settings["address"] = address
    try:
        ray.init(**settings)  # type: ignore[arg-type]
    except ConnectionError as exc:
        raise ConnectionError(f"executor ray: cannot join the Ray cluster at {address}: {exc}") from None
    log.debug("ray: %s", "a local Ray for this run" if address is None else f"joined {address}")
    try:
        yield
    finally:
        ray.shutdown()
