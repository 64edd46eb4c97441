"""How many texts a build of a vault embeds once instead of several times.

``python -m benchmarks.bench_dedupe VAULT [--passages]`` plans a full build of
VAULT (nothing is embedded or written; with ``--passages`` the cards are cut on
the packaged model's tokenizer) and prints the plan's counts as one JSON line:
cards and passages to embed, and how many of them copy an identical text.
"""

from __future__ import annotations

import argparse
import json
import time

from producer.build import CHUNK, vault_identity
from producer.build_execute import LazyEmbedder
from producer.build_options import BuildOptions
from producer.build_plan import Identity, Previous, plan_build
from producer.card_digests import digest_vault
from producer.embedders import EmbedderSpec, identity


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("vault")
    parser.add_argument("--passages", action="store_true")
    args = parser.parse_args()
    started = time.monotonic()
    spec = EmbedderSpec.merge(None, offline=True)
    ident = Identity(*identity(spec))
    options = BuildOptions(vault=args.vault, full=True, passages=args.passages)
    plan = plan_build(
        digest_vault(args.vault),
        Previous(None),
        options,
        ident,
        vault_name=vault_identity(args.vault),
        batch_cards=CHUNK,
        offsets=LazyEmbedder(spec, ident, None, None).offsets,
        warn=lambda message: None,
    )
    cards = len(plan.vault.cards)
    print(
        json.dumps(
            {
                "cards": cards,
                "cards_shared": plan.copies("card"),
                "passages": plan.passages_to_embed if args.passages else None,
                "passages_shared": plan.copies("passage") if args.passages else None,
                "texts_to_embed": plan.total,
                "seconds": round(time.monotonic() - started, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
