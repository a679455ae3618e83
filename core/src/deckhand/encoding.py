"""Which encoding a text file is in: byte-order marks, UTF-8, UTF-16/32, then the most plausible legacy code page."""

from __future__ import annotations

import codecs
import fnmatch
import functools
import unicodedata
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

#: Byte-order marks, longest first (the UTF-32 LE mark starts with the UTF-16 LE one).
BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)

#: Legacy encodings tried when a file is not UTF-8, most common first (the order breaks ties).
LEGACY_ENCODINGS: tuple[str, ...] = (
    "cp1252",
    "cp1250",
    "cp1251",
    "cp1253",
    "cp1254",
    "cp1257",
    "iso8859_15",
    "iso8859_2",
    "iso8859_7",
    "koi8_r",
    "shift_jis",
    "cp932",
    "euc_jp",
    "gb18030",
    "big5",
    "cp950",
    "euc_kr",
    "cp949",
)

#: How much of a file is judged: lines holding non-ASCII bytes, up to this many bytes.
SAMPLE_BYTES = 32_768
#: A decision is certain when the runner-up (a different text) has this many more penalty points, and this share
#: of the judged characters more.
CERTAIN_MARGIN = 2.0
CERTAIN_SHARE = 0.04


class NotTextError(ValueError):
    """The bytes do not decode to text in any encoding tried (binary data)."""


@dataclass(frozen=True)
class Decoded:
    """A decoding decision: the text, the encoding, and a nearly as plausible other encoding if any."""

    text: str
    encoding: str
    alternative: str | None = None

    @property
    def certain(self) -> bool:
        return self.alternative is None


def canonical_encoding(name: str) -> str:
    """Python's name for a text encoding; raises ``LookupError`` for unknown or non-text codecs."""
    info = codecs.lookup(name)
    if not getattr(info, "_is_text_encoding", True):
        raise LookupError(f"{name} is not a text encoding")
    return info.name


def encoding_for(setting: str | Mapping[str, str], relative: str) -> str:
    """The encoding a tool's ``encoding:`` setting gives the file at ``relative``: a mapping's patterns match the
    relative path (``*`` crosses ``/``) or, without ``/``, the file name; no match means ``auto``."""
    if isinstance(setting, str):
        return setting
    name = relative.rsplit("/", 1)[-1]
    for pattern, encoding in setting.items():
        if fnmatch.fnmatchcase(relative, pattern) or ("/" not in pattern and fnmatch.fnmatchcase(name, pattern)):
            return encoding
    return "auto"


def decode_as(data: bytes, encoding: str) -> str:
    """Decode with a pinned encoding; a UTF-8 byte-order mark is dropped. Raises ``UnicodeDecodeError``."""
    name = canonical_encoding(encoding)
    if name == "utf-8" and data.startswith(codecs.BOM_UTF8):
        name = "utf-8-sig"
    return data.decode(name)


def detect(data: bytes) -> Decoded:
    """Decode ``data`` by BOM, UTF-8, UTF-16/32, then legacy code pages. :class:`NotTextError` for binary data."""
    for bom, encoding in BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(encoding)
            except UnicodeDecodeError as exc:
                raise NotTextError(f"invalid {encoding} text ({exc.reason} at byte {exc.start})") from exc
            return Decoded(text, encoding)
    head = data[:8192]
    if b"\x00" in head:
        return _wide(data, head)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if mostly_control(text):
            raise NotTextError("looks binary (mostly control characters), not text")
        return Decoded(text, "utf-8")
    return _legacy(data)


def mostly_control(text: str) -> bool:
    """More than 5% control characters in the first 4,096 (tab, newline, CR and form feed excepted)."""
    sample = text[:4096]
    if not sample:
        return False
    bad = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\t\n\r\f")
    return bad / len(sample) > 0.05


