"""The commands the Redis plugin's messages print: installing and starting a local test server.

Kept apart from :mod:`deckhand_redis.server` so that the store can name the launcher without
importing it (``python -m deckhand_redis.server`` must find the module not yet imported).
"""

from __future__ import annotations

from deckhand.api import install_command

#: The distribution and extra that bring the server binaries (as a command that works where deckhand is installed).
SERVER_EXTRA_INSTALL = install_command("deckhand-ai-redis[server]")
#: How a user starts a local server by hand (needs no pytest).
START_COMMAND = "python -m deckhand_redis.server"
#: The hint connection errors end with: how to get a local server when none is running.
START_HINT = f"is the server running? start a local one with: {SERVER_EXTRA_INSTALL} && {START_COMMAND}"
