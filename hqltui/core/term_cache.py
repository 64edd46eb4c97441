"""The term counts of one vault snapshot, cached on disk: a warm start skips tokenising.

Tokenising every card is the largest part of building the lexical arms (seconds
on a vault of long pages), and its result depends on nothing but the card
texts, in card order, and the tokeniser. So the counts are saved beside the
parse cache (``producer.parse_cache.cache_file``, kind ``terms``: one file per
vault) under a key that is the digest of every card's content hash in order
(the hash of the card's whole text) and of this format's number. Any edit to any
card's text, a card added, removed or renamed, changes the key: a cache that does
not match is never used, the counts are made again from the texts and the file
is replaced. A file that cannot be read, or whose arrays do not fit together,
only costs the time of tokenising.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hqltui.core.lexical import HASHBAG_REVISION, TermCounts
from producer.parse_cache import cache_file, load_entries, save_entries

# Bump when the tokeniser or the arrays change meaning: older files are then ignored.
FORMAT = 1
KIND = "terms"


def snapshot_key(hashes: Sequence[str]) -> str:
    """The digest naming one snapshot's texts: every content hash, in card order."""
    digest = hashlib.sha256(f"hqltui.terms.v{FORMAT}.{HASHBAG_REVISION}\n".encode())
    for content_hash in hashes:
        digest.update(content_hash.encode("ascii", "replace"))
        digest.update(b"\n")
    return digest.hexdigest()


def terms_file(root: Path, directory: Path | None = None) -> Path:
    return cache_file(root, KIND, directory)


def load(file: Path, key: str) -> TermCounts | None:
    """The cached counts when the file holds this snapshot's; else None."""
    entries = load_entries(file, FORMAT)
    if entries.get("key") != key:
        return None
    try:
        vocab_list = entries["vocab"]
        vocab = {term: i for i, term in enumerate(vocab_list)}
        if len(vocab) != len(vocab_list) or not all(isinstance(t, bytes) for t in vocab):
            return None
        return TermCounts.from_arrays(vocab, entries["terms"], entries["tf"], entries["ptr"])
    except (KeyError, TypeError, ValueError):
        return None


def save(file: Path, key: str, counts: TermCounts) -> None:
    """Write the counts under ``key``; a failure only costs speed next time."""
    vocab = [b""] * len(counts.vocab)
    for term, i in counts.vocab.items():
        vocab[i] = term
    small = counts.terms.size == 0 or int(counts.tf.max()) < 2**31 and len(vocab) < 2**31
    kind = np.int32 if small else np.int64
    save_entries(file, FORMAT, {
        "key": key,
        "vocab": vocab,
        "terms": counts.terms.astype(kind),
        "tf": counts.tf.astype(kind),
        "ptr": counts.ptr,
    })


def term_counts(texts: Sequence[str], hashes: Sequence[str], file: Path | None) -> TermCounts:
    """The snapshot's counts: from ``file`` when it holds exactly these texts', else made
    from the texts (and saved there). ``file`` None: no cache."""
    if file is None:
        return TermCounts(texts)
    key = snapshot_key(hashes)
    cached = load(file, key)
    if cached is not None and cached.size == len(texts):
        return cached
    counts = TermCounts(texts)
    save(file, key, counts)
    return counts