def _wide(data: bytes, head: bytes) -> Decoded:
    """UTF-16 or UTF-32 without a byte-order mark (NUL bytes in text), else binary."""
    candidates = [e for e in ("utf-32-le", "utf-32-be") if len(data) % 4 == 0]
    candidates += [e for e in ("utf-16-le", "utf-16-be") if len(data) % 2 == 0]
    scored = []
    for encoding in candidates:
        try:  # not final: the head may end inside a character
            sample = codecs.getincrementaldecoder(encoding)().decode(head, final=False)
        except UnicodeDecodeError:
            continue
        if mostly_control(sample):
            continue
        penalty, judged = plausibility(sample)
        if judged and penalty / judged > 0.25:
            continue
        scored.append((penalty, encoding))
    for _, encoding in sorted(scored):
        try:
            return Decoded(data.decode(encoding), encoding)
        except UnicodeDecodeError:
            continue
    raise NotTextError("looks binary (contains NUL bytes), not text")


def _legacy(data: bytes) -> Decoded:
    """The most plausible legacy decoding (scored by :func:`plausibility`)."""
    sample = _sample(data)
    ranked: list[tuple[float, int, str, str]] = []  # penalty, preference, encoding, sample text
    judged = 0
    candidates = LEGACY_ENCODINGS + (("utf-16-le", "utf-16-be") if len(data) % 2 == 0 else ())
    for preference, encoding in enumerate(candidates):
        decoder = codecs.getincrementaldecoder(encoding)()
        try:  # lines cut UTF-16 out of step: its sample is the start of the file
            text = decoder.decode(data[:SAMPLE_BYTES] if encoding.startswith("utf-16") else sample, final=False)
        except UnicodeDecodeError:
            continue
        if mostly_control(text):
            continue
        penalty, count = plausibility(text)
        judged = max(judged, count)
        ranked.append((penalty, preference, encoding, text))
    ranked.sort()
    for position, (penalty, _, encoding, text) in enumerate(ranked):
        try:
            full = data.decode(encoding)
        except UnicodeDecodeError:
            continue  # invalid further on than the sample
        rivals = [r for r in ranked[position + 1 :] if r[3] != text]
        if rivals and rivals[0][0] - penalty < max(CERTAIN_MARGIN, CERTAIN_SHARE * judged):
            return Decoded(full, encoding, alternative=rivals[0][2])
        return Decoded(full, encoding)
    # ISO 8859-15 and KOI8-R accept every byte: only control characters everywhere get here
    raise NotTextError("cannot decode as text (not UTF-8, cp1252 or Latin-1)")


def _sample(data: bytes) -> bytes:
    """Lines holding non-ASCII bytes, up to :data:`SAMPLE_BYTES` (no legacy character contains a newline byte)."""
    if len(data) <= SAMPLE_BYTES:
        return data
    parts: list[bytes] = []
    size = 0
    start = 0
    while size < SAMPLE_BYTES and start < len(data):
        end = data.find(b"\n", start)
        end = len(data) if end < 0 else end + 1
        line = data[start:end]
        if not line.isascii():
            parts.append(line[: SAMPLE_BYTES - size] if size + len(line) > SAMPLE_BYTES else line)
            size += len(parts[-1])
        start = end
    return b"".join(parts) or data[:SAMPLE_BYTES]


# -- plausibility --------------------------------------------------------------------------

#: Non-letters that ordinary text uses.
COMMON_SYMBOLS = frozenset("€£¥¢°§©®™×÷±«»“”‘’‚„–—…•·¿¡¶†‡‰′″‹›µ¹²³¼½¾ªº\u00a0")
#: Non-letters that may sit between two letters of a word.
IN_WORD = frozenset("’'·‐‑-")

#: Accented letters of each language written in Latin script (lowercase).
LATIN_ALPHABETS: dict[str, frozenset[str]] = {
    name: frozenset(letters)
    for name, letters in {
        "french": "àâæçéèêëîïôœùûüÿ",
        "german": "äöüßé",
        "spanish": "áéíñóúü",
        "portuguese": "áàâãçéêíóôõú",
        "italian": "àèéìíîòóù",
        "catalan": "àçèéíïòóúü",
        "dutch": "áéèëïóöü",
        "danish_norwegian": "æøåéó",
        "swedish_finnish": "åäöéšž",
        "icelandic": "áðéíóúýþæö",
        "polish": "ąćęłńóśźż",
        "czech": "áčďéěíňóřšťúůýž",
        "slovak": "áäčďéíĺľňóôŕšťúýž",
        "hungarian": "áéíóöőúüű",
        "romanian": "ăâîșțşţ",
        "croatian_slovene": "čćđšž",
        "turkish": "çğıöşüâîû",
        "estonian": "äõöüšž",
        "latvian": "āčēģīķļņšūž",
        "lithuanian": "ąčęėįšųūž",
        "albanian": "çë",
    }.items()
}

