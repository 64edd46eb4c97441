"""Passages: the cutting rule, the chunk table's build and checks, best-passage scoring."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from hqltui.core.int8_codes import (
    CODE_MAX,
    Codes,
    first_stage_error,
    held_codes,
    quantise,
    query_planes,
    second_stage_error,
    two_planes,
)
from hqltui.core.passage_scores import exact_dots, fine_dots
from hqltui.core.ranking import rank
from hqltui.core.session import Session
from producer.embedders.local import packaged_embedder
from producer.index_format import CardRow, ChunkRow, MetaRow, ModelRow, QueryRow, pack
from producer.index_reader import read_index
from producer.index_writer import IndexWriter
from producer.passages import DEFAULT_RECIPE, Recipe, cut_windows, passage_text
from producer.vault import load_vault
from producer.verify import format_inspect, inspect, verify
from tests.helpers.indexed_vaults import unit, write_vault
from tests.helpers.int8_reference import code_dots, query_codes
from tests.helpers.passage_rule import blended
from tests.helpers.passage_vaults import LONG, STAMP, passage_vault, real_build


def words(text: str) -> list[tuple[int, int]]:
    """A whitespace tokenizer's character spans: enough to pin the cutting rule."""
    spans, i = [], 0
    for w in text.split():
        i = text.index(w, i)
        spans.append((i, i + len(w)))
        i += len(w)
    return spans


# ----------------------------------------------------------------- the cutting rule


def test_windows_overlap_and_cover_the_text_without_breaks() -> None:
    text = " ".join(f"w{i}" for i in range(500))
    recipe = Recipe(window=200, overlap=40)
    spans = cut_windows(text, words(text), recipe)
    toks = words(text)
    assert spans[0][0] == 0 and spans[-1][1] == len(text)
    starts = [next(i for i, t in enumerate(toks) if t[0] >= a) for a, _ in spans]
    assert starts == [0, 160, 320]  # each window starts `overlap` tokens before the last end
    assert all(text[a:b].split()[0].startswith("w") for a, b in spans)


def test_a_heading_break_ends_a_window_and_the_next_starts_there() -> None:
    body = " ".join(f"a{i}" for i in range(150)) + "\n\n# Options\n\n" + " ".join(
        f"b{i}" for i in range(150)
    )
    spans = cut_windows(body, words(body), Recipe(window=200, overlap=40))
    assert len(spans) == 2
    assert body[spans[1][0] :].startswith("# Options")  # no overlap across a new section
    assert body[spans[0][0] : spans[0][1]].endswith("a149")


def test_a_blank_line_is_the_second_choice_and_the_cap_holds() -> None:
    paragraphs = "\n\n".join(" ".join(f"p{j}x{i}" for i in range(120)) for j in range(100))
    spans = cut_windows(paragraphs, words(paragraphs), Recipe(window=200, overlap=40,
                                                              max_per_card=7))
    assert len(spans) == 7
    assert all(paragraphs[a:b].split()[0].endswith("x0") for a, b in spans[1:])


RECIPE_1 = Recipe(window=200, overlap=40)
TAIL = Recipe(window=200, overlap=40, min_tail=100)  # a variant measured, not shipped


def test_a_short_tail_starts_earlier_so_it_holds_a_whole_window() -> None:
    """The measured ``min_tail`` variant: a last window of 60 tokens holds the text's last
    200 instead; recipe 1 keeps the 60 alone."""
    text = " ".join(f"w{i}" for i in range(380))
    toks = words(text)
    new = cut_windows(text, toks, TAIL)
    old = cut_windows(text, toks, RECIPE_1)
    assert new[:2] == old[:2]
    assert text[old[-1][0]:old[-1][1]].split() == [f"w{i}" for i in range(320, 380)]
    assert text[new[-1][0]:new[-1][1]].split() == [f"w{i}" for i in range(180, 380)]


