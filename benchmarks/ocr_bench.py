"""OCR accuracy and speed: deckhand's OCR (RapidOCR, the ocr plugin) against tesseract 5 on generated pages (issue 44).

Every page is rendered here from text the script knows: several fonts (DejaVu Sans, Serif, Sans Mono) and sizes
(10 and 12 point), at 300 and 150 dpi, rotated by up to 3 degrees, with noise and JPEG artefacts, in two columns,
as a table, and in small print (8 point at 150 dpi). Each engine reads every page; the character error rate
(edit distance over the reference's length, whitespace collapsed, reading order included: a two-column page
read across the columns is wrong) and the pages per second are printed per class of page, the engines in the
same run on the same pages, taking turns page by page, with the CPU seconds each spent a page and the load
average before and after. tesseract is run twice: as installed, and with ``OMP_THREAD_LIMIT=1`` (as installed
it starts four OpenMP threads, which on two cores spin more than they work; see docs/benchmarks.md). The page
texts come from ``--seed`` (2: the held-out set the reported figures use; nothing was tuned on it).

Then ``--rss-pages N`` pages of a scanned PDF are ingested by the PDF loader in a child process, whose peak RSS
is printed (the pages are streamed: it should not grow with N).

Needs Debian's ``tesseract-ocr`` and ``tesseract-ocr-eng`` (without them only deckhand's engine is measured) and
``fonts-dejavu-core``. Run it alone (``flock /tmp/deckhand-bench.lock``)::

    flock /tmp/deckhand-bench.lock python benchmarks/ocr_bench.py [--pages-per-class 3] [--seed 2] [--rss-pages 20]
"""

from __future__ import annotations

import argparse
import io
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONTS = Path("/usr/share/fonts/truetype/dejavu")
FACES = ["DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf"]
PROSE = (
    "the harbour board agrees to lease the shed to the tenant for five years from the first of march rent is paid "
    "monthly in advance into the account named below the deposit of nine hundred euros is returned within thirty "
    "days after the keys are handed back the tenant keeps the shed clean and insured against fire flood and theft "
    "repairs to the roof walls and doors are the board's duty while the tenant repairs what he breaks invoices "
    "are due within fourteen days late payment carries interest at four percent a year either party may end the "
    "lease with three months notice in writing disputes go to the court of the city where the harbour lies"
)
WORDS = PROSE.split()


@dataclass
class Page:
    """A rendered page and the text on it, in reading order."""

    kind: str
    image: Image.Image
    text: str
    dpi: int
    path: Path | None = None  # the page as a PNG file, for tesseract


def sentence(rng: random.Random, words: int) -> str:
    picked = [rng.choice(WORDS) for _ in range(words)]
    if rng.random() < 0.3:
        picked.insert(rng.randrange(len(picked)), f"{rng.randint(1, 9999)},{rng.randint(10, 99)}")
    return " ".join(picked).capitalize() + rng.choice([".", ".", ",", ";", ":"])


def lines_of(rng: random.Random, count: int, width: int) -> list[str]:
    """``count`` lines of about ``width`` characters."""
    out: list[str] = []
    while len(out) < count:
        line = ""
        while len(line) < width - 8:
            line = (line + " " + sentence(rng, 3)).strip()
        out.append(line[:width].rstrip())
    return out


def font(face: str, points: float, dpi: int) -> ImageFont.FreeTypeFont:
    return ImageFont.truetype(str(FONTS / face), round(points * dpi / 72))


def letter(dpi: int) -> Image.Image:
    return Image.new("L", (round(8.5 * dpi), round(11 * dpi)), 255)


def plain_page(rng: random.Random, dpi: int, face: str, points: float) -> tuple[Image.Image, str]:
    image = letter(dpi)
    draw = ImageDraw.Draw(image)
    typeface = font(face, points, dpi)
    per_line = int(6.5 * 72 / (points * (0.62 if "Mono" in face else 0.5)))
    lines = lines_of(rng, 24, per_line)
    y = dpi
    for line in lines:
        draw.text((dpi, y), line, fill=0, font=typeface)
        y += round(points * 1.5 * dpi / 72)
    return image, "\n".join(lines)


