"""Auto-build: the rule (``hqltui.core.autobuild``), the producer's bound
(``--changed-at-most``) and the ``[semantics] auto_build`` key."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from hqltui.core.autobuild import CARD_LIMIT, SETTLE, decide
from producer.build import BuildError, BuildOptions, build, resolve_spec
from producer.cli import main as producer_main
from producer.config import load_producer_config
from producer.embedders import identity
from tests.helpers.builds import Counting, make_vault, run


@dataclass
class Summary:
    state: str = "ok"
    stale: int = 0
    missing: int = 0
    orphan: int = 0


def ready(**kw):
    """``decide`` for an edit seen long enough ago, auto-build on, nothing running."""
    args = dict(enabled=True, pending=True, paused=False, running=False, config_error=None,
                summary=Summary(stale=1), refusal=None, quiet_for=10.0)
    return decide(**{**args, **kw})


# ------------------------------------------------------------------------ the rule


def test_a_stale_missing_or_orphan_card_after_the_quiet_time_builds():
    for summary in (Summary(stale=1), Summary(missing=2), Summary(orphan=1)):
        assert ready(summary=summary).action == "build"


def test_before_the_quiet_time_it_waits_for_the_rest_of_it():
    decision = ready(quiet_for=SETTLE / 5)
    assert decision.action == "wait" and decision.delay == pytest.approx(SETTLE * 4 / 5)


def test_a_running_build_makes_the_edit_wait_for_the_next_one():
    decision = ready(running=True)
    assert (decision.action, decision.delay) == ("wait", 0.0)


def test_nothing_is_built_without_an_edit_when_off_or_with_nothing_changed():
    assert ready(pending=False).action == "idle"  # stale at start-up: F7's, not ours
    assert ready(enabled=False) == ready(enabled=False, summary=Summary(stale=5))
    assert ready(enabled=False).reason == "auto-build is off"
    assert ready(summary=Summary()).action == "idle"


def test_a_failed_build_pauses_it_without_a_retry():
    decision = ready(paused=True)
    assert decision.action == "idle" and "failed" in decision.reason


def test_a_refused_config_stands():
    decision = ready(config_error="hql.toml: [semantics] unknown key `x`")
    assert decision.action == "refuse"
    assert decision.reason == "hql.toml is refused: hql.toml: [semantics] unknown key `x`"


@pytest.mark.parametrize("refusal", [
    "the index `birds/.hql/index.sqlite` is locked by another process",
    "the index was built for `other` and this vault is `birds`: rebuild it for this vault",
    "the index `birds/.hql/index.sqlite` cannot be read (it is not an SQLite file)",
    "index schema 9 is newer than this hql-tui reads",
])
def test_a_refused_index_stands_with_its_own_words(refusal):
    decision = ready(summary=Summary(state="refused"), refusal=refusal)
    assert (decision.action, decision.reason) == ("refuse", refusal)


def test_no_index_configured_is_refused_not_configured():
    decision = ready(summary=Summary(state="none"), refusal="semantic search needs an index")
    assert decision == ready(summary=Summary(state="none"),
                             refusal="semantic search needs an index")
    assert decision.action == "refuse"


def test_more_changed_cards_than_the_limit_are_left_for_the_user():
    assert ready(summary=Summary(stale=CARD_LIMIT)).action == "build"
    decision = ready(summary=Summary(stale=CARD_LIMIT, missing=1))
    assert decision.action == "refuse"
    assert decision.reason == (f"{CARD_LIMIT + 1} cards changed, more than the {CARD_LIMIT} "
                               "an automatic build embeds")


def test_an_index_still_opening_waits():
    assert ready(summary=Summary(state="opening")).action == "wait"
    assert ready(summary=None).action == "wait"


# ------------------------------------------------- the producer's --changed-at-most


@pytest.fixture
def built(tmp_path: Path) -> tuple[Path, Path]:
    vault = make_vault(tmp_path / "v")
    out = tmp_path / "i.sqlite"
    run(vault, out)
    return vault, out


def refused(vault: Path, out: Path, **kw) -> str:
    """The bound's refusal: nothing embedded (no model opened), the index untouched."""
    before = out.read_bytes() if out.exists() else None
    embedder = Counting(**kw.pop("embedder", {}))
    with pytest.raises(BuildError) as caught:
        run(vault, out, embedder, **kw)
    assert embedder.texts == []
    assert (out.read_bytes() if out.exists() else None) == before
    return str(caught.value)