def test_a_short_last_section_is_cut_with_the_text_before_it() -> None:
    """With ``min_tail`` the `See also` list after a heading break is not a passage of
    its own; its digest differs from recipe 1's, which is unchanged."""
    names = ", ".join(f"n{i}(1)" for i in range(20))
    body = " ".join(f"a{i}" for i in range(350)) + "\n\n## See also\n\n" + names
    old = cut_windows(body, words(body), RECIPE_1)
    new = cut_windows(body, words(body), TAIL)
    assert body[old[-1][0]:].startswith("## See also")  # 23 tokens after the heading break
    assert len(new) == len(old) and new[:-1] == old[:-1]
    assert body[new[-1][0]:new[-1][1]].endswith("n19(1)")
    assert "a349" in body[new[-1][0]:new[-1][1]] and len(body[new[-1][0]:].split()) == 200
    assert TAIL.digest != DEFAULT_RECIPE.digest == RECIPE_1.digest
    assert DEFAULT_RECIPE.digest == (  # recipe 1's, as every index with passages holds it
        "sha256:cb10d58a3c0aceda6bcaf408a28015bbe024d1682e55726efb9f832647d0ade7")


def test_a_short_text_is_one_passage_and_the_title_prefixes_the_others() -> None:
    assert cut_windows("Owl hunts", words("Owl hunts")) == [(0, 9)]
    text = "Owl " + "x " * 300
    assert passage_text(text, "Owl", (0, 10)) == text[:10]
    assert passage_text(text, "Owl", (10, 20)) == "Owl " + text[10:20]
    assert DEFAULT_RECIPE.digest != Recipe(window=100).digest


# ----------------------------------------------------------------- the real build

@pytest.fixture(scope="module")
def minilm():
    return packaged_embedder()


@pytest.fixture
def built(tmp_path: Path, minilm) -> Path:
    return passage_vault(tmp_path / "v", minilm, ["file descriptor limit"])


def index_of(root: Path) -> Path:
    return root / ".hql/index.sqlite"


def test_the_chunk_table_covers_every_card_inside_its_text(built: Path) -> None:
    contents = read_index(index_of(built))
    vault = load_vault(built)
    assert contents.recipe is not None and contents.recipe.known
    per_card: dict[str, list[ChunkRow]] = {}
    for row in contents.chunks:
        per_card.setdefault(row.card, []).append(row)
    assert sorted(per_card) == ["heron", "owl", "shell"]
    assert len(per_card["shell"]) > 3 and len(per_card["owl"]) == 1
    text = vault.by_name["shell"].text
    for row in per_card["shell"]:
        assert 0 <= row.start < row.end <= len(text)
    assert per_card["shell"][-1].end == len(text)
    # a card that is one passage stores its card vector as that passage
    owl = next(c for c in contents.cards if c.name == "owl")
    assert per_card["owl"][0].embedding == owl.embedding
    report = verify(built, index_of(built))
    assert report.clean and report.passages == len(contents.chunks)
    info = inspect(index_of(built))
    assert info["passages"]["per_card_max"] == len(per_card["shell"])  # type: ignore[index]
    assert "window 200 tokens, overlap 40" in format_inspect(info)


def test_the_four_tables_are_unchanged_by_passages(built: Path, tmp_path: Path, minilm) -> None:
    plain = write_vault(tmp_path / "plain", {"owl": "A bird that hunts after dark."})
    real_build(plain, minilm)

    def tables(path: Path) -> dict[str, str]:
        with sqlite3.connect(path) as conn:
            return dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type='table'"))

    with_passages, without = tables(index_of(built)), tables(index_of(plain))
    assert set(without) == {"model", "index_meta", "card", "query"}
    assert set(with_passages) == set(without) | {"chunk", "chunk_recipe"}
    assert {k: with_passages[k] for k in without} == without


