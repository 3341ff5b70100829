"""``python -m app.training.build_vocabulary RECIPE.toml [...] [--data DIR] -o FILE``: a model's compact
vocabulary list (``app.ml.vocabulary``) from the training sources its recipes name."""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

from app.ml.vocabulary import build_vocabulary


def _training_words(recipes: list[Path], data_root: Path | None) -> tuple[list[str], list[str]]:
    """Every word of the recipes' training sources (their train parts; synthesised speech reads
    text of the other sources) and the names of the sources read."""
    from app.training.config import TrainConfig
    from app.training.sampling import load_source

    words: list[str] = []
    names: list[str] = []
    for recipe in recipes:
        config = TrainConfig.load(recipe, {"data_root": data_root} if data_root else None)
        for spec in config.sources:
            if spec["kind"] == "speech" or spec["name"] in names:
                continue
            documents = load_source(spec, config.data_root, "train")
            words += [word for document in documents for word in document.words]
            if documents:
                names.append(spec["name"])
    return words, names


def main(argv: list[str] | None = None) -> int:
    from tokenizers import Tokenizer

    from app.ml.base_encoder import base_encoder_dir

    parser = argparse.ArgumentParser(
        prog="python -m app.training.build_vocabulary", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "recipes", nargs="+", type=Path, help="training recipes whose sources the model learnt from"
    )
    parser.add_argument("--data", type=Path, help="the data folder (default: each recipe's data_root)")
    parser.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args(argv)
    tokenizer = Tokenizer.from_file(str(base_encoder_dir() / "tokenizer.json"))
    pieces = [tokenizer.id_to_token(i) or "" for i in range(tokenizer.get_vocab_size())]
    words, names = _training_words(args.recipes, args.data)
    kept = build_vocabulary(tokenizer, pieces, words)
    header = [
        f"# The {len(kept):,} of the base encoder's {len(pieces):,} pieces that this model keeps: those",
        f"# the {len(words):,} words of its {len(names)} training sources are cut into, plus the",
        "# pieces written in Latin, Greek or Cyrillic letters, digits, punctuation and symbols.",
        *textwrap.wrap(", ".join(names), 96, initial_indent="# Sources: ", subsequent_indent="#   "),
        "# Made by: python -m app.training.build_vocabulary "
        + " ".join(str(r) for r in args.recipes)
        + f" -o {args.output}",
    ]
    args.output.write_text("\n".join(header + [str(i) for i in kept]) + "\n", encoding="utf-8")
    print(f"{args.output}: {len(kept)} pieces", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
