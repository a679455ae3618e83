"""Reading the files behind search hits through their ``file://`` URIs: only files a served tool ingests."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from deckhand.calls.call_models import CallError
from deckhand.ingest.discovery import display_path
from deckhand.ingest.file_types import file_type
from deckhand.ingest.report import format_size
from deckhand.limits import MAX_READ_BYTES, MAX_URI_CHARS

#: Most lines one read returns (a longer range or section is cut; the answer says where it stops).
MAX_LINES = 400
#: Most characters one read returns.
MAX_CHARS = 40_000
#: Most context lines asked for on each side.
MAX_CONTEXT = 200

_RANGE = re.compile(r"L(\d{1,9})(?:-L?(\d{1,9}))?")
_MIME = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".rst": "text/x-rst",
    ".txt": "text/plain",
    ".csv": "text/markdown",  # read back as the table ingestion made of it
    ".json": "text/markdown",
}


def file_uri(path: Path, start: int | None = None, end: int | None = None) -> str:
    """``file:///abs/path#Lstart-Lend`` (no fragment without a start line)."""
    uri = "file://" + quote(path.as_posix(), safe="/")
    if start is None:
        return uri
    return f"{uri}#L{start}-L{end if end is not None and end >= start else start}"


def mime_type(path: PurePath) -> str:
    """What a read of ``path`` returns: its own text type, else markdown (the text ingestion converted it to)."""
    return _MIME.get(path.suffix.lower(), "text/markdown")


@dataclass(frozen=True)
class Place:
    """A file a tool ingests, and the lines asked for (None: from the start / to the end)."""

    tool: str
    path: Path
    display: str  # as results show it (relative to agent.yaml's folder when inside it, else absolute)
    start: int | None
    end: int | None
    relative: str = ""  # relative to the source (what its encoding: patterns match)


@dataclass(frozen=True)
class Passage:
    """Lines read from a file: which, from where, and whether the file goes on past them."""

    tool: str
    path: Path
    display: str
    start_line: int
    end_line: int
    total_lines: int
    text: str
    truncated: bool
    #: The last line of the range asked for (after context and section); past ``end_line`` when cut.
    range_end: int = 0

    @property
    def uri(self) -> str:
        return file_uri(self.path, self.start_line, self.end_line)

    @property
    def next_uri(self) -> str | None:
        """When cut: the URI of the rest of the range (the next line to the range's end); else None."""
        if not self.truncated or self.end_line >= self.range_end:
            return None
        return file_uri(self.path, self.end_line + 1, self.range_end)

    @property
    def mime_type(self) -> str:
        return mime_type(self.path)


@dataclass(frozen=True)
class _Source:
    tool: str
    given: Path  # as configured (absolute)
    real: Path  # resolved
    is_file: bool
    extensions: frozenset[str]
    encoding: Any
    #: The tool's ``max_file_size`` (None: no limit): a larger file is not indexed, so not read.
    max_file_size: int | None
    #: The directory results' paths are relative to (agent.yaml's); None: the tool shows paths its own way.
    base: Path | None = None

    def shown(self, relative: Path | None = None) -> str:
        """A file of this source as results show it: relative to :attr:`base` when inside it, else absolute; with
        no :attr:`base`, relative to the source (a file source: its name)."""
        given = Path(os.path.abspath(self.given))
        if self.base is None:
            return relative.as_posix() if relative is not None else given.name
        return display_path(given / relative if relative is not None else given, self.base)