def test_an_edit_re_embeds_only_that_cards_passages(built: Path, minilm) -> None:
    before = read_index(index_of(built))
    (built / "heron.hmd").write_text("# heron\n\nA bird that stands still in reeds.\n")
    result = real_build(built, minilm)  # no flag: the index's passages are kept up
    assert (result.embedded, result.passages_embedded) == (1, 0)  # one passage = its card vector
    after = read_index(index_of(built))
    kept = [r for r in before.chunks if r.card != "heron"]
    assert [r for r in after.chunks if r.card != "heron"] == kept  # byte for byte
    assert result.passages_reused == len(kept)
    unchanged = real_build(built, minilm)
    assert unchanged.up_to_date and unchanged.passages == len(after.chunks)
    text = LONG.replace("ulimit builtin", "limit builtin")
    (built / "shell.hmd").write_text(f"# shell\n\n{text}\n")
    again = real_build(built, minilm)
    shell = [r for r in read_index(index_of(built)).chunks if r.card == "shell"]
    assert again.passages_embedded == len(shell) and again.embedded == 1


def test_no_passages_drops_them_and_the_card_vectors_stay(built: Path, minilm) -> None:
    before = read_index(index_of(built))
    result = real_build(built, minilm, passages=False)
    after = read_index(index_of(built))
    assert after.recipe is None and after.chunks == []
    assert after.cards == before.cards and result.embedded == 0


def test_the_arm_scores_by_best_passage_and_says_where(built: Path, tmp_path: Path) -> None:
    session = Session.load(built, cache_dir=tmp_path / "cache")
    ranking = session.rank("file descriptor limit", "semantic", limit=3)
    assert ranking.ok and ranking.names()[0] == "shell"
    hit = ranking.hits[0]
    assert hit.passage is not None and hit.passage.ordinal and hit.passage.ordinal > 0
    text = session.card("shell").text
    assert "ulimit" in text[hit.passage.start : hit.passage.end]
    retrieval = ranking.retrieval
    assert retrieval is not None and retrieval.passages is not None
    assert retrieval.passages["window"] == 200
    assert retrieval.passages["digest"] == DEFAULT_RECIPE.digest
    card_level = session.card_level().rank("file descriptor limit", "semantic", limit=3)
    assert card_level.retrieval is not None and card_level.retrieval.passages is None
    assert all(h.passage is None for h in card_level.hits)
    shell_card = card_level.hit("shell")
    assert shell_card is None or shell_card.score < hit.score
    hybrid = session.query("file descriptor limit", limit=3).hybrid
    assert hybrid.hit("shell") is not None and hybrid.hit("shell").passage == hit.passage


def test_an_index_without_passages_reads_as_before() -> None:
    session = Session.load(Path("fixtures/birds"))
    assert session.index is not None and session.index.passages is None
    ranking = session.rank("night hunting birds", "semantic", limit=3)
    assert ranking.retrieval is not None and "passages" not in ranking.retrieval.to_json()
    assert all("passage" not in h.to_json() for h in ranking.hits)


# ----------------------------------------------------------------- int8 first pass, float32 cut

DIMS = 64


def near_tie_index(root: Path, n_cards: int = 60, per_card: int = 7) -> np.ndarray:
    """Cards whose passages score within 1e-5 of each other against one stored query:
    far closer than int8 can tell apart. Returns the full float32 passage matrix."""
    rng = np.random.default_rng(7)
    q = unit(rng.standard_normal(DIMS))

    def at(score: float) -> np.ndarray:
        u = rng.standard_normal(DIMS)
        u -= (u @ q) * q
        u /= np.linalg.norm(u)
        return unit(score * q.astype(np.float64) + np.sqrt(1 - score**2) * u)

    def passage(i: int, o: int) -> np.ndarray:
        return at(0.5 + rng.integers(0, 40) * 1e-6 + (0.1 if i % 10 == 0 else 0.0))

    return write_index(root, q, lambda i: at(0.2), passage, n_cards, per_card)


def write_index(root: Path, q: np.ndarray, card_vector, passage, n_cards: int,  # noqa: ANN001
                per_card: int) -> np.ndarray:
    """A vault of ``n_cards`` cards and an index of the given vectors (stored query "q")."""
    write_vault(root, {f"c{i:03d}": f"card {i}" for i in range(n_cards)})
    vault = load_vault(root)
    writer = IndexWriter(index_of(root), ModelRow("test/model", "rev-1", q.size),
                         MetaRow(vault=root.name, built_at=STAMP), DEFAULT_RECIPE)
    rows = []
    with writer:
        for i, card in enumerate(vault.cards):
            writer.add_cards([CardRow(card.name, card.path, card.content_hash,
                                      pack(card_vector(i)))])
            chunks = []
            for o in range(per_card):
                v = passage(i, o)
                rows.append(v)
                chunks.append(ChunkRow(card.name, o, 0, 1, pack(v)))
            writer.add_chunks(chunks)
        writer.add_queries([QueryRow("q", pack(q))])
        writer.commit()
    return np.asarray(rows)


