"""A password from ``${VAR}`` never shows when a real PostgreSQL refuses it, whole or in part.

The core suite (``core/tests/test_secrets_never_leak.py``) covers the failures that need no
server; here the server answers: the password is wrong (``@``, ``:``, ``/``, ``%``, ``#`` and
non-ASCII in it, so a URL parser also cuts it at the wrong place), and every output is searched:
the command's stdout and stderr at ``-vv``, every log record, the MCP tool results.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import pytest
from deckhand.testing.secrets import leaked_pieces, log_records, logged_text, refused_store_outputs

pytestmark = pytest.mark.postgres

#: The first reaches the server, which refuses it; in the others ``@`` and ``/`` move the host, ``#`` cuts the URL.
MARKERS = ["Mk7:Zq%25ñø€-Wx9", "Wrong@TailLeak99", "Pg#Mk7:/%40ñø€@Zq", "Qx9%2F@pa55:wörd"]


@pytest.mark.parametrize("secret", MARKERS)
def test_a_refused_password_never_shows(
    tmp_path: Path,
    postgres_url: str,
    secret: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    parts = urlsplit(postgres_url)
    monkeypatch.setenv("DH_PG_PASSWORD", secret)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "tides.md").write_text("# Tides\n\nSpring tides follow the full moon.\n")
    (tmp_path / "agent.yaml").write_text(
        "tools:\n  - name: harbour\n    type: vectorstore\n    source: docs\n    database:\n"
        "      provider: postgres\n"
        f"      connection_string: postgresql://{parts.username}:${{DH_PG_PASSWORD}}@{parts.hostname}:{parts.port}"
        f"{parts.path}\n"
    )
    with log_records() as records:
        shown, answers = refused_store_outputs(tmp_path / "agent.yaml", "harbour", "tides")
    assert not leaked_pieces(shown, [secret]), shown
    if secret == MARKERS[0]:
        assert "password authentication failed" in answers, answers
    assert not leaked_pieces(answers, [secret]), answers
    assert not leaked_pieces(logged_text(records), [secret]), logged_text(records)[-3000:]