class SourceReader:
    """Resolves ``file://`` URIs inside the sources of some tools and reads the lines they name."""

    def __init__(self, sources: Sequence[tuple[str, Path, Any]], loaders_of: Callable[[Any], Any] | None = None):
        """``sources``: (tool name, source path, tool) for each tool served."""
        self._loaders_of = loaders_of or tool_loaders
        self._given = [(name, Path(path).expanduser().absolute(), tool) for name, path, tool in sources]
        self._tools = {name: tool for name, _, tool in sources}
        self._extensions: dict[str, frozenset[str]] = {}

    @property
    def _sources(self) -> list[_Source]:
        """The sources as they are now (one created after the server started is served from then on)."""
        found = []
        for name, given, tool in self._given:
            try:
                real = given.resolve(strict=True)
            except (OSError, RuntimeError):
                continue  # a source that does not exist (yet) serves nothing
            if name not in self._extensions:
                self._extensions[name] = self._loaders_of(tool).extensions
            settings = tool.config.source_config()
            encoding = settings.encoding if settings is not None else "auto"
            limit = settings.max_file_size if settings is not None else None
            found.append(
                _Source(
                    name,
                    given,
                    real,
                    real.is_file(),
                    self._extensions[name],
                    encoding,
                    None if limit is None else int(limit),
                    tool.base_dir,
                )
            )
        return found

    @classmethod
    def of(cls, toolbox: Any) -> SourceReader:
        """The reader over every tool of a :class:`~deckhand.calls.toolbox.Toolbox`."""
        return cls([(name, toolbox.source(name), toolbox.tool(name)) for name in toolbox.tool_names])

    def root(self, tool: str) -> Path | None:
        """The directory a tool's ``path`` metadata is relative to (a file source: its directory)."""
        for source in self._sources:
            if source.tool == tool:
                return source.real.parent if source.is_file else source.real
        return None

    def link(self, tool: str, relative: str | None, start: int | None, end: int | None) -> str | None:
        """The URI of a hit (``relative``: its ``path`` metadata), or None when it names no served file."""
        root = self.root(tool)
        if root is None or not relative:
            return None
        return file_uri(root / relative, start, end)

    # -- resolving ----------------------------------------------------------------------------------
    def resolve(self, uri: str) -> Place:
        """The file and lines ``uri`` names; :class:`CallError` (one line) when it is not one a tool ingests."""
        if not isinstance(uri, str) or not uri.strip():
            raise CallError("uri: give a file:// URI from a search result")
        if len(uri) > MAX_URI_CHARS:
            raise CallError(f"uri: longer than {MAX_URI_CHARS} characters")
        if "\x00" in uri or "%00" in uri:
            raise CallError("uri: NUL is not allowed in a file URI")
        parts = urlsplit(uri.strip())
        if parts.scheme.lower() != "file":
            raise CallError(f"uri: only file:// URIs of search results are read, not {parts.scheme or 'a path'}")
        if parts.netloc not in ("", "localhost") or parts.query:
            raise CallError("uri: a file URI of this machine has no host and no query (file:///path#L1-L9)")
        start, end = line_range(parts.fragment)
        try:
            raw = unquote(parts.path, errors="strict")
        except UnicodeDecodeError:
            raise CallError("uri: the path is not valid percent-encoded UTF-8") from None
        segments = raw.split("/")
        if not raw.startswith("/") or any(s in (".", "..") for s in segments) or "\\" in raw or "\x00" in raw:
            raise CallError("uri: give the absolute path of an indexed file, without . or .. segments")
        path = Path(raw)
        for source in self._sources:
            try:
                place = self._inside(source, path, start, end)
            except OSError as exc:  # a name too long for the file system, a directory that cannot be listed
                why = exc.strerror or "cannot check it"
                raise CallError(f"uri: no such file in the tool's source ({why})") from None
            if place is not None:
                return place
        raise CallError("uri: not a file any tool of this server indexes (see deckhand_list_tools for the sources)")

    def _inside(self, source: _Source, path: Path, start: int | None, end: int | None) -> Place | None:
        if source.is_file:
            if path not in (source.given, source.real):
                return None
            return Place(source.tool, source.real, source.shown(), start, end, source.real.name)
        relative = None
        for base in (source.given, source.real):
            try:
                relative = path.relative_to(base)
                break
            except ValueError:
                continue
        if relative is None or not relative.parts:
            return None
        current = source.real
        for part in relative.parts:
            if part.startswith("."):
                raise CallError("uri: hidden files and directories are not indexed, so not read")
            current = current / part
            if current.is_symlink():
                raise CallError("uri: a symbolic link inside the source; read the file where it really is")
        if file_type(current, source.extensions) not in source.extensions:
            raise CallError(f"uri: {current.suffix or 'a file without extension'} files are not indexed, so not read")
        if not current.is_file():
            raise CallError("uri: no such file in the tool's source (it may have been deleted; search again)")
        return Place(source.tool, current, source.shown(relative), start, end, relative.as_posix())

    # -- reading ------------------------------------------------------------------------------------
    def read(
        self,
        uri: str,
        *,
        context: int = 0,
        section: bool = False,
        max_lines: int = MAX_LINES,
        max_chars: int = MAX_CHARS,
    ) -> Passage:
        """The lines ``uri`` names, widened by ``context`` or to their section, cut to ``max_lines``/``max_chars``."""
        place = self.resolve(uri)
        lines = self._lines(place)
        total = len(lines)
        if total == 0:
            return Passage(place.tool, place.path, place.display, 1, 0, 0, "", False)
        start = place.start or 1
        end = place.end if place.end is not None else (place.start if place.start is not None else total)
        if start > total:
            raise CallError(f"uri: line {start} is past the end of the file ({total} lines)")
        end = min(max(end, start), total)
        if section:
            start, end = _section(lines, place.display, start, end)
        context = max(0, min(context, MAX_CONTEXT))
        start, end = max(1, start - context), min(total, end + context)
        shown = lines[start - 1 : end]
        truncated = False
        if len(shown) > max_lines:
            shown, truncated = shown[:max_lines], True
        text = "".join(shown)
        if len(text) > max_chars:
            shown = lines_within(shown, max_chars)
            text, truncated = "".join(shown), True
        return Passage(
            place.tool, place.path, place.display, start, start + len(shown) - 1, total, text, truncated or False, end
        )

    def _lines(self, place: Place) -> list[str]:
        from deckhand.encoding import encoding_for
        from deckhand.ingest.workers import load_text

        source = next(s for s in self._sources if s.tool == place.tool)
        encoding = (
            source.encoding if isinstance(source.encoding, str) else encoding_for(source.encoding, place.relative)
        )
        limit = _read_limit(source, place)
        root = source.real.parent if source.is_file else source.real
        loaded, failed, _ = load_text(
            self._loaders_of(self._tools[place.tool]), place.path, encoding, root=root, max_bytes=limit
        )
        if loaded is None:
            raise CallError(f"uri: cannot read {place.display}: {failed}")
        return loaded.text.splitlines(keepends=True)