def assert_window_is_float32(session: Session, full: np.ndarray) -> tuple[list, np.ndarray]:
    """The window's ranking, scores and answering passages are the float32 ones, bit for
    bit. Returns the float32 ranking's cards and the card vectors' exact scores."""
    assert session.index is not None and session.index.passages is not None
    assert session.index.passages.held == "int8"
    window = session.search.window
    got = session.rank("q", "semantic", limit=window)
    q64 = np.frombuffer(session.index.queries["q"], "<f4").astype(np.float64)
    per_card = exact_dots(full, q64).reshape(len(session.names), -1)
    cards = exact_dots(session.index.matrix, q64)
    ruled = [blended(cards[i], enumerate(per_card[i])) for i in range(cards.size)]
    want, _ = rank(np.array([r[0] for r in ruled]), session.names, window)
    assert [(h.card, h.score) for h in got.hits] == [(h.card, h.score) for h in want]
    for h in got.hits:  # the answering passage is the float32 best one
        _, won = ruled[session.names.index(h.card)]
        assert h.passage is not None
        assert h.passage.ordinal == (None if won < 0 else won)
    return [h.card for h in want], cards


def int8_ranking(session: Session, full: np.ndarray, cards: np.ndarray) -> list[str]:
    """The window as the int8 codes alone would rank it (what the test must tell apart)."""
    assert session.index is not None
    q32 = np.frombuffer(session.index.queries["q"], "<f4")
    codes, scale, _ = query_codes(q32)
    held = code_dots(held_codes(full.astype(np.float32)), codes, scale)
    card_held = code_dots(held_codes(session.index.matrix), codes, scale)
    per_card = held.reshape(len(session.names), -1)
    approx = np.array([blended(card_held[i], enumerate(per_card[i]))[0]
                       for i in range(card_held.size)])
    rough, _ = rank(approx, session.names, session.search.window)
    return [h.card for h in rough]


def test_int8_held_passages_rank_bit_for_bit_as_float32(tmp_path: Path) -> None:
    root = tmp_path / "ties"
    full = near_tie_index(root)
    session = Session.load(root, cache_dir=tmp_path / "cache")
    want, cards = assert_window_is_float32(session, full)
    assert int8_ranking(session, full, cards) != want  # the test can fail


def half_steps(rng: np.random.Generator, q: np.ndarray, n: int, aligned: np.ndarray) -> np.ndarray:
    """Unit rows each of whose components lies just off half a step of its int8 code, on
    the side that makes the rounding error point along ``q`` (``aligned`` +1) or against it
    (-1): every component's error is at its largest and all add up in the product."""
    d = q.size
    base = rng.integers(-100, 100, size=(n, d)).astype(np.float64)
    base[:, 0] = 127.0  # the peak fixes the step: row = step · (codes + error)
    side = np.sign(q.astype(np.float64))[None, :] * aligned[:, None]
    rows = base + 0.5 - 0.02 * side  # rint goes down where side > 0: error +0.48 step
    rows[:, 0] = 127.0
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def test_the_first_pass_stays_within_its_bound_where_rounding_is_worst() -> None:
    rng = np.random.default_rng(11)
    d = 384
    # equal magnitudes: |q|₁ = √d·|q|₂, so rounding errors aligned with q reach the
    # Cauchy–Schwarz bound itself; one component off keeps the query's own codes inexact
    q = np.where(rng.random(d) < 0.5, -1.0, 1.0)
    q[1] *= 1.0001
    q = unit(q)
    aligned = np.where(np.arange(400) % 2 == 0, 1.0, -1.0)
    rows = np.vstack([half_steps(rng, q, 400, aligned),
                      unit(np.ones(d))[None, :],  # every code 127: the kernel's largest sum
                      unit(-np.ones(d))[None, :]])
    held = held_codes(rows)
    codes, scale, q_error = query_codes(q)
    assert q_error > 0
    approx = code_dots(held, codes, scale)
    exact = exact_dots(rows, q.astype(np.float64))
    bound = first_stage_error(q, q_error, held)
    off = np.abs(approx - exact)
    assert np.all(off <= bound)
    assert off.max() > 0.9 * bound  # the rows do reach it: the bound is not loose here
    assert np.sign(approx[:400] - exact[:400]).tolist() == (-aligned).tolist()
    ones = held_codes(unit(np.ones(d))[None, :])
    assert code_dots(ones, ones.codes[0], 1.0)[0] == 127 * 127 * d * float(ones.scale[0])
    # the second plane: within its own bound, about a hundredth of the first
    c, s, e, n, c2, s2, e2, n2 = two_planes(rows)
    fine = Codes(c, s, float(e.max()), float(n.max()), c2, s2, float(e2.max()), float(n2.max()))
    planes = query_planes(q)
    closer = np.abs(fine_dots(fine, np.arange(rows.shape[0]), planes) - exact)
    assert np.all(closer <= second_stage_error(planes, fine))
    assert second_stage_error(planes, fine) < bound / 50


