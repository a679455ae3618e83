"""Every Python example of the README and the docs is a script: it runs as written, as ``python example.py``.

Every ```` ```python ```` block of README.md, docs/ and the plugins' READMEs must compile as a
module (so ``await`` outside a function, which only ``python -m asyncio`` accepts, fails here),
and is either run as a script in a fresh interpreter by this file, or named in :data:`ELSEWHERE`
with the test that runs it or why it is not a program (a fragment of a plugin module, a
signature). A block that is neither fails the test, so a new example cannot go unrun.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md")), *sorted(ROOT.glob("plugins/*/README.md"))]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


@dataclass(frozen=True)
class Example:
    document: Path
    line: int
    code: str

    @property
    def where(self) -> str:
        return f"{self.document.relative_to(ROOT)}:{self.line}"


def examples() -> list[Example]:
    found = []
    for document in DOCUMENTS:
        text = document.read_text(encoding="utf-8")
        for match in _BLOCK.finditer(text):
            found.append(Example(document, text.count("\n", 0, match.start()) + 2, match.group(1)))
    return found


#: A line of each example this file runs as a script → how (``examples``: the repository's examples/ copied
#: into the working directory, docs/mcp.md's ``/tmp/harbor`` being that copy; ``memory``: ``/path/to/repo``
#: replaced by a fresh git repository).
SCRIPTS = {
    'config = load_agent_config("examples/agent.yaml")': "examples",  # README.md
    'manager = VectorMemoryManager(repo_path=Path("/path/to/repo")': "memory",  # docs/memory.md
    'manager = VectorMemoryManager("/path/to/repo", "claude-code-01")': "memory",  # plugins/git-memory
    'result = await kernel.invoke(plugin_name="deckhand", function_name="harbor_docs"': "examples",  # sk README
    'StdioServerParameters(command="deckhand", args=["mcp", "--config", "/tmp/harbor/agent.yaml"])': "examples",
    'args = ["mcp", "--config", "/tmp/harbor/agent.yaml", "--result-budget", "500"]': "examples",  # docs/mcp.md
    "await session.subscribe_resource(PAGE.parent.as_uri())": "examples",  # docs/mcp.md, change notifications
    'added = (await session.call_tool("deckhand_add", note))': "examples",  # docs/mcp.md, writes
}
#: A line of each example run elsewhere, or not a program, → where or why.
ELSEWHERE = {
    'filter={"path": "guides/*"': "core/tests/search/test_filters_doc.py (as a module, in the page's project)",
    "S3MemoryBackend(bucket=options.bucket)": "a fragment of a plugin module (S3Options is the reader's)",
    "class TestS3Backend(MemoryBackendTests)": "a test module of the reader's plugin",
    'kernel.add_plugin(deckhand_plugin("agent.yaml"))': "two lines of a program: the kernel is the reader's",
    "OpenAIChatCompletion(ai_model_id=": "needs an OpenAI key and the network",
    "register.store(\n": "tests/test_plugin_docs.py (a signature; test_register_signature_compiles)",
    'tool.search_results_sync("how is the area of a circle computed': "plugins/code/tests/test_code_docs.py",
    'for question in ("how much is due on the invoice?"': "plugins/ocr/tests/test_ocr_docs.py",
    "async with client.listen(": "core/tests/agents/test_mcp_changes.py (needs the SDK 2.x; this session has 1.x)",
    'streamable_http_client("http://balancer:8765/mcp"': "plugins/redis/tests/test_mcp_replicas_redis.py (replicas)",
    "from deckhand.api import ChunkerBase, Chunk, Document, Registrar, hookimpl": "core/tests/test_api_page.py",
}


def _docs_tested_by_plugin_docs(example: Example) -> bool:
    """plugins.md and writing-a-store-plugin.md: tests/test_plugin_docs.py runs every block (and fails on one it
    does not know)."""
    return example.document.name in {"plugins.md", "writing-a-store-plugin.md"}


def test_every_python_example_is_a_module_not_a_console_session() -> None:
    found = examples()
    assert len(found) >= 20, [e.where for e in found]
    for example in found:
        try:
            compile(example.code, example.where, "exec")  # top-level await is a SyntaxError here, as in a script
        except SyntaxError as exc:
            pytest.fail(f"{example.where}: not a script ({exc.msg}); wrap awaits in async def main + asyncio.run")


def test_every_python_example_is_run_somewhere() -> None:
    unknown = [
        e.where
        for e in examples()
        if not _docs_tested_by_plugin_docs(e) and not any(marker in e.code for marker in (*SCRIPTS, *ELSEWHERE))
    ]
    assert not unknown, f"examples no test runs (add them to SCRIPTS or ELSEWHERE): {unknown}"
    for marker in (*SCRIPTS, *ELSEWHERE):
        assert any(marker in e.code for e in examples()), f"no example holds {marker!r} any more"


def _scripts() -> list[tuple[Example, str]]:
    return [(e, how) for e in examples() for marker, how in SCRIPTS.items() if marker in e.code]


@pytest.mark.parametrize(("example", "how"), _scripts(), ids=lambda v: v.where if isinstance(v, Example) else v)
def test_the_example_runs_as_a_script(example: Example, how: str, tmp_path: Path) -> None:
    if "deckhand_semantic_kernel" in example.code:
        pytest.importorskip("deckhand_semantic_kernel", reason="the semantic-kernel plugin is tested in its session")
    code = example.code
    if how == "examples":
        shutil.copytree(ROOT / "examples", tmp_path / "examples", ignore=shutil.ignore_patterns(".deckhand"))
        code = code.replace("/tmp/harbor/", f"{tmp_path.as_posix()}/examples/")
    else:
        pytest.importorskip("deckhand_git_memory")
        repo = tmp_path / "repo"
        subprocess.run(["git", "init", "-q", str(repo)], check=True, timeout=60)
        code = code.replace("/path/to/repo", repo.as_posix())
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "DECKHAND_PLUGINS"}
    env.update(
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",  # the deckhand command
        HOME=str(tmp_path / "home"),
        DECKHAND_HOME=str(tmp_path / "state"),
        DECKHAND_THREADS="1",
        GIT_AUTHOR_NAME="docs",
        GIT_AUTHOR_EMAIL="docs@example.invalid",
        GIT_COMMITTER_NAME="docs",
        GIT_COMMITTER_EMAIL="docs@example.invalid",
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=300
    )
    assert done.returncode == 0, f"{example.where}:\n{done.stderr[-3000:]}"
    if how == "examples":
        assert "Found 1 result(s)" in done.stdout, done.stdout