#: Cyrillic letters beyond Russian's, per language (Russian's own are always accepted).
_RUSSIAN = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
CYRILLIC_ALPHABETS: dict[str, frozenset[str]] = {
    name: frozenset(_RUSSIAN + extra)
    for name, extra in {
        "russian": "",
        "ukrainian": "іїєґ'",
        "belarusian": "іў",
        "serbian_macedonian": "ђјљњћџѓќѕ",
    }.items()
}

_LATIN, _GREEK, _CYRILLIC, _HAN, _KANA, _HANGUL, _OTHER = range(7)


def plausibility(text: str) -> tuple[float, int]:
    """Penalty points of ``text`` as natural-language text (lower is more plausible), and the characters judged."""
    penalty = 0.0
    judged = 0
    latin: Counter[str] = Counter()
    cyrillic: Counter[str] = Counter()
    han: list[str] = []
    hangul_letters: list[str] = []
    kana = hangul = 0
    previous = " "
    run: list[int] = []  # scripts of the letters of the current word
    length = len(text)
    for i, ch in enumerate(text):
        code = ord(ch)
        if code < 128:
            if code < 32 and ch not in "\t\n\r\f\v":
                penalty += 4.0  # a control character
            if ch.isalpha():
                run.append(_LATIN)
            else:
                penalty += _end_run(run)
                if ch == " " and _is_ideograph(previous) and i + 1 < length and _is_ideograph(text[i + 1]):
                    penalty += 0.5  # Chinese and Japanese do not put spaces between ideographs
            previous = ch
            continue
        judged += 1
        kind = _kind(ch)
        if kind == "bad":
            penalty += 4.0
        elif kind == "letter":
            script = _script(ch)
            run.append(script)
            if ch.isupper() and previous.isalpha():
                penalty += 1.0  # a capital after a letter: case swapped (KOI8-R/cp1251) or garbage
            if script == _LATIN:
                latin[ch.lower()] += 1
            elif script == _CYRILLIC:
                cyrillic[ch.lower()] += 1
            elif script == _HAN:
                han.append(ch)
            elif script == _KANA:
                kana += 1
                if 0xFF61 <= code <= 0xFF9F:
                    penalty += 1.0  # half-width katakana: what CJK bytes read as Shift_JIS become
            elif script == _HANGUL:
                hangul += 1
                hangul_letters.append(ch)
        else:
            penalty += _end_run(run)
            if kind == "rare":
                penalty += 1.0
            if code < 0x2E80 and ch not in IN_WORD and previous.isalpha() and i + 1 < length and text[i + 1].isalpha():
                penalty += 2.0  # a symbol inside a word
        previous = ch
    penalty += _end_run(run)
    penalty += _alphabet_misfit(latin, LATIN_ALPHABETS)
    penalty += _alphabet_misfit(cyrillic, CYRILLIC_ALPHABETS)
    penalty += _cjk_misfit(han, kana, hangul, hangul_letters)
    return penalty, judged


def _end_run(run: list[int]) -> float:
    """Penalty of a finished word: its letters outside the word's main script; clears ``run``."""
    if not run:
        return 0.0
    counts = Counter(_HAN if s == _KANA else s for s in run)  # Japanese mixes kanji and kana in a word
    run.clear()
    return float(sum(counts.values()) - max(counts.values()))


def _alphabet_misfit(letters: Counter[str], alphabets: dict[str, frozenset[str]]) -> float:
    """Letters that the language explaining most of them does not use."""
    total = sum(letters.values())
    if not total:
        return 0.0
    best = max(sum(n for ch, n in letters.items() if ch in alphabet) for alphabet in alphabets.values())
    return float(total - best)