def test_near_ties_the_int8_pass_inverts_rank_as_float32(tmp_path: Path) -> None:
    """The worst case for the cut: the window's cards (by float32) are passages whose int8
    rounding errors all point with the query, so the first pass scores them nearly the
    whole bound low; just below them, within a fraction of the bound, lie passages whose
    errors point against it, scored nearly the bound high. The int8 order is inverted
    across the cut; only a bound that holds (and is doubled at the cut) finds the window.
    Each card holds the same row twice (and its card vector scores far lower), so its
    best passage is that row, with that rounding error."""
    rng = np.random.default_rng(5)
    q = np.where(rng.random(DIMS) < 0.5, -1.0, 1.0)
    q[1] *= 1.0001
    q = unit(q)
    pool = 40_000
    aligned = np.where(np.arange(pool) % 2 == 0, 1.0, -1.0)
    rows = half_steps(rng, q, pool, aligned)
    exact = exact_dots(rows, q.astype(np.float64))
    low, band = 0.1, 0.002  # the bound is about 0.008 here
    inside = np.flatnonzero((aligned > 0) & (exact >= low + band) & (exact < low + 2 * band))
    below = np.flatnonzero((aligned < 0) & (exact >= low) & (exact < low + band))
    unlikely = np.flatnonzero(exact < -0.2)
    window = 50
    assert inside.size >= window and below.size >= 60 and unlikely.size >= 3 * 110
    chosen = np.r_[inside[:window], below[:60]]
    order = rng.permutation(chosen.size)  # the window's cards spread over the vault
    root = tmp_path / "adversarial"
    full = write_index(root, q, lambda i: rows[unlikely[2 * len(chosen) + i]],
                       lambda i, o: rows[chosen[order[i]]], len(chosen), 2)
    session = Session.load(root, cache_dir=tmp_path / "cache")
    assert session.search.window == window
    want, cards = assert_window_is_float32(session, full)
    assert int8_ranking(session, full, cards) != want  # the test can fail


# ----------------------------------------------------------------- verify and the reader


def edit(path: Path, sql: str, *args: object) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute(sql, args)


def test_verify_names_every_passage_problem(built: Path) -> None:
    index = index_of(built)
    edit(index, "UPDATE chunk SET end_char = 999999 WHERE card = 'shell' AND ordinal = 1")
    edit(index, "UPDATE chunk SET embedding = ? WHERE card = 'shell' AND ordinal = 2",
         pack(np.full(384, 0.5, dtype=np.float32)))
    edit(index, "DELETE FROM chunk WHERE card = 'heron'")
    edit(index, "INSERT INTO chunk VALUES ('gone', 0, 0, 5, ?)", pack(unit(np.ones(384))))
    report = verify(built, index)
    kinds = {(p.kind, p.name) for p in report.problems}
    assert ("passage_offsets", "shell") in kinds
    assert ("passage_not_unit", "shell") in kinds
    assert ("passages_absent", "heron") in kinds
    assert ("passages_orphan", "gone") in kinds
    messages = [p.message for p in report.problems]
    assert "passage 2 of `shell` has a stored vector that is not finite and unit length" in messages


