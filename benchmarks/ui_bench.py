"""``deckhand ui`` on a large generated index: time to first byte and to a rendered search page (issue 45).

Builds (or reuses, with ``--workdir``) the index ``scale_bench.py`` builds: ``--chunks`` synthetic chunks of a
``hierarchical_document`` tool in its default sqlite store, ``--per-file`` per file, written through the tool's
own store as an ingest leaves them (random clustered vectors under the default model's id, so no model runs for
the build; the tool answers ``results: ranked``, or the random vectors would make every query off-topic). Then
starts the real server (``deckhand ui --port 0``, a process of its own) and, per page, times:

* **TTFB**: from sending the request to the first byte of the answer (``http.client``, a fresh connection);
* **page**: to the last byte of the HTML;
* **rendered** (where Debian's chromium and chromedriver are installed): headless Chromium's Navigation Timing,
  request start to ``loadEventEnd`` (the page parsed, styled, its script run).

Each timed page after one warm-up request (the first search opens the index: its time is printed apart).
The baseline, measured in the same run: the same queries through ``Toolbox.search`` (what ``deckhand mcp``
answers with) in this process, on the same index, after a warm-up; the search page's overhead is the ratio.

    uv run python benchmarks/ui_bench.py --chunks 100000 --workdir DIR --build-only   # the index (no timing)
    flock /tmp/deckhand-bench.lock uv run python benchmarks/ui_bench.py --workdir DIR [--queries 30]
"""

from __future__ import annotations

import argparse
import http.client
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scale_bench import make_source, texts_of, write_index
from synthetic_corpus import queries

TOOL = "acts"
#: The vectors are random, so every query would be "off-topic" under ``results: focused`` (no result at all):
#: ``ranked`` shows the top_k, as a real index answers a real question.
RANKED = "    results: ranked\n"


def start(root: Path) -> tuple[subprocess.Popen[str], int]:
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "deckhand"), "ui", "--config", str(root / "agent.yaml"), "--port", "0"],
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert server.stderr is not None
    line = server.stderr.readline()
    found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
    if not found:
        server.kill()
        raise SystemExit(f"deckhand ui did not start: {line}{server.stderr.read()[-2000:]}")
    return server, int(found.group(1))


def fetch(port: int, path: str) -> tuple[float, float, int, int]:
    """(TTFB ms, whole page ms, bytes, results shown) of one GET on a fresh connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    clock = time.perf_counter()
    connection.request("GET", path)
    answer = connection.getresponse()
    answer.read(1)
    first = time.perf_counter() - clock
    body = answer.read()
    whole = time.perf_counter() - clock
    connection.close()
    if answer.status != 200:
        raise SystemExit(f"GET {path}: {answer.status}")
    return first * 1000, whole * 1000, len(body) + 1, body.count(b'<article class="result"')


def rendered(port: int, paths: list[str]) -> list[float] | None:
    """Headless Chromium's request-start-to-load times (ms), or None without chromium, chromedriver, selenium."""
    chromium, driver_path = shutil.which("chromium"), shutil.which("chromedriver")
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        return None
    if not chromium or not driver_path:
        return None
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    profile = tempfile.mkdtemp(prefix="ui-bench-chromium-")
    for flag in ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 f"--user-data-dir={profile}"]:  # fmt: skip
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=driver_path), options=options)
    try:
        times = []
        for path in paths:
            driver.get(f"http://127.0.0.1:{port}{path}")
            timing = driver.execute_script(
                "const t = performance.getEntriesByType('navigation')[0]; return t.loadEventEnd - t.requestStart;"
            )
            times.append(float(timing))
        return times
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def baseline(root: Path, asked: list[str]) -> list[float]:
    """Milliseconds of ``Toolbox.search`` for each query (the first, untimed, opens the index)."""
    from deckhand.calls.call_models import SearchArguments
    from deckhand.calls.toolbox import Toolbox

    box = Toolbox.from_config(root / "agent.yaml")
    try:
        box.search(TOOL, SearchArguments(query=asked[0]))
        times = []
        for q in asked:
            clock = time.perf_counter()
            box.search(TOOL, SearchArguments(query=q))
            times.append((time.perf_counter() - clock) * 1000)
        return times
    finally:
        box.close()


def summary(name: str, values: list[float]) -> str:
    return f"{name} median {statistics.median(values):.1f} ms, max {max(values):.1f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=100_000)
    parser.add_argument("--per-file", type=int, default=10)
    parser.add_argument("--queries", type=int, default=30)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument(
        "--build-only", action="store_true", help="build the index in --workdir and stop (no timing: no lock needed)"
    )
    args = parser.parse_args()
    root = args.workdir or Path(tempfile.mkdtemp(prefix="deckhand-ui-bench-"))
    os.environ["DECKHAND_HOME"] = str(root / "state")
    print(f"load average at start: {os.getloadavg()[0]:.1f}; work folder {root}", flush=True)
    if not (root / "agent.yaml").is_file():
        clock = time.perf_counter()
        texts = texts_of("hierarchical", args.chunks // args.per_file, args.per_file)
        make_source(root, "hierarchical", texts, "hnsw")
        print(f"source written in {time.perf_counter() - clock:.0f} s", flush=True)
        write_index(root, "hierarchical", texts)
        del texts
    agent = root / "agent.yaml"
    if RANKED not in agent.read_text(encoding="utf-8"):
        agent.write_text(agent.read_text(encoding="utf-8") + RANKED, encoding="utf-8")
    if args.build_only:
        return
    asked = queries(args.queries)
    base = baseline(root, asked)
    server, port = start(root)
    try:
        clock = time.perf_counter()
        fetch(port, "/search?" + urlencode({"q": asked[0], "tool": f"agent:{TOOL}"}))
        print(f"first search page (opens the index): {(time.perf_counter() - clock) * 1000:.0f} ms", flush=True)
        pages = {
            "search": ["/search?" + urlencode({"q": q, "tool": f"agent:{TOOL}"}) for q in asked],
            "documents list, page 1": ["/documents?tool=agent:acts"] * 5,
            "documents list, page 500": ["/documents?tool=agent:acts&page=500"] * 5,
            "document view": [
                "/documents/view?" + urlencode({"tool": f"agent:{TOOL}", "source": f"docs/d0000/f{i:07d}.md"})
                for i in range(5)
            ],
            "index": ["/index"] * 5,
        }
        search_ttfb: list[float] = []
        for name, paths in pages.items():
            fetch(port, paths[0])  # warm
            timed = [fetch(port, p) for p in paths]
            ttfb, whole = [t[0] for t in timed], [t[1] for t in timed]
            size = statistics.median(t[2] for t in timed)
            shown = f"; {statistics.mean(t[3] for t in timed):.1f} results a page" if name == "search" else ""
            print(
                f"{name}: {summary('TTFB', ttfb)}; {summary('whole page', whole)}; {size / 1024:.0f} KiB{shown}",
                flush=True,
            )
            if name == "search":
                search_ttfb = ttfb
        print(f"baseline Toolbox.search, same queries: {summary('', base).strip()}", flush=True)
        ratio = statistics.median(search_ttfb) / statistics.median(base)
        print(f"search page TTFB / Toolbox.search (medians): {ratio:.2f}", flush=True)
        shown = rendered(port, pages["search"][:10])
        if shown is None:
            print("rendered: skipped (needs chromium, chromium-driver and selenium)", flush=True)
        else:
            print(f"rendered search page (Chromium, request start to load): {summary('', shown).strip()}", flush=True)
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