def _cjk_misfit(han: list[str], kana: int, hangul: int, syllables: list[str]) -> float:
    """Penalty of the ideographs of a text given its language (kana: Japanese, hangul: Korean, else Chinese)."""
    if not han and not kana and not hangul:
        return 0.0
    if kana >= hangul and kana:
        charsets: tuple[str, ...] = ("cp932",)
        language, penalty = "Japanese", float(hangul)
    elif hangul:
        charsets, language, penalty = ("cp949",), "Korean", float(kana)
    else:
        charsets, language, penalty = ("gb2312", "big5"), "Chinese", 0.0
    frequent = _frequent(language)
    for ch in han:
        if not any(_encodable(ch, charset) for charset in charsets):
            penalty += 1.0  # not in the character set of the text's language
        elif not _first_level(ch, language):
            penalty += 0.5  # a rare character
        elif frequent and ch not in frequent:
            penalty += 0.25  # not among the most frequent: real text has many of those, garbage few
    if frequent and language == "Korean":
        penalty += 0.25 * sum(1 for ch in syllables if ch not in frequent)
    return penalty


@functools.lru_cache(maxsize=8192)
def _encodable(ch: str, charset: str) -> bool:
    try:
        ch.encode(charset)
    except UnicodeEncodeError:
        return False
    return True


#: The everyday ideographs of each language: the first level of its national character sets (byte ranges).
FIRST_LEVEL: dict[str, tuple[tuple[str, int, int], ...]] = {
    "Chinese": (("gb2312", 0xB0A1, 0xD7FE), ("big5", 0xA440, 0xC67E)),
    "Japanese": (("cp932", 0x889F, 0x9872),),
    "Korean": (("cp949", 0xCAA1, 0xFDFE),),  # KS X 1001's hanja have a single level
}


@functools.lru_cache(maxsize=8192)
def _first_level(ch: str, language: str) -> bool:
    """Whether ``ch`` is among the everyday ideographs of ``language`` (see :data:`FIRST_LEVEL`)."""
    for charset, low, high in FIRST_LEVEL[language]:
        try:
            data = ch.encode(charset)
        except UnicodeEncodeError:
            continue
        if len(data) == 2 and low <= int.from_bytes(data, "big") <= high:
            return True
    return False


@functools.lru_cache(maxsize=4)
def _frequent(language: str) -> frozenset[str]:
    """The most frequent characters of a CJK language, from charset-normalizer's tables (empty if unavailable)."""
    try:
        from charset_normalizer.constant import FREQUENCIES
    except ImportError:  # pragma: no cover - a core dependency
        return frozenset()
    chars: set[str] = set()
    for name, table in FREQUENCIES.items():
        if name.rstrip("—") == language:
            chars.update(table)
    return frozenset(chars)


@functools.lru_cache(maxsize=16384)
def _kind(ch: str) -> str:
    """``letter``, ``bad`` (control, unassigned, private use, U+FFFD), ``rare`` (an unusual symbol) or ``ok``."""
    category = unicodedata.category(ch)
    if category[0] in "LM":
        return "letter"
    if category in {"Cc", "Cn", "Co", "Cs"} or ch == "\ufffd":
        return "bad"
    if category[0] == "Z" or ch in COMMON_SYMBOLS:
        return "ok"
    code = ord(ch)
    if 0x2000 <= code <= 0x206F or 0x3000 <= code <= 0x303F or 0xFF00 <= code <= 0xFF65:
        return "ok"  # general and CJK punctuation, full-width forms
    return "rare"


def _script(ch: str) -> int:
    code = ord(ch)
    if code < 0x250 or 0x1E00 <= code <= 0x1EFF:
        return _LATIN
    if 0x370 <= code <= 0x3FF or 0x1F00 <= code <= 0x1FFF:
        return _GREEK
    if 0x400 <= code <= 0x52F:
        return _CYRILLIC
    if 0x3040 <= code <= 0x30FF or 0x31F0 <= code <= 0x31FF or 0xFF66 <= code <= 0xFF9F:
        return _KANA
    if 0x3400 <= code <= 0x4DBF or 0x4E00 <= code <= 0x9FFF or 0xF900 <= code <= 0xFAFF or code >= 0x20000:
        return _HAN
    if 0xAC00 <= code <= 0xD7A3 or 0x1100 <= code <= 0x11FF or 0x3130 <= code <= 0x318F:
        return _HANGUL
    return _OTHER


def _is_ideograph(ch: str) -> bool:
    return _script(ch) in (_HAN, _KANA) if ord(ch) >= 0x3000 else False
