"""The term counts of one vault snapshot, cached on disk: a warm start skips tokenising.

Tokenising every card is the largest part of building the lexical arms (seconds
on a vault of long pages), and its result depends on nothing but the card
texts, in card order, and the analyser. So each analyser's counts are saved
beside the parse cache (``producer.parse_cache.cache_file``: hashbag's of kind
``terms``, bm25's of kind ``terms-hqltui-bm25-v2``; one file each per vault) under a key
that is the digest of the analyser's name, this format's number and every
card's content hash in order (the hash of the card's whole text). Any edit to
any card's text, a card added, removed or renamed, or a new analyser version,
changes the key: a cache that does not match is never used, the counts are
made again from the texts and the file is replaced. A file that cannot be
read, or whose arrays do not fit together, only costs the time of tokenising.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hqltui.core.lexical import HASHBAG_REVISION, HASHBAG_TOKENS, Analyser, TermCounts
from producer.parse_cache import cache_file, load_entries, save_entries

# Bump when the arrays change meaning: older files are then ignored.
FORMAT = 1
KIND = "terms"


def snapshot_key(hashes: Sequence[str], analyser: Analyser = HASHBAG_TOKENS) -> str:
    """The digest naming one snapshot's texts as ``analyser`` counts them: every content
    hash, in card order."""
    digest = hashlib.sha256(f"hqltui.terms.v{FORMAT}.{HASHBAG_REVISION}\n".encode())
    if analyser is not HASHBAG_TOKENS:  # hashbag's key is the one older files were saved under
        digest.update(f"{analyser.name}\n".encode())
    for content_hash in hashes:
        digest.update(content_hash.encode("ascii", "replace"))
        digest.update(b"\n")
    return digest.hexdigest()


def terms_file(root: Path, directory: Path | None = None,
               analyser: Analyser = HASHBAG_TOKENS) -> Path:
    kind = KIND if analyser is HASHBAG_TOKENS else f"{KIND}-{analyser.name.replace('.', '-')}"
    return cache_file(root, kind, directory)


def load(file: Path, key: str, analyser: Analyser = HASHBAG_TOKENS) -> TermCounts | None:
    """The cached counts when the file holds this snapshot's; else None."""
    entries = load_entries(file, FORMAT)
    if entries.get("key") != key:
        return None
    try:
        vocab_list = entries["vocab"]
        vocab = {term: i for i, term in enumerate(vocab_list)}
        if len(vocab) != len(vocab_list) or not all(isinstance(t, bytes) for t in vocab):
            return None
        return TermCounts.from_arrays(vocab, entries["terms"], entries["tf"], entries["ptr"],
                                      analyser)
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


def term_counts(texts: Sequence[str], hashes: Sequence[str], file: Path | None,
                analyser: Analyser = HASHBAG_TOKENS) -> TermCounts:
    """The snapshot's counts by ``analyser``: from ``file`` when it holds exactly these
    texts', else made from the texts (and saved there). ``file`` None: no cache."""
    if file is None:
        return TermCounts(texts, analyser)
    key = snapshot_key(hashes, analyser)
    cached = load(file, key, analyser)
    if cached is not None and cached.size == len(texts):
        return cached
    counts = TermCounts(texts, analyser)
    save(file, key, counts)
    return counts
