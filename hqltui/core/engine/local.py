"""The local side of an engine operation: the vault, its config, its semantic index.

``LocalCards.load(root)`` reads them once; ``LocalCards.from_session(session)``
reuses what the app already holds. ``uploadable()`` refuses a missing, refused,
stale or incomplete index (naming the cards and the build command), because
sync must upload exactly the vectors a fresh build would hold.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hqltui.core.config import AppConfig, load_app_config
from hqltui.core.engine.errors import EngineRefused
from hqltui.core.index_reader import SemanticIndex, build_command, open_index
from hqltui.core.ranking import Refusal
from producer.vault import Vault, load_vault, vault_problem
from producer.wording import listed

if TYPE_CHECKING:  # for annotations only: no import at run time
    from hqltui.core.session import Session

# The columns sync writes, in order (``arrow_rows``): a table with others is not this tool's.
ROW_COLUMNS = ("name", "path", "title", "text", "content_hash", "embedding", "model",
               "revision")


@dataclass
class LocalCards:
    vault: Vault
    config: AppConfig
    index: SemanticIndex | None
    refusal: Refusal | None
    embedders: Any = None  # hqltui.core.semantic.LiveEmbedders, when the app shares its own
    # How a query becomes a vector: (local, text, live) -> hqltui.core.semantic.QueryVector.
    # Given by the caller, so the engine client itself never imports the model.
    embed: Callable[[LocalCards, str, bool], Any] | None = None

    @classmethod
    def load(cls, root: str | Path,
             embed: Callable[[LocalCards, str, bool], Any] | None = None) -> LocalCards:
        problem = vault_problem(root)  # before Path(): Path("") is the current directory
        if problem:
            raise EngineRefused(Refusal(problem, "name a vault directory"))
        root = Path(root)
        vault = load_vault(root)
        config = load_app_config(root)
        opened = open_index(vault, config)
        if isinstance(opened, Refusal):
            return cls(vault, config, None, opened, embed=embed)
        return cls(vault, config, opened, None, embed=embed)

    @classmethod
    def from_session(cls, session: Session) -> LocalCards:
        return cls(session.vault, session.config, session.index, session.index_refusal,
                   session.embedders, embed=session.embed_query)

    @property
    def names(self) -> list[str]:
        return [c.name for c in self.vault.cards]

    def expected_rows(self) -> dict[str, tuple[str, str | None, str | None]]:
        """name -> (content_hash, model, revision) as a fresh sync would write them."""
        model = self.index.model if self.index else None
        revision = self.index.revision if self.index else None
        return {c.name: (c.content_hash, model, revision) for c in self.vault.cards}

    def uploadable(self) -> SemanticIndex:
        """The index, when every vault card has a fresh vector in it; else refuse. A vault
        with no cards is refused first: syncing it would empty the engine table (a vault
        argument pointing at the wrong folder), and an index cannot be built on no rows."""
        if not self.vault.cards:
            raise EngineRefused(Refusal(
                f"{self.vault.root}: the vault has no cards, so there is nothing to sync "
                "(nothing was sent; the engine table is left as it is)",
                "add cards to the vault, or name the vault directory that holds them",
            ))
        if self.index is None:
            assert self.refusal is not None
            raise EngineRefused(Refusal(
                f"sync uploads the local index's vectors, and it cannot be used: "
                f"{self.refusal.message}",
                self.refusal.fix,
            ))
        ix = self.index
        fix = build_command(self.vault, self.config.index)
        if ix.missing_names:
            raise EngineRefused(Refusal(
                f"{len(ix.missing_names)} card(s) have no vector in the local index "
                f"({listed(ix.missing_names)}); build it before syncing",
                fix,
            ))
        if ix.stale_names:
            raise EngineRefused(Refusal(
                f"{len(ix.stale_names)} card(s) changed since the local index was built "
                f"({listed(ix.stale_names)}); build it before syncing",
                fix,
            ))
        return ix

    def arrow_rows(self, names: list[str]) -> Any:
        """The engine rows for ``names`` as an Arrow table (``embedding``: list<float32>)."""
        import numpy as np
        import pyarrow as pa

        ix = self.uploadable()
        position = {c.name: i for i, c in enumerate(self.vault.cards)}
        at = np.asarray([position[n] for n in names], dtype=np.int64)
        cards = [self.vault.cards[i] for i in at.tolist()]
        matrix = np.ascontiguousarray(ix.matrix[at], dtype=np.float32)
        dims = ix.dimensions
        offsets = pa.array(np.arange(0, (len(names) + 1) * dims, dims, dtype=np.int32))
        embedding = pa.ListArray.from_arrays(offsets, pa.array(matrix.reshape(-1)),
                                             type=pa.list_(pa.float32()))
        return pa.table({
            "name": pa.array([c.name for c in cards], pa.string()),
            "path": pa.array([c.path for c in cards], pa.string()),
            "title": pa.array([c.title for c in cards], pa.string()),
            "text": pa.array([c.text for c in cards], pa.string()),
            "content_hash": pa.array([c.content_hash for c in cards], pa.string()),
            "embedding": embedding,
            "model": pa.array([ix.model] * len(cards), pa.string()),
            "revision": pa.array([ix.revision] * len(cards), pa.string()),
        })


def names_table(names: list[str]) -> Any:
    import pyarrow as pa

    return pa.table({"name": pa.array(names, pa.string())})


def parquet_bytes(table: Any) -> bytes:
    import io

    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()