def test_the_reader_warns_as_for_cards_and_refuses_an_unknown_recipe(
    built: Path, tmp_path: Path
) -> None:
    index = index_of(built)
    edit(index, "DELETE FROM chunk WHERE card = 'heron'")
    edit(index, "UPDATE chunk SET embedding = ? WHERE card = 'shell' AND ordinal = 2",
         pack(np.full(384, 0.5, dtype=np.float32)))
    session = Session.load(built, cache_dir=tmp_path / "c1")
    messages = [w.message for w in session.warnings]
    assert "`heron` has no passages in the index, so the semantic arm scores it by its card " \
        "vector alone (rebuild: hql-semantics build)" in messages  # verify's own wording
    assert any(m.startswith("passage 2 of `shell` has a stored vector that is not finite")
               for m in messages)
    assert session.rank("file descriptor limit", "semantic").ok
    edit(index, "UPDATE chunk_recipe SET window = 512")
    refused = Session.load(built, cache_dir=tmp_path / "c2").rank("file descriptor limit",
                                                                  "semantic")
    assert refused.refusal is not None
    assert "passage recipe is not one this tool knows" in refused.refusal.message


# ----------------------------------------------------------------- the commands


def test_query_json_and_eval_carry_the_passages(built: Path, tmp_path: Path, capsys) -> None:
    import json

    from hqltui.cli import main

    code = main(["query", str(built), "file descriptor limit", "--mode", "semantic", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    semantic = data["arms"]["semantic"]
    top = semantic["hits"][0]
    assert top["card"] == "shell" and set(top["passage"]) == {"ordinal", "start", "end"}
    assert top["passage"]["ordinal"] is not None  # a passage beat the card vector: both named
    assert top["passages"] == [{**top["passage"], "weight": 0.8},
                               {"ordinal": None, "start": 0, "end": top["passages"][1]["end"],
                                "weight": 0.2}]
    assert semantic["retrieval"]["passages"]["card_score"].startswith("0.2 × the card vector")
    text = load_vault(built).by_name["shell"].text
    assert "ulimit" in text[top["passage"]["start"] : top["passage"]["end"]]
    assert semantic["retrieval"]["passages"]["digest"] == DEFAULT_RECIPE.digest
    main(["query", str(built), "file descriptor limit", "--mode", "semantic", "--limit", "1"])
    human = capsys.readouterr().out
    assert f"passage {top['passage']['ordinal']} [" in human
    assert "card vector and best of" in human
    queries = tmp_path / "q.toml"
    queries.write_text('[[query]]\ntext = "file descriptor limit"\nrelevant = ["shell"]\n'
                       'kind = "keyword"\n')
    assert main(["eval", str(built), str(queries), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert {"semantic", "semantic[cards]"} <= set(report["overall"])
    assert report["overall"]["semantic"]["hit@1"] == 1.0


def test_int8_codes_are_within_half_a_step_and_a_zero_row_widens_nothing() -> None:
    rng = np.random.default_rng(3)
    rows = np.vstack([unit(rng.standard_normal(DIMS)) for _ in range(4)]
                     + [np.zeros(DIMS)]).astype(np.float32)
    codes, scale, error, length = quantise(rows)
    back = codes.astype(np.float64) * scale[:, None].astype(np.float64)
    assert np.all(np.abs(back - rows) <= 0.5001 * scale[:, None])
    assert np.allclose(error, np.linalg.norm(back - rows, axis=1))
    assert np.allclose(length, np.linalg.norm(back, axis=1))
    assert scale[-1] == 0.0 and error[-1] == 0.0 and np.all(scale[:-1] > 0)
    assert np.all(np.abs(codes[:-1]).max(axis=1) == CODE_MAX)
