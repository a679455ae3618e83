"""The time estimate printed before a long ingest, from the rate of its first embedding group."""

from __future__ import annotations

from deckhand.ingest.report import IngestStatus, format_size

#: Work below this many bytes to load gets no estimate (it cannot take minutes).
ESTIMATE_MIN_BYTES = 256 * 1024
#: An estimate is printed when the ingest will take longer than this many seconds.
ESTIMATE_MIN_SECONDS = 60.0


def wants_estimate(bytes_total: int) -> bool:
    """Whether a run loading ``bytes_total`` bytes could take minutes (so it calibrates and estimates)."""
    return bytes_total >= ESTIMATE_MIN_BYTES


def estimate(status: IngestStatus) -> str | None:
    """The message for the time the whole ingest will take, None if it is unknown or under a minute."""
    eta = status.eta()
    if eta is None or eta < ESTIMATE_MIN_SECONDS:
        return None
    rate = status.rate or 0.0
    return (
        f"about {status.chunks_expected:,} chunks to embed from {status.files_total:,} file(s) "
        f"({format_size(status.bytes_total)}): about {duration(eta)} at {rate:.1f} chunks/s"
    )


def duration(seconds: float) -> str:
    """``3725`` → ``1 h 2 min``; ``95`` → ``2 min``; ``40`` → ``40 s``."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = round(seconds / 60)
    return f"{minutes // 60} h {minutes % 60} min" if minutes >= 60 else f"{minutes} min"
