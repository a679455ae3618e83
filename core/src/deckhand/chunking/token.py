"""The builtin token chunker: fixed-size token windows with a real overlap."""

from __future__ import annotations

from collections.abc import Iterator

from pydantic import Field, model_validator

from deckhand.bases import ChunkerBase, TokenizerBase
from deckhand.chunking.budget import char_cap, char_cuts
from deckhand.tool_entry import StrictModel
from deckhand.types import Chunk, Document


class TokenChunkerOptions(StrictModel):
    """Options of the ``token`` chunker (``chunker: {name: token, ...}``)."""

    chunk_size: int = Field(default=512, ge=16, le=8192, description="Tokens per chunk.")
    chunk_overlap: int = Field(default=50, ge=0, description="Tokens shared by consecutive chunks.")

    @model_validator(mode="after")
    def _overlap(self) -> TokenChunkerOptions:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self


class TokenChunker(ChunkerBase):
    """Cuts a document into windows of ``chunk_size`` of the embedder's tokens sharing ``chunk_overlap``, each an
    exact slice of the text and at most :func:`~deckhand.chunking.budget.char_cap` characters."""

    @classmethod
    def from_options(cls, tokenizer: TokenizerBase, options: TokenChunkerOptions) -> TokenChunker:
        """The ``token`` chunker's registered factory (:class:`deckhand.registration.ChunkerFactory`)."""
        return cls(tokenizer, chunk_size=options.chunk_size, chunk_overlap=options.chunk_overlap)

    def __init__(self, tokenizer: TokenizerBase, chunk_size: int = 512, chunk_overlap: int = 50) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1 (got {chunk_size})")
        if not 0 <= chunk_overlap < chunk_size:
            raise ValueError(
                f"chunk_overlap must be in [0, chunk_size) (got {chunk_overlap} with chunk_size {chunk_size})"
            )
        self.tokenizer = tokenizer
        self._stream = tokenizer
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap
        self.max_chars = char_cap(chunk_size)

    def chunk(self, document: Document) -> list[Chunk]:
        return list(self.iter_chunks(document))

    def iter_chunks(self, document: Document) -> Iterator[Chunk]:
        """The windows of ``document``, one by one, from the tokenizer's stream where it has one."""
        text = document.text
        spans = self._stream.iter_token_spans(text)
        window = [span for _, span in zip(range(self.chunk_size), spans, strict=False)]
        if not window:
            return
        index = 0
        step = self.chunk_size - self.chunk_overlap
        while True:
            for begin, end in char_cuts(text, window[0][0], window[-1][1], self.max_chars):
                content = text[begin:end].strip()
                if content:
                    yield Chunk(
                        source=document.source,
                        index=index,
                        content=content,
                        metadata={"start_char": begin, "end_char": end},
                    )
                    index += 1
            following = next(spans, None)
            if following is None:  # the window reached the last token
                break
            del window[:step]
            window.append(following)
            window.extend(span for _, span in zip(range(self.chunk_size - len(window)), spans, strict=False))
