"""The builtin token chunker: fixed-size token windows with a real overlap."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from deckhand.protocols import Tokenizer
from deckhand.types import Chunk, Document


class TokenChunkerOptions(BaseModel):
    """Options of the ``token`` chunker (``chunker: {name: token, ...}``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    chunk_size: int = Field(default=512, ge=16, le=8192, description="Tokens per chunk.")
    chunk_overlap: int = Field(default=50, ge=0, description="Tokens shared by consecutive chunks.")

    @model_validator(mode="after")
    def _overlap(self) -> TokenChunkerOptions:
        if self.chunk_overlap >= self.chunk_size:
            raise ValueError(
                f"chunk_overlap ({self.chunk_overlap}) must be smaller than chunk_size ({self.chunk_size})"
            )
        return self


class TokenChunker:
    """Cuts a document into windows of ``chunk_size`` tokens, consecutive windows sharing
    ``chunk_overlap`` tokens. Tokens are the embedder's own, so a chunk never exceeds what
    the model reads; chunk text is an exact slice of the document (no re-detokenising).
    """

    def __init__(self, tokenizer: Tokenizer, chunk_size: int = 512, chunk_overlap: int = 50) -> None:
        if chunk_size < 1:
            raise ValueError(f"chunk_size must be at least 1 (got {chunk_size})")
        if not 0 <= chunk_overlap < chunk_size:
            raise ValueError(
                f"chunk_overlap must be in [0, chunk_size) (got {chunk_overlap} with chunk_size {chunk_size})"
            )
        self.tokenizer = tokenizer
        self.chunk_size = chunk_size
        self.chunk_overlap = chunk_overlap

    def chunk(self, document: Document) -> list[Chunk]:
        text = document.text
        spans = self.tokenizer.token_spans(text)
        if not spans:
            return []
        chunks: list[Chunk] = []
        step = self.chunk_size - self.chunk_overlap
        start = 0
        while True:
            window = spans[start : start + self.chunk_size]
            begin, end = window[0][0], window[-1][1]
            content = text[begin:end].strip()
            if content:
                chunks.append(
                    Chunk(
                        source=document.source,
                        index=len(chunks),
                        content=content,
                        metadata={"start_char": begin, "end_char": end},
                    )
                )
            if start + self.chunk_size >= len(spans):
                break
            start += step
        return chunks
