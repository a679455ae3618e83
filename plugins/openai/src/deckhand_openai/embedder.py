"""An embedder that calls a remote ``/embeddings`` endpoint through deckhand's SDK-based client.

Inputs are packed into requests within the service's limits (``batch_size`` inputs, ``max_batch_tokens``
tokens), and up to ``max_concurrency`` requests are in flight at once so a remote service (TEI or
vLLM replicas behind a load balancer) is kept busy. An input over ``max_input_tokens`` is split into
pieces whose vectors are averaged (weighted by length), or truncated: it never reaches the API as
an error that stops the run. Tokens are counted with deckhand's own WordPiece tokenizer, an estimate
of the service's own; set ``max_input_tokens`` below the model's real limit for a margin.

:meth:`RemoteEmbedder.embed_batches` hands vectors over as each request completes, so the embedding
cache keeps what was embedded before a run fails (a later run resumes without asking again).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from deckhand.api import (
    EmbedderAuthenticationError,
    EmbedderBase,
    EmbeddingError,
    Vector,
    WordPieceTokenizer,
    degenerate_row,
)

from deckhand_openai.client import MalformedResponse, RemoteCallError, RemoteClient
from deckhand_openai.options import KNOWN_MODELS, SHORTENABLE, EmbedderOptions

#: What a short probe request embeds to learn the vector length of a model no option describes.
PROBE_TEXT = "dimension probe"

_tokenizer: WordPieceTokenizer | None = None
_tokenizer_lock = threading.Lock()


def proxy_tokenizer() -> WordPieceTokenizer:
    """deckhand's own WordPiece tokenizer (no model is loaded): counts and cuts inputs."""
    global _tokenizer
    with _tokenizer_lock:
        if _tokenizer is None:
            path = resources.files("deckhand.embedding") / "data" / "minilm-tokenizer.json"
            _tokenizer = WordPieceTokenizer(Path(str(path)))
        return _tokenizer


@dataclass
class _Input:
    """One piece sent to the service: ``owner`` is the text it belongs to, ``weight`` its share of it."""

    owner: int
    text: str
    tokens: int
    weight: float = 1.0


@dataclass
class _Text:
    pieces: int
    total: np.ndarray | None = None
    done: int = 0


@dataclass
class _Batch:
    inputs: list[_Input] = field(default_factory=list)
    tokens: int = 0


