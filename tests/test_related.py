"""related(card) and link suggestions: what a user reads, on hand-made indexes and birds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hqltui.core.related import LEXICAL_WEIGHT, METHOD, VECTOR_ONLY, Relatedness, link_pairs
from hqltui.core.session import Session
from hqltui.core.suggestions import suggest_links
from tests.helpers.indexed_vaults import MODEL, REVISION, unit, write_test_index, write_vault

BIRDS = Path(__file__).resolve().parent.parent / "fixtures" / "birds"

CARDS = {
    "owl": "nocturnal raptor hunting voles tytonidae [[kestrel]]",
    "kestrel": "daytime raptor hovering over verges",
    "nightjar": "nocturnal bird hunting voles tytonidae",
    "heron": "wading bird spearing fish",
    "gull": "seabird scavenging harbours [[owl]]",
}
VECTORS = {
    "owl": unit([1, 0, 0, 0]),
    "kestrel": unit([0.8, 0.6, 0, 0]),
    "nightjar": unit([0.78, 0, 0.63, 0]),
    "heron": unit([0.1, 0, 0, 1]),
    "gull": unit([0.3, 0.2, 0, 0.9]),
}


def vault(tmp_path: Path, vectors: dict[str, np.ndarray] = VECTORS) -> Path:
    root = write_vault(tmp_path / "v", CARDS)
    write_test_index(root, vectors)
    return root


def load(root: Path) -> Session:
    return Session.load(root, cache_dir=root.parent / "cache")


def test_card_vectors_alone_rank_by_cosine_with_the_index_provenance(tmp_path: Path) -> None:
    session = load(vault(tmp_path))
    answer = Relatedness(session, lexical_weight=0.0).related("owl")
    assert [n.card for n in answer.neighbours] == ["kestrel", "nightjar", "gull", "heron"]
    first = answer.neighbours[0]
    assert first.score == pytest.approx(0.8, abs=1e-6) and first.lexical is None
    p = answer.provenance
    assert (p.method, p.model, p.revision, p.metric, p.vectors) == (
        VECTOR_ONLY, MODEL, REVISION, "cosine", "card")
    assert p.index.endswith(".hql/index.sqlite")


def test_shipped_score_is_the_vector_plus_weighted_lexical_part(tmp_path: Path) -> None:
    session = load(vault(tmp_path))
    answer = Relatedness(session).related("owl")
    assert answer.provenance.method == METHOD and answer.provenance.lexical_weight == LEXICAL_WEIGHT
    for n in answer.neighbours:
        assert n.score == pytest.approx(n.vector + LEXICAL_WEIGHT * n.lexical)
    # kestrel is nearer by vectors (0.80 against 0.78); nightjar shares more rare words.
    assert answer.neighbours[0].vector < next(n for n in answer.neighbours
                                              if n.card == "kestrel").vector
    assert answer.neighbours[0].card == "nightjar"
    assert set(Relatedness(session).why("owl", "nightjar", count=4)) == {
        "nocturnal", "hunting", "voles", "tytonidae"}


def test_links_either_way_are_marked(tmp_path: Path) -> None:
    answer = Relatedness(load(vault(tmp_path))).related("owl")
    linked = {n.card: n.linked for n in answer.neighbours}
    assert linked == {"kestrel": True, "gull": True, "nightjar": False, "heron": False}


def test_relation_cards_count_as_links() -> None:
    session = Session.load(BIRDS)
    pairs = link_pairs(session.vault)
    assert frozenset(("barn-owl", "barn-owl-member-of-tytonidae")) in pairs
    relation = next(r for r in session.vault.relations if r.card == "barn-owl-member-of-tytonidae")
    assert frozenset((relation.source, relation.target)) in pairs


def test_identical_texts_are_listed_apart_not_as_neighbours(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", CARDS)
    (root / "owl-copy.hmd").write_bytes((root / "owl.hmd").read_bytes())
    write_test_index(root, {**VECTORS, "owl-copy": VECTORS["owl"]})
    answer = Relatedness(load(root)).related("owl")
    assert answer.duplicates == ("owl-copy",)
    assert "owl-copy" not in [n.card for n in answer.neighbours]


def test_missing_and_stale_follow_the_semantic_arm(tmp_path: Path) -> None:
    vectors = {k: v for k, v in VECTORS.items() if k != "heron"}
    root = vault(tmp_path, vectors)
    (root / "kestrel.hmd").write_text("# kestrel\n\nedited after the build\n", encoding="utf-8")
    answer = Relatedness(load(root)).related("owl")
    names = [n.card for n in answer.neighbours]
    assert "heron" not in names
    kestrel = next(n for n in answer.neighbours if n.card == "kestrel")
    assert kestrel.status == "stale"
    kinds = {w.kind: w for w in answer.warnings}
    assert kinds["stale"].cards == ("kestrel",) and kinds["absent"].cards == ("heron",)


def test_a_card_without_a_vector_says_so(tmp_path: Path) -> None:
    vectors = {k: v for k, v in VECTORS.items() if k != "heron"}
    answer = Relatedness(load(vault(tmp_path, vectors))).related("heron")
    assert answer.refusal is not None and not answer.neighbours
    assert answer.refusal.message.startswith("`heron` has no vector in the index")
    assert "hql-semantics build" in answer.refusal.fix


def test_no_index_is_the_index_refusal(tmp_path: Path) -> None:
    root = write_vault(tmp_path / "v", CARDS, index=None)
    answer = Relatedness(load(root)).related("owl")
    assert answer.refusal is not None and "[semantics] index" in answer.refusal.message


def test_unknown_card_is_a_key_error(tmp_path: Path) -> None:
    with pytest.raises(KeyError):
        Relatedness(load(vault(tmp_path))).related("nobody")


def test_birds_barn_owl_neighbours_are_owls_and_its_links() -> None:
    session = Session.load(BIRDS)
    answer = Relatedness(session).related("barn-owl", limit=5)
    names = [n.card for n in answer.neighbours]
    assert names[:2] == ["eurasian-eagle-owl", "tawny-owl"]
    assert {n.card for n in answer.neighbours if n.linked} == {
        "barn-owl-member-of-tytonidae", "tytonidae"}
    assert answer.provenance.revision == session.index.revision
    assert answer.to_json()["neighbours"][0]["card"] == "eurasian-eagle-owl"


def test_suggestions_are_unlinked_pairs_once_best_first_with_progress() -> None:
    session = Session.load(BIRDS)
    relatedness = Relatedness(session)
    seen: list[tuple[int, int]] = []
    answer = suggest_links(relatedness, 20, progress=lambda d, t: seen.append((d, t)))
    assert answer.complete and seen[-1][0] == seen[-1][1] == answer.cards
    pairs = [frozenset((p.source, p.target)) for p in answer.pairs]
    assert len(pairs) == 20 == len(set(pairs))
    assert not any(relatedness.linked(p.source, p.target) for p in answer.pairs)
    scores = [p.score for p in answer.pairs]
    assert scores == sorted(scores, reverse=True)
    top = answer.pairs[0]
    assert top.why().startswith(f"vec {top.vector:.3f} + lex {top.lexical:.3f} · ")
    assert top.to_json()["link"] == f"[[{top.target}]]"


def test_large_vaults_suggest_by_card_vectors_and_say_so(tmp_path: Path) -> None:
    relatedness = Relatedness(load(vault(tmp_path)))
    answer = suggest_links(relatedness, 3, full_score_cards=2)
    assert answer.provenance.method == VECTOR_ONLY
    assert all(p.lexical is None and p.score == p.vector for p in answer.pairs)
    pairs = [{p.source, p.target} for p in answer.pairs]
    assert pairs[0] == {"gull", "heron"}  # cosine 0.95
    assert {"owl", "kestrel"} not in pairs  # 0.8, but linked


def test_cancelled_suggestions_stop_and_say_incomplete(tmp_path: Path) -> None:
    answer = suggest_links(Relatedness(load(vault(tmp_path))), cancelled=lambda: True)
    assert not answer.complete and answer.cards == 0 and answer.pairs == ()


def test_one_blas_thread_gives_the_same_suggestions() -> None:
    relatedness = Relatedness(Session.load(BIRDS))
    both = suggest_links(relatedness, 10, full_score_cards=0)
    one = suggest_links(relatedness, 10, full_score_cards=0, blas_threads=1)
    assert [(p.source, p.target) for p in one.pairs] == [(p.source, p.target) for p in both.pairs]
    assert [p.score for p in one.pairs] == pytest.approx([p.score for p in both.pairs], abs=1e-6)