def test_the_bound_embeds_the_changed_cards(built):
    vault, out = built
    (vault / "card1.md").write_text("---\ntitle: Card 1\n---\n# Card 1\n\nNew body.\n")
    (vault / "card2.md").unlink()
    embedder = Counting()
    result = run(vault, out, embedder, changed_at_most=1)
    assert (result.embedded, result.removed, len(embedder.texts)) == (1, 1, 1)


def test_the_bound_refuses_a_first_build(tmp_path):
    vault = make_vault(tmp_path / "v")
    message = refused(vault, tmp_path / "i.sqlite", changed_at_most=5)
    assert message == "there is no index yet: a first build embeds every card"


def test_the_bound_refuses_a_new_model_or_revision(built):
    vault, out = built
    message = refused(vault, out, changed_at_most=5, revision="r2", embedder={"revision": "r2"})
    assert message == ("the index holds vectors of fake-embed at r1; a build with this "
                       "embedder would embed every card again")


def test_the_bound_refuses_a_new_passage_recipe(tmp_path):
    """Passages need the local model's tokenizer: the index is written under the local
    model's identity by a counting stand-in, and the bound refuses before any model opens."""
    vault = make_vault(tmp_path / "v")
    out = tmp_path / "i.sqlite"
    spec = resolve_spec(BuildOptions(vault=str(vault)), load_producer_config(vault))
    model_id, revision, dims = identity(spec)
    stand_in = Counting(model_id, revision, dims or 384)
    build(BuildOptions(vault=str(vault), out=str(out)), [].append,
          embedder_factory=lambda _spec: stand_in)
    before = out.read_bytes()

    def no_model(_spec):
        raise AssertionError("the bound must refuse before a model opens")

    with pytest.raises(BuildError) as caught:
        build(BuildOptions(vault=str(vault), out=str(out), passages=True, changed_at_most=5),
              [].append, embedder_factory=no_model)
    assert str(caught.value) == ("the passage recipe changed: every card's passages would be "
                                 "embedded again")
    assert out.read_bytes() == before


def test_the_bound_refuses_a_branch_switch(built):
    vault, out = built
    for i in range(3):
        (vault / f"card{i}.md").write_text(f"# Card {i}\n\nOther branch {i}.\n")
    message = refused(vault, out, changed_at_most=2)
    assert message == "3 cards changed, more than the 2 an automatic build embeds"


def test_the_bound_refuses_re_embedding_an_unchanged_card(built):
    vault, out = built
    with sqlite3.connect(out) as conn:  # a stored vector no longer usable: not an edit
        conn.execute("UPDATE card SET embedding = x'00' WHERE name = 'card3'")
    message = refused(vault, out, changed_at_most=5)
    assert message == "1 unchanged cards would be embedded again"


def test_the_cli_flag_refuses_in_one_line(tmp_path, capsys):
    vault = make_vault(tmp_path / "v")
    code = producer_main(["build", "--vault", str(vault), "--out", str(tmp_path / "i.sqlite"),
                          "--changed-at-most", "3", "--progress", "jsonl"])
    out = capsys.readouterr()
    assert code != 0 and "Traceback" not in out.err
    assert '"there is no index yet: a first build embeds every card"' in out.out
    assert not (tmp_path / "i.sqlite").exists()


# ----------------------------------------------------------- [semantics] auto_build


def config_of(tmp_path: Path, text: str):
    (tmp_path / "hql.toml").write_text(text, encoding="utf-8")
    return load_producer_config(tmp_path)


def test_auto_build_defaults_to_on_for_local_and_off_for_http(tmp_path):
    assert config_of(tmp_path, "[semantics]\nindex = 'i.sqlite'\n").starts_auto_build is True
    http = ("[semantics]\nindex = 'i.sqlite'\n[semantics.embedder]\nprovider = 'http'\n"
            "endpoint = 'http://127.0.0.1:9/v1/embeddings'\nmodel = 'm'\nrevision = 'r'\n")
    assert config_of(tmp_path, http).starts_auto_build is False
    on = http.replace("index = 'i.sqlite'\n", "index = 'i.sqlite'\nauto_build = true\n")
    assert config_of(tmp_path, on).starts_auto_build is True


def test_auto_build_false_is_kept(tmp_path):
    config = config_of(tmp_path, "[semantics]\nindex = 'i.sqlite'\nauto_build = false\n")
    assert config.starts_auto_build is False and config.errors == {}


def test_auto_build_must_be_true_or_false(tmp_path):
    config = config_of(tmp_path, "[semantics]\nindex = 'i.sqlite'\nauto_build = 'yes'\n")
    assert config.errors["semantics"].endswith("[semantics] `auto_build` must be true or false")
