"""The pages in a real headless Chromium (Debian's chromium and chromedriver, driven by Selenium): search, open a
document, compare two configs, start an ingest and watch it finish; each page's screenshot is kept.

Skipped where chromium or chromedriver is absent (.ci/run installs both). Screenshots go to pytest's temporary
folder, or to ``$DECKHAND_UI_SCREENSHOTS`` (``docs/ui`` refreshes the ones docs/ui.md shows).
"""

from __future__ import annotations

import os
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _ui_corpus import AGENT, EXAMPLES, OTHER, write_corpus
from deckhand_ui.app import create_app
from deckhand_ui.core_api import HttpAddress, VectorCoordinate, bind
from deckhand_ui.serve import server_config
from deckhand_ui.workbench import Workbench

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"

pytestmark = pytest.mark.skipif(
    not (os.access(CHROMIUM, os.X_OK) and os.access(CHROMEDRIVER, os.X_OK)),
    reason="needs chromium and chromium-driver (apt-get install -y chromium chromium-driver)",
)
webdriver = pytest.importorskip("selenium.webdriver", reason="needs selenium (deckhand-ai-ui[testing])")
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

#: Chromium's flags: no sandbox (root in a container), no network of its own, a fresh profile.
FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    "--disable-dev-shm-usage", "--window-size=1400,1000",
]  # fmt: skip


class Server:
    """The workbench on a free loopback port, in a thread."""

    def __init__(self, bench: Workbench) -> None:
        import uvicorn

        self.sock = bind(HttpAddress("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.server = uvicorn.Server(server_config(create_app(bench)))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> Server:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(10)
        self.sock.close()


@pytest.fixture(scope="module")
def shots(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = os.environ.get("DECKHAND_UI_SCREENSHOTS")
    path = Path(folder) if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("browser")
    write_corpus(root, extra_files=60)  # a generated index: two pages of files
    (root / "agent.yaml").write_text(AGENT, encoding="utf-8")
    (root / "other.yaml").write_text(OTHER, encoding="utf-8")
    bench = Workbench.open(root / "agent.yaml", [root / "other.yaml"])
    memory = bench.main.memory
    assert memory is not None
    memory.store(VectorCoordinate(3, 2, 1), "Keyword search uses tantivy: it pages its postings from disk.")
    memory.store(VectorCoordinate(3, 4, 2), "Compare pages sort differing questions first.")
    memory.store(VectorCoordinate(7, 5, 4), "Lighthouse horns sound every thirty seconds in fog.")
    with Server(bench) as server:
        yield server
    bench.close()


def _wait(driver: Any, css: str, seconds: float = 90) -> Any:
    return WebDriverWait(driver, seconds).until(EC.presence_of_element_located((By.CSS_SELECTOR, css)))


def test_search_then_open_the_document(browser: Any, served: Server, shots: Path) -> None:
    driver: Any = browser
    driver.get(served.url + "/search")
    box = _wait(driver, "#q")
    box.send_keys("How often does the lighthouse horn sound in fog?")
    for side in ("agent:flat", "other:acts_keyword"):
        driver.find_element(By.CSS_SELECTOR, f'input[name=tool][value="{side}"]').click()
    driver.find_element(By.ID, "search-button").click()
    _wait(driver, '[data-tool="agent:acts"] #result-1')
    columns = driver.find_elements(By.CSS_SELECTOR, "section.column")
    assert len(columns) == 3
    first = driver.find_element(By.CSS_SELECTOR, '[data-tool="agent:acts"] #result-1')
    assert "docs/lights.md" in first.text and "semantic" in first.text and "fused" in first.text
    assert first.find_elements(By.TAG_NAME, "mark")
    driver.save_screenshot(str(shots / "search.png"))
    first.find_element(By.CSS_SELECTOR, "a.source").click()
    marked = _wait(driver, "article.chunk.marked")
    assert "horn" in marked.text and "the result you opened" in marked.text
    driver.save_screenshot(str(shots / "document.png"))


def test_browse_the_documents(browser: Any, served: Server, shots: Path) -> None:
    driver: Any = browser
    driver.get(served.url + "/documents?tool=agent:acts")
    table = _wait(driver, "#files")
    assert "docs/changelog.json" in table.text
    driver.save_screenshot(str(shots / "documents.png"))
    driver.find_element(By.ID, "next-page").click()
    WebDriverWait(driver, 30).until(lambda d: "page 2 of 2" in d.page_source)


def test_compare_two_configs(browser: Any, served: Server, shots: Path) -> None:
    driver: Any = browser
    driver.get(served.url + "/compare")
    Select(_wait(driver, "select[name=a]")).select_by_value("agent:flat")
    Select(driver.find_element(By.CSS_SELECTOR, "select[name=b]")).select_by_value("other:acts_keyword")
    driver.find_element(By.ID, "compare-button").click()
    scores = _wait(driver, "#scores")
    assert "agent:flat" in scores.text and "other:acts_keyword" in scores.text
    assert driver.find_elements(By.CSS_SELECTOR, ".chart svg rect")
    rows = driver.find_elements(By.CSS_SELECTOR, "#questions tr")
    assert len(rows) == 7  # the header and the six questions
    assert "differs" in (rows[1].get_attribute("class") or "")  # a question the two rank differently comes first
    driver.save_screenshot(str(shots / "compare.png"))


def test_start_an_ingest_and_watch_it_finish(browser: Any, served: Server, shots: Path) -> None:
    driver: Any = browser
    driver.get(served.url + "/index")
    _wait(driver, "#tool-acts")
    driver.find_element(By.CSS_SELECTOR, "#tool-acts input[name=force]").click()
    driver.find_element(By.ID, "ingest-acts").click()
    _wait(driver, "#job-acts.running, #job-acts.done", 30)  # htmx swapped the job in, and polls it
    done = _wait(driver, "#job-acts.done", 120)
    assert "ingest finished" in done.text and "ingested" in done.text
    assert driver.current_url.endswith("/index")  # no page load: htmx polled
    driver.save_screenshot(str(shots / "index.png"))


def test_the_memory_grid(browser: Any, served: Server, shots: Path) -> None:
    driver: Any = browser
    driver.get(served.url + "/memory?q=foghorn+at+sea&how=meaning")
    grid = _wait(driver, "#grid")
    assert len(grid.find_elements(By.CSS_SELECTOR, "td.filled")) == 3
    found = driver.find_element(By.CSS_SELECTOR, "table.found")
    assert found.text.splitlines()[1].startswith("(7, 5, 4)")
    driver.save_screenshot(str(shots / "memory.png"))


def test_the_example_agent(browser: Any, tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "examples")
    bench = Workbench.open(tmp_path / "examples" / "agent.yaml")
    try:
        with Server(bench) as server:
            driver: Any = browser
            driver.get(server.url + "/search?q=How+often+should+API+keys+be+rotated%3F")
            first = _wait(driver, "#result-1")
            assert "docs/security.md" in first.text
    finally:
        bench.close()
