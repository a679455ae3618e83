"""``deckhand chat``: its commands through the input stream, and a real session in a pseudo-terminal."""

from __future__ import annotations

import fcntl
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import termios
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from deckhand.cli.chat import HELP, HISTORY_FILE
from deckhand.cli.main import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
DECKHAND = str(Path(sys.executable).parent / "deckhand")
QUERY = "how do I rotate API keys?"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(EXAMPLES, tmp_path / "examples", ignore=shutil.ignore_patterns(".deckhand"))
    return tmp_path / "examples"


@pytest.fixture
def two_tools(project: Path) -> Path:
    """The example agent with a second tool over the same documents."""
    cfg = project / "agent.yaml"
    data = yaml.safe_load(cfg.read_text())
    data["tools"].append({**data["tools"][0], "name": "second_opinion", "top_k": 1})
    cfg.write_text(yaml.safe_dump(data))
    return cfg


def chat(cfg: Path, *args: str, input: str) -> Result:
    return CliRunner().invoke(cli, ["-c", str(cfg), "chat", *args], input=input, catch_exceptions=False)


def answers(stdout: str) -> list[str]:
    """The tool headers printed, in order."""
    return re.findall(r"^== (\w+)$", stdout, re.M)


# -- through the input stream ------------------------------------------------------------------


def test_commands_from_the_input_stream(two_tools: Path, minilm: object) -> None:
    typed = [":help", QUERY, ":tool second_opinion", QUERY, ":tool nope", ":bogus", ":tool", ":tool all", ":history"]
    result = chat(two_tools, input="\n".join([*typed, "quit", "never read"]) + "\n")
    assert result.exit_code == 0, result.output
    assert HELP in result.stdout
    assert answers(result.stdout) == ["harbor_docs", "second_opinion", "second_opinion"]
    assert result.stdout.count("searching: second_opinion\n") == 2  # after :tool NAME, and :tool alone
    assert "searching: harbor_docs, second_opinion\n" in result.stdout
    assert result.stderr.splitlines()[-2:] == [
        "error: no tool named nope (tools: harbor_docs, second_opinion)",
        "error: unknown command :bogus; :help lists the commands",
    ]
    history = result.stdout.split("searching: harbor_docs, second_opinion\n")[1].splitlines()
    assert history == [f"{n:>4}  {line}" for n, line in enumerate(typed, 1)]  # in memory: no terminal here
    assert "never read" not in result.output
    assert not (Path(os.environ["DECKHAND_HOME"]) / HISTORY_FILE).exists()


def test_tool_option_picks_one_tool_and_full_shows_chunks(two_tools: Path, minilm: object) -> None:
    result = chat(two_tools, "--tool", "second_opinion", input=f"{QUERY}\n:full\n{QUERY}\nexit\n")
    assert result.exit_code == 0, result.output
    assert answers(result.stdout) == ["second_opinion", "second_opinion"]
    # the count is of the tools picked (and ready), not of the tools configured
    assert "2 tool(s) ready" not in result.stderr
    assert "1 tool(s) ready: second_opinion (1 more configured; :tool switches). Type a query" in result.stderr
    passage, whole = result.stdout.split("showing whole chunks\n")
    assert "## Passwords and single sign-on" not in passage  # the best passage only
    assert "\n## Passwords and single sign-on\n" in whole  # the whole chunk, its lines kept
    # only the picked tool was opened: the other is never ingested
    assert "harbor_docs [" not in result.stderr and "second_opinion [sqlite]: 5 ingested" in result.stderr


def test_end_of_input_without_quit_and_an_unknown_tool(two_tools: Path, minilm: object) -> None:
    ended = chat(two_tools, "--tool", "harbor_docs", input=QUERY)  # no newline, no quit: EOF
    assert ended.exit_code == 0 and answers(ended.stdout) == ["harbor_docs"]
    unknown = chat(two_tools, "--tool", "nope", input="")
    assert unknown.exit_code == 3
    assert unknown.stderr == f"error: {two_tools}: no tool named nope (tools: harbor_docs, second_opinion)\n"


# -- in a pseudo-terminal ------------------------------------------------------------------------