class RemoteEmbedder(EmbedderBase):
    """Embeds through an OpenAI-compatible ``/embeddings`` endpoint (OpenAI, Azure OpenAI, Ollama, vLLM, TEI ...).

    ``provider`` and ``model`` make the model id recorded with the index (with ``@<dimensions>`` when
    vectors are shortened), so changing either is a model change for the index.
    """

    def __init__(self, provider: str, options: EmbedderOptions) -> None:
        model = options.model or options.azure_deployment
        if not model:
            raise EmbeddingError(f"embedder {provider!r}: no model; set model: <name>")
        known_dim, known_limit = KNOWN_MODELS.get(model, (None, None))
        #: Whether the service is asked for vectors shortened to ``dimensions`` (text-embedding-3 models).
        self.shortened = options.dimensions is not None and model in SHORTENABLE
        if options.dimensions not in (None, known_dim) and known_dim is not None and not self.shortened:
            known = " and ".join(sorted(SHORTENABLE))
            raise EmbeddingError(
                f"embedder {provider!r}: dimensions is for {known}; {model!r} returns vectors of its own length"
            )
        self.provider = provider
        self.model = model
        self.options = options
        self.client = RemoteClient(options, f"embedder {provider!r}")
        self._dimension: int | None = options.dimensions or known_dim
        self.max_tokens = min(options.max_input_tokens, known_limit or options.max_input_tokens)
        suffix = f"@{options.dimensions}" if self.shortened else ""
        self.model_id = f"{provider}/{model}{suffix}"
        #: What happens to an input over :attr:`max_tokens` (the ingestion names the files it happened to).
        self.long_inputs = (
            f"split into {self.max_tokens}-token pieces and averaged"
            if options.long_inputs == "split"
            else f"truncated to {self.max_tokens} tokens"
        )
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"RemoteEmbedder({self.model_id} at {self.options.endpoint})"

    @property
    def tokens_used(self) -> int:
        """Tokens the service reported using, over every request so far (0 where it reports none)."""
        return self.client.tokens_used

    @property
    def requests_sent(self) -> int:
        return self.client.requests_sent

    @property
    def tokenizer(self) -> WordPieceTokenizer:
        return proxy_tokenizer()

    @property
    def dimension(self) -> int:  # type: ignore[override]  # EmbedderBase's attribute, known here on first use
        """The vector length: from the options or the model, else asked of the service once."""
        with self._lock:
            if self._dimension is None:
                vectors = self._send([_Input(0, PROBE_TEXT, 2)], check=False)
                self._dimension = int(vectors.shape[1])
            return self._dimension

    # -- embedding ---------------------------------------------------------------------------

    def embed(self, texts: Sequence[str]) -> Vector:
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for indices, vectors in self.embed_batches(texts):
            out[indices] = vectors
        return out

    def embed_batches(self, texts: Sequence[str]) -> Iterator[tuple[list[int], Vector]]:
        """``(indices, vectors)`` of ``texts`` as their requests complete (in any order).

        If a request fails for good, the vectors handed over before stay valid, the requests not yet
        sent are cancelled and the error is raised (:class:`EmbedderAuthenticationError` when the key is
        refused, else :class:`EmbeddingError`).
        """
        if not texts:
            return
        dimension = self.dimension
        inputs = [piece for i, text in enumerate(texts) for piece in self._pieces(i, text)]
        state = [_Text(0) for _ in texts]
        for piece in inputs:
            state[piece.owner].pieces += 1
        batches = self._batches(inputs)
        workers = min(self.options.max_concurrency, len(batches))
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="deckhand-embed")
        try:
            pending: set[Future[np.ndarray]] = set()
            owners: dict[Future[np.ndarray], _Batch] = {}
            queue = iter(batches)
            for batch in queue:
                future = pool.submit(self._send, batch.inputs)
                pending.add(future)
                owners[future] = batch
                if len(pending) >= workers:
                    break
            while pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in finished:
                    vectors = future.result()
                    batch = owners.pop(future)
                    ready = self._gather(batch, vectors, state, dimension)
                    if ready:
                        yield ready
                    following = next(queue, None)
                    if following is not None:
                        nxt = pool.submit(self._send, following.inputs)
                        pending.add(nxt)
                        owners[nxt] = following
        finally:
            pool.shutdown(wait=True, cancel_futures=True)

    def _gather(
        self, batch: _Batch, vectors: np.ndarray, state: list[_Text], dimension: int
    ) -> tuple[list[int], Vector] | None:
        """Add a request's vectors to their texts; the texts now complete, with their unit vectors."""
        complete: list[int] = []
        for piece, vector in zip(batch.inputs, vectors, strict=True):
            text = state[piece.owner]
            weighted = vector * piece.weight
            text.total = weighted if text.total is None else text.total + weighted
            text.done += 1
            if text.done == text.pieces:
                complete.append(piece.owner)
        if not complete:
            return None
        rows = np.zeros((len(complete), dimension), dtype=np.float32)
        for row, owner in enumerate(complete):
            total = state[owner].total
            assert total is not None
            norm = float(np.linalg.norm(total))
            rows[row] = total / norm if norm > 0 else total
            state[owner].total = None  # free it
        return complete, rows

    def _pieces(self, owner: int, text: str) -> list[_Input]:
        """``text`` as one input, or several when it is over the input limit (``long_inputs``)."""
        text = text if text.strip() else " "  # the API refuses empty inputs
        limit = self.max_tokens
        if len(text) <= limit:  # a token covers at least one character: no need to count
            return [_Input(owner, text, len(text))]
        spans = self.tokenizer.token_spans(text)
        if len(spans) <= limit:
            return [_Input(owner, text, len(spans))]
        if self.options.long_inputs == "truncate":
            return [_Input(owner, text[: spans[limit - 1][1]], limit)]
        pieces = []
        for start in range(0, len(spans), limit):
            window = spans[start : start + limit]
            begin = 0 if start == 0 else window[0][0]
            end = len(text) if start + limit >= len(spans) else window[-1][1]
            pieces.append(_Input(owner, text[begin:end], len(window), len(window) / len(spans)))
        return pieces

    def _batches(self, inputs: list[_Input]) -> list[_Batch]:
        """``inputs`` packed in order into requests of at most ``batch_size`` inputs and ``max_batch_tokens``."""
        batches: list[_Batch] = []
        current = _Batch()
        for piece in inputs:
            full = len(current.inputs) >= self.options.batch_size
            if current.inputs and (full or current.tokens + piece.tokens > self.options.max_batch_tokens):
                batches.append(current)
                current = _Batch()
            current.inputs.append(piece)
            current.tokens += piece.tokens
        if current.inputs:
            batches.append(current)
        return batches

    # -- one request -------------------------------------------------------------------------

    def _send(self, inputs: list[_Input], check: bool = True) -> np.ndarray:
        """One request (retried by the client), as an ``(n, dimension)`` array; errors raised as deckhand's."""
        client = self.client
        extra: dict[str, Any] = dict(client.request_options)
        if self.shortened:
            extra["dimensions"] = self.options.dimensions
        texts = [piece.text for piece in inputs]

        def request() -> np.ndarray:
            response = client.sync.embeddings.create(model=self.model, input=texts, encoding_format="float", **extra)
            return self._parse(response, len(texts), check)

        try:
            return client.call(request)
        except RemoteCallError as exc:
            where = f"{self.model_id} at {self.options.endpoint}"
            if exc.auth:
                raise EmbedderAuthenticationError(
                    f"embedder {self.provider!r} ({where}): {exc}; check {self._key_source()}"
                ) from None
            raise EmbeddingError(f"embedder {self.provider!r} ({where}): {exc}") from None

    def _key_source(self) -> str:
        options = self.options
        if options.api_key is not None:
            return "the api_key option"
        if options.azure_ad_token_env:
            return f"the token in ${options.azure_ad_token_env}"
        if options.azure_identity:
            return "the Entra ID identity (azure_identity)"
        return f"${options.api_key_env}" if options.api_key_env else "the server's authentication settings"

    def _parse(self, response: Any, count: int, check: bool) -> np.ndarray:
        try:
            data = sorted(response.data, key=lambda item: item.index)
            rows = [item.embedding for item in data]
            exact = np.asarray(rows, dtype=np.float64)  # float64 first: 1e39 must not turn into inf unseen
        except (AttributeError, TypeError, ValueError) as exc:
            raise MalformedResponse(f"no data[].embedding lists ({type(exc).__name__})") from None
        if len(rows) != count or exact.ndim != 2 or not exact.shape[1]:
            raise MalformedResponse(f"{len(rows)} embeddings for {count} inputs")
        fault = degenerate_row(exact)
        if fault is not None:  # stored, it would score 0 (or NaN) against every query
            raise MalformedResponse(f"embedding {fault[0] + 1} of {count} has {fault[1]}")
        vectors = exact.astype(np.float32)
        expected = self._dimension
        if check and expected is not None and vectors.shape[1] != expected:
            raise RemoteCallError(
                f"the service returned {vectors.shape[1]}-dimensional vectors, expected {expected}; "
                "set dimensions: to the length the model returns"
            )
        usage = getattr(response, "usage", None)
        tokens = getattr(usage, "total_tokens", None) or getattr(usage, "prompt_tokens", None)
        if isinstance(tokens, int):
            self.client.add_tokens(tokens)
        return vectors