def _read_limit(source: _Source, place: Place) -> int:
    """The most bytes read of ``place``'s file; :class:`CallError` when it is larger (checked again once opened)."""
    limit = MAX_READ_BYTES if source.max_file_size is None else min(source.max_file_size, MAX_READ_BYTES)
    try:
        size = place.path.lstat().st_size
    except OSError as exc:
        raise CallError(f"uri: cannot read {place.display} ({exc.strerror or exc})") from None
    if source.max_file_size is not None and size > source.max_file_size:
        raise CallError(
            f"uri: {place.display} is {format_size(size)}, over the tool's max_file_size "
            f"({format_size(source.max_file_size)}): it is not indexed, so not read"
        )
    if size > limit:
        raise CallError(
            f"uri: {place.display} is {format_size(size)}, over what one read loads ({format_size(limit)}); "
            "search it instead"
        )
    return limit


def lines_within(lines: Sequence[str], max_chars: int) -> list[str]:
    """The first of ``lines`` that fit ``max_chars`` together (at least one, cut to ``max_chars``)."""
    kept: list[str] = []
    size = 0
    for line in lines:
        if kept and size + len(line) > max_chars:
            break
        kept.append(line[:max_chars])
        size += len(kept[-1])
    return kept


def line_range(fragment: str) -> tuple[int | None, int | None]:
    """The first and last line a URI's ``#L12-L30`` fragment names (None, None without one); one-line CallError."""
    if not fragment:
        return None, None
    match = _RANGE.fullmatch(fragment)
    if match is None:
        raise CallError(f"uri: the fragment must be a line range such as #L12-L30 or #L12, not #{fragment[:40]}")
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) else start
    if start < 1 or end < start:
        raise CallError(f"uri: line range {start}-{end}: lines start at 1 and the range must not be reversed")
    return start, end


def _section(lines: list[str], name: str, start: int, end: int) -> tuple[int, int]:
    """The lines of the section (markdown or RST headings) that holds ``start``, through ``end``'s section."""
    from deckhand.chunking import rst
    from deckhand.chunking.headings import parse_headings, split_lines

    text = "".join(lines)
    parsed = split_lines(text)
    if rst.is_rst_source(name) or (name.lower().endswith(".txt") and rst.looks_like_rst(parsed)):
        found = rst.headings(parsed, rst.region_lines(len(parsed), rst.regions(parsed)))
    else:
        found = parse_headings(text)
    offsets = [line.start for line in parsed]
    heads = [(_line_of(offsets, h.start), h.level) for h in found]
    first, level = 1, 0
    for line, lvl in heads:
        if line <= start:
            first, level = line, lvl
    last = len(lines)
    for line, lvl in heads:
        if line > max(start, end) and (level == 0 or lvl <= level):
            last = line - 1
            break
    return first, max(last, end)


def _line_of(offsets: list[int], char: int) -> int:
    """The 1-based line holding character ``char``."""
    import bisect

    return bisect.bisect_right(offsets, char)


def tool_loaders(tool: Any) -> Any:
    """The loaders ``tool`` reads its files with: deckhand's own and the plugin loaders it opted in to."""
    return tool.loader_set()