class Terminal:
    """``deckhand chat`` in a pseudo-terminal that is its controlling terminal (so ^C is a SIGINT)."""

    def __init__(self, cfg: Path) -> None:
        self.master, slave = os.openpty()
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "COLUMNS")}
        env.update(TERM="xterm-256color", DECKHAND_THREADS="1")
        # A new session whose controlling terminal is the pty, then deckhand in its place. SIGINT back to its
        # default first: a runner started in the background without job control (`cmd &` in a script) ignores
        # it, the ignore survives exec, and Python then installs no ^C handler (the session never ends).
        launcher = (
            "import fcntl, os, signal, sys, termios; signal.signal(signal.SIGINT, signal.SIG_DFL); "
            "fcntl.ioctl(0, termios.TIOCSCTTY, 0); os.execv(sys.argv[1], sys.argv[1:])"
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", launcher, DECKHAND, "-c", str(cfg), "chat"],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            env=env,
            start_new_session=True,
        )
        os.close(slave)
        self.seen = ""  # printed since the last match
        self.transcript = ""  # everything printed

    def expect(self, pattern: str, timeout: float = 120) -> str:
        """Read until ``pattern`` (a regex) appears in what was printed since the last match."""
        deadline = time.monotonic() + timeout
        while not (found := re.search(pattern, self.seen)):
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"{pattern!r} not seen; the terminal shows:\n{self.seen[-3000:]}")
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    data = os.read(self.master, 65536)
                except OSError:  # the other side closed: the process ended
                    data = b""
                if not data:
                    raise AssertionError(f"{pattern!r} not seen before the end; the terminal showed:\n{self.seen}")
                self.seen += data.decode("utf-8", "replace")
                self.transcript += data.decode("utf-8", "replace")
        before, self.seen = self.seen[: found.end()], self.seen[found.end() :]
        return before

    def send(self, keys: str) -> None:
        os.write(self.master, keys.encode())

    def wait(self, timeout: float = 60) -> int:
        """The exit code, reading what the session prints meanwhile (a full terminal would block its exit)."""
        deadline = time.monotonic() + timeout
        try:
            while self.process.poll() is None:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"the session did not end; the terminal shows:\n{self.transcript[-3000:]}")
                ready, _, _ = select.select([self.master], [], [], min(left, 0.2))
                if ready:
                    try:
                        data = os.read(self.master, 65536)
                    except OSError:
                        data = b""
                    self.transcript += data.decode("utf-8", "replace")
            return self.process.wait(timeout=5)
        finally:
            os.close(self.master)

    def kill(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()


@pytest.fixture
def terminal(project: Path) -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for term in opened:
        term.kill()


PROMPT = r"> $"
HIT = re.compile(r"\x1b\[1;33m(\w+)\x1b\[0m")  # a query term, bold yellow


def test_a_session_in_a_terminal(project: Path, terminal: list[Terminal]) -> None:
    cfg = project / "agent.yaml"
    first = Terminal(cfg)
    terminal.append(first)
    first.expect(r"Type a query; :help lists the commands")
    first.expect(PROMPT)
    first.send(QUERY + "\r")
    shown = first.expect(PROMPT)
    assert "Found 1 result(s):" in shown and "docs/security.md:1" in shown  # the rest under the relative cutoff
    assert {"API", "keys", "Rotate", "key"} <= set(HIT.findall(shown))  # the terms, highlighted
    first.send(":help\r")
    assert ":tool NAME" in first.expect(PROMPT)
    time.sleep(0.5)  # the prompt is printed before it reads keys: a ^C before that is not "at the prompt"
    first.send("\x03")  # Ctrl-C at the prompt ends the session cleanly
    assert first.wait() == 0
    history = Path(os.environ["DECKHAND_HOME"]) / HISTORY_FILE
    assert history.read_text().splitlines()[-2:] == [QUERY, ":help"]

    second = Terminal(cfg)  # the next session recalls the history with the up arrow
    terminal.append(second)
    second.expect(PROMPT)
    second.send("\x1b[A\x1b[A\r")  # up twice: the query before :help
    shown = second.expect(PROMPT)
    assert QUERY in shown and "Found 1 result(s):" in shown
    time.sleep(0.5)
    second.send("\x04")  # Ctrl-D on an empty line: end of input
    assert second.wait() == 0
    assert "Traceback" not in first.transcript + second.transcript
    assert "Aborted" not in first.transcript  # click's answer to an unhandled ^C (exit 1)


def test_a_history_file_swapped_for_a_link_is_neither_read_nor_written(tmp_path: Path) -> None:
    pytest.importorskip("readline")
    from deckhand.cli.chat import History

    outside = tmp_path / "outside.txt"
    outside.write_text("secret line\n", encoding="utf-8")
    link = tmp_path / "state" / "chat_history"
    link.parent.mkdir()
    link.symlink_to(outside)
    history = History(link)
    assert "secret line" not in history.lines()
    history.save()
    assert outside.read_text(encoding="utf-8") == "secret line\n" and link.is_symlink()