def columns_page(rng: random.Random, dpi: int) -> tuple[Image.Image, str]:
    image = letter(dpi)
    draw = ImageDraw.Draw(image)
    typeface = font("DejaVuSerif.ttf", 10, dpi)
    title = "Harbour board: terms of the lease"
    draw.text((dpi, int(0.8 * dpi)), title, fill=0, font=font("DejaVuSans-Bold.ttf", 14, dpi))
    left, right = lines_of(rng, 30, 40), lines_of(rng, 30, 40)
    for x, lines in ((dpi, left), (round(4.6 * dpi), right)):
        y = round(1.4 * dpi)
        for line in lines:
            draw.text((x, y), line, fill=0, font=typeface)
            y += round(15 * dpi / 72)
    return image, "\n".join([title, *left, *right])


def table_page(rng: random.Random, dpi: int) -> tuple[Image.Image, str]:
    image = letter(dpi)
    draw = ImageDraw.Draw(image)
    typeface = font("DejaVuSans.ttf", 11, dpi)
    rows = [["Item", "Quantity", "Unit price", "Total"]]
    for _ in range(20):
        quantity, price = rng.randint(1, 400), rng.randint(5, 9000) / 100
        rows.append(
            [
                rng.choice(WORDS).capitalize() + " " + rng.choice(WORDS),
                str(quantity),
                f"{price:.2f}",
                f"{quantity * price:.2f}",
            ]
        )
    xs = [1.0, 3.6, 5.0, 6.4]
    y = round(1.2 * dpi)
    for row in rows:
        for x, cell in zip(xs, row, strict=True):
            draw.text((round(x * dpi), y), cell, fill=0, font=typeface)
        draw.line((dpi, y + round(16 * dpi / 72), round(7.5 * dpi), y + round(16 * dpi / 72)), fill=128, width=1)
        y += round(22 * dpi / 72)
    return image, "\n".join(" ".join(row) for row in rows)


