"""Import each deckhand module named on stdin alone, in a forked child of one interpreter that has already
imported the libraries deckhand uses but no deckhand module; print ``<module>\\t<ok or the error>`` per line.

Used by ``test_imports.py``: a fresh interpreter per module (what the test means) costs an interpreter
start and numpy, pydantic, onnxruntime... each time, two to five minutes for every module on a busy
2-core machine, where the test timed out. Forking after the libraries are loaded keeps what matters
fresh (no deckhand module is loaded in the parent) at a fraction of the cost.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import traceback


def _forked(work: object, name: str) -> str:
    """Run ``work(name)`` in a forked child and return what it wrote (a line of text)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        os.close(read)
        try:
            message = work(name)  # type: ignore[operator]
        except BaseException as exc:  # an import error of any kind is the result
            message = traceback.format_exception_only(exc)[-1].strip()
        os.write(write, str(message).encode("utf-8", "backslashreplace"))
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 20):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return b"".join(chunks).decode() or "the import killed the process"


def _import(name: str) -> str:
    importlib.import_module(name)
    return "ok"


def _libraries(modules: list[str]) -> str:
    """In a throwaway child: import every module, then name the non-deckhand modules that loaded."""
    for name in modules:
        with contextlib.suppress(BaseException):  # reported by the real pass
            importlib.import_module(name)
    return "\n".join(m for m in list(sys.modules) if not m.startswith(("deckhand.", "deckhand_")) and m != "deckhand")


def main() -> None:
    modules = sys.stdin.read().split()
    for name in _forked(lambda _: _libraries(modules), "").split("\n"):
        if name and name not in sys.modules:
            with contextlib.suppress(BaseException):  # a library's optional part: children import it if needed
                importlib.import_module(name)
    loaded = [m for m in sys.modules if m == "deckhand" or m.startswith(("deckhand.", "deckhand_"))]
    if loaded:
        sys.exit(f"a library imported deckhand modules ({', '.join(sorted(loaded)[:3])}): cannot test them alone")
    for name in modules:
        print(f"{name}\t{_forked(_import, name)}", flush=True)


if __name__ == "__main__":
    main()