def degraded(image: Image.Image, rng: random.Random) -> Image.Image:
    """Noise (salt and pepper, a slight blur) and JPEG artefacts at quality 35."""
    noisy = image.filter(ImageFilter.GaussianBlur(0.6))
    pixels = noisy.load()
    assert pixels is not None
    for _ in range(noisy.width * noisy.height // 200):
        pixels[rng.randrange(noisy.width), rng.randrange(noisy.height)] = rng.choice((0, 255))
    buffer = io.BytesIO()
    noisy.save(buffer, "JPEG", quality=35)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("L")


def pages(seed: int, per_class: int) -> list[Page]:
    rng = random.Random(seed)
    small = random.Random(f"{seed} small print")  # its own, so the other classes' texts stay as they were
    out: list[Page] = []
    for index in range(per_class):
        face, points = FACES[index % len(FACES)], (10, 12)[index % 2]
        image, text = plain_page(rng, 300, face, points)
        out.append(Page("clean 300 dpi", image, text, 300))
        image, text = plain_page(rng, 150, face, points)
        out.append(Page("clean 150 dpi", image, text, 150))
        image, text = plain_page(rng, 300, face, points)
        angle = rng.choice((-3, -2, 2, 3))
        out.append(Page("rotated ±3°", image.rotate(angle, expand=True, fillcolor=255), text, 300))
        image, text = plain_page(rng, 200, face, points)
        out.append(Page("noise + JPEG 200 dpi", degraded(image, rng), text, 200))
        image, text = columns_page(rng, 200)
        out.append(Page("two columns 200 dpi", image, text, 200))
        image, text = table_page(rng, 200)
        out.append(Page("table 200 dpi", image, text, 200))
        image, text = plain_page(small, 150, FACES[(index + 1) % len(FACES)], 8)
        out.append(Page("small print 8 pt 150 dpi", image, text, 150))
    return out


def normal(text: str) -> str:
    return " ".join(text.split())


def distance(a: str, b: str) -> int:
    """Levenshtein distance (two rows, pure Python: a page is a few thousand characters)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def cer(reference: str, found: str) -> float:
    ref = normal(reference)
    return distance(ref, normal(found)) / max(len(ref), 1)


def deckhand_reader(side: int | None = None, spinning: bool = False) -> Callable[[Page], str]:
    """deckhand's engine and layout, detecting at ``side`` pixels (the engine's default when None), its
    onnxruntime threads spinning or not (:class:`deckhand_ocr.engine.Engine`)."""
    from deckhand_ocr.engine import Engine
    from deckhand_ocr.layout import page_text

    engine = Engine(side, spinning=spinning)
    engine.recognise(Image.new("RGB", (200, 60), "white"))  # load the models before timing

    def read(page: Page) -> str:
        return page_text(engine.recognise(page.image))

    return read


def tesseract_reader(folder: Path, threads: int | None = None) -> Callable[[Page], str] | None:
    """tesseract on the page's PNG (written before any timing), one process per page; ``threads`` sets
    ``OMP_THREAD_LIMIT`` (tesseract's own advice where several pages are read at once), None leaves it as
    installed."""
    binary = shutil.which("tesseract")
    if binary is None:
        return None
    environment = dict(os.environ)
    environment.pop("OMP_THREAD_LIMIT", None)
    if threads is not None:
        environment["OMP_THREAD_LIMIT"] = str(threads)

    def read(page: Page) -> str:
        path = page.path
        if path is None:
            path = page.path = folder / f"page-{id(page)}.png"
            page.image.save(path)
        done = subprocess.run(
            [binary, str(path), "stdout", "-l", "eng", "--psm", "3", "--dpi", str(page.dpi)],
            capture_output=True,
            text=True,
            check=True,
            env=environment,
        )
        return done.stdout

    return read


def cpu_seconds() -> float:
    """CPU time (user and system) of this process's threads and its finished children so far."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def load() -> str:
    """The machine's load averages (1, 5 and 15 minutes), as ``uptime`` prints them."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def measure(readers: dict[str, Callable[[Page], str]], corpus: list[Page]) -> dict[str, dict[str, tuple[float, float]]]:
    """Engine → class of page → (mean CER, pages per second). The engines take turns page by page, so a change
    in the machine's load (other processes) weighs on all alike; the pages per second and CPU seconds a page over
    all pages, and each deckhand reader's time ratio to each other reader (overall, by half, per page: whether
    it has settled), are printed."""
    rows: dict[str, dict[str, list[tuple[float, float]]]] = {name: {} for name in readers}
    times: dict[str, list[float]] = {name: [] for name in readers}
    cpu: dict[str, float] = dict.fromkeys(readers, 0.0)
    scored: dict[tuple[str, str], float] = {}  # the same text read twice (two tesseract settings) is scored once
    print(f"  load average before: {load()}", flush=True)
    for page in corpus:
        for name, read in readers.items():
            used, clock = cpu_seconds(), time.perf_counter()
            found = read(page)
            seconds = time.perf_counter() - clock
            cpu[name] += cpu_seconds() - used
            times[name].append(seconds)
            if (page.text, found) not in scored:
                scored[page.text, found] = cer(page.text, found)
            rows[name].setdefault(page.kind, []).append((scored[page.text, found], seconds))
    print(f"  load average after: {load()}")
    for name in readers:
        print(
            f"  {name}: {len(corpus) / sum(times[name]):.3f} pages/s, {cpu[name] / len(corpus):.2f} CPU s a page "
            f"(user and system, all threads)"
        )
    half = len(corpus) // 2
    for ours in (name for name in readers if name.startswith("deckhand")):
        for theirs in (name for name in readers if name != ours):
            mine, other = times[ours], times[theirs]
            ratios = sorted(t / o for o, t in zip(mine, other, strict=True))  # > 1: ours the faster on that page
            print(
                f"  {ours} against {theirs}: {sum(other) / sum(mine):.2f} times its pages per second over all "
                f"{len(corpus)} pages ({sum(other[:half]) / sum(mine[:half]):.2f} over the first half, "
                f"{sum(other[half:]) / sum(mine[half:]):.2f} over the second); per page: median "
                f"{ratios[len(ratios) // 2]:.2f}, from {ratios[0]:.2f} to {ratios[-1]:.2f}",
                flush=True,
            )
    return {
        name: {
            kind: (sum(c for c, _ in got) / len(got), len(got) / sum(s for _, s in got)) for kind, got in kinds.items()
        }
        for name, kinds in rows.items()
    }


def rss_run(pages_count: int, seed: int) -> None:
    """In a child process: write a scanned PDF of ``pages_count`` pages, load it with the PDF loader, print peak RSS."""
    sys.path.insert(0, str(Path(__file__).parents[1] / "plugins" / "ocr" / "tests"))
    from deckhand.ingest.loader_set import LoaderSet
    from deckhand.ingest.loaders import LoaderSettings, reporting_parts
    from deckhand_ocr.pdf import PdfLoader
    from ocr_samples import PdfPage, pdf

    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "scan.pdf"
        path.write_bytes(
            pdf([PdfPage(image=plain_page(rng, 150, "DejaVuSans.ttf", 11)[0]) for _ in range(pages_count)])
        )
        size = path.stat().st_size
        before = peak_rss()
        clock = time.perf_counter()

        def page_done(done: int, total: int, unit: str) -> None:  # the loader's per-page progress
            if done % 10 == 0 or done in (1, total):
                seconds = time.perf_counter() - clock
                print(
                    f"    page {done}/{total}: {seconds:.0f} s, RSS {rss():.0f} MB, peak {peak_rss():.0f} MB",
                    flush=True,
                )

        with reporting_parts(page_done):
            loaded = LoaderSet([PdfLoader()], LoaderSettings(ocr="auto")).load_with_metadata(path)
        seconds = time.perf_counter() - clock
    print(
        f"  {pages_count}-page scanned PDF ({size / 1e6:.1f} MB): {len(loaded.places)} pages read in {seconds:.0f} s "
        f"({pages_count / seconds:.2f} pages/s); peak RSS {peak_rss():.0f} MB (before loading: {before:.0f} MB)"
    )


def rss() -> float:
    """This process's resident memory now, in MB (``VmRSS``)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def peak_rss() -> float:
    """This process's peak resident memory in MB (``VmHWM``: unlike ``ru_maxrss``, not inherited across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages-per-class", type=int, default=3)
    parser.add_argument("--seed", type=int, default=2, help="2: the held-out page texts (1 was for trying things)")
    parser.add_argument("--rss-pages", type=int, default=0, help="also ingest a scanned PDF of this many pages")
    parser.add_argument("--rss-child", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument(
        "--before",
        action="store_true",
        help="also time deckhand as it was before issue 44's speed-up (detector at 1,280 pixels, spinning threads)",
    )
    args = parser.parse_args()
    if args.rss_child:
        rss_run(args.rss_child, args.seed)
        return
    if args.pages_per_class <= 0:
        print(flush=True)
        subprocess.run(
            [sys.executable, __file__, "--rss-child", str(args.rss_pages), "--seed", str(args.seed)], check=True
        )
        return
    corpus = pages(args.seed, args.pages_per_class)
    print(f"{len(corpus)} generated pages, seed {args.seed}", flush=True)
    readers = {"deckhand (RapidOCR)": deckhand_reader()}
    if args.before:
        readers["deckhand before (1,280 px, spinning)"] = deckhand_reader(1280, spinning=True)
    with tempfile.TemporaryDirectory() as folder:
        for number, page in enumerate(corpus):  # tesseract reads files: written before anything is timed
            page.path = Path(folder) / f"page-{number}.png"
            page.image.save(page.path)
        tesseract = tesseract_reader(Path(folder))
        if tesseract is None:
            print("  tesseract: not installed (apt-get install tesseract-ocr tesseract-ocr-eng); not measured")
        else:
            version = subprocess.run(["tesseract", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
            readers[version] = tesseract
            readers[f"{version}, OMP_THREAD_LIMIT=1"] = tesseract_reader(Path(folder), threads=1)  # type: ignore[assignment]
        results = measure(readers, corpus)
    kinds = list(dict.fromkeys(page.kind for page in corpus))
    names = list(results)
    print("\n| page class | " + " | ".join(f"{n}: CER | {n}: pages/s" for n in names) + " |")
    print("|---|" + "---|---|" * len(names))
    for kind in [*kinds, "all"]:
        cells = []
        for name in names:
            if kind == "all":
                rows = list(results[name].values())
                mean = sum(c for c, _ in rows) / len(rows)
                speed = len(rows) / sum(1 / s for _, s in rows)  # harmonic: pages per second over all classes
            else:
                mean, speed = results[name][kind]
            cells += [f"{100 * mean:.2f}%", f"{speed:.2f}"]
        print(f"| {kind} | " + " | ".join(cells) + " |")
    if args.rss_pages:
        print(flush=True)
        subprocess.run(
            [sys.executable, __file__, "--rss-child", str(args.rss_pages), "--seed", str(args.seed)], check=True
        )


if __name__ == "__main__":
    main()
