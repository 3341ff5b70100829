"""Commands that make and score models: ``eval``, ``train``, ``calibrate``, ``fit-confidence`` and
``graft``.

They need the training code (a clone of the repository) and the train extra's packages; ``main``
says so in one line when either is missing.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from app.cli.options import Commands, add_precision, checked_language
from app.core.errors import EXIT_OK, UsageError


def add_training_commands(commands: Commands) -> None:
    """Commands on models: eval, train, calibrate, fit-confidence, graft."""
    evaluate = commands.add_parser("eval", help="score the model on punctuated data")
    evaluate.add_argument("data", metavar="DATA", help="a file or folder")
    evaluate.add_argument(
        "--format",
        required=True,
        choices=["iwslt", "rev", "conllu", "xml", "text", "jsonl"],
        help="how DATA is written: IWSLT word/label lines, Rev NLP (Earnings-22), CoNLL-U, IWSLT XML,"
        " punctuated text or JSON lines",
    )
    evaluate.add_argument(
        "--model", metavar="DIR_OR_ID", help="model folder or Hugging Face id (default: the shipped one)"
    )
    evaluate.add_argument(
        "--language", default="en", metavar="CODE", help="language of the data (default en)"
    )
    add_precision(evaluate)
    evaluate.add_argument(
        "--engine", choices=["onnx", "torch"], default="onnx", help="run the ONNX export (default) or torch"
    )
    evaluate.add_argument(
        "--no-timings", action="store_true", help="ignore word timings the data carries (rev)"
    )
    evaluate.add_argument("--json", action="store_true", help="print the scores as JSON")
    evaluate.set_defaults(run=_eval)

    training = commands.add_parser("train", help="train a punctuation model")
    training.add_argument(
        "--config", required=True, metavar="FILE.toml", help="the run's settings and data sources"
    )
    training.add_argument("--data", metavar="DIR", help="folder of the corpora (overrides the config)")
    training.add_argument("--output", metavar="DIR", help="the run's folder (overrides the config)")
    training.add_argument("--resume", action="store_true", help="continue the run from its checkpoint")
    training.add_argument("--restart", action="store_true", help="start over, ignoring a checkpoint")
    training.add_argument(
        "--stop-after",
        type=int,
        metavar="STEPS",
        help="pause at this step (checkpoint written; --resume goes on)",
    )
    training.set_defaults(run=_train)
    calibration = commands.add_parser("calibrate", help="fit a trained model's confidence on its dev data")
    calibration.add_argument("--config", required=True, metavar="FILE.toml", help="the training config")
    calibration.add_argument("--model", required=True, metavar="DIR", help="the trained model folder")
    calibration.add_argument("--data", metavar="DIR", help="folder of the corpora (overrides the config)")
    calibration.add_argument(
        "--dev-words", type=int, metavar="N", help="dev words per source (default: the config's)"
    )
    calibration.set_defaults(run=_calibrate)
    confidence = commands.add_parser(
        "fit-confidence",
        help="fit the suggestions' confidence (models/confidence) on the development readings",
    )
    confidence.add_argument(
        "--readings",
        metavar="FILE.npz",
        help="the development readings (default: the cache `python -m tests.benchmarks.dev_readings` makes)",
    )
    confidence.add_argument(
        "--output", metavar="FILE.json", help="where to write it (default: the shipped confidence.json)"
    )
    confidence.add_argument(
        "--check", action="store_true", help="write nothing; fail unless the refit is the file already there"
    )
    confidence.set_defaults(run=_fit_confidence)
    grafting = commands.add_parser(
        "graft", help="put one trained model's timing branch into another's text model"
    )
    grafting.add_argument("--text", required=True, metavar="DIR", help="the model whose text path is kept")
    grafting.add_argument("--timing-from", required=True, metavar="DIR", help="the model with the branch")
    grafting.add_argument("--output", required=True, metavar="DIR", help="a new folder for the result")
    grafting.set_defaults(run=_graft)


def _eval(args: argparse.Namespace) -> int:
    from app.training.evaluation import evaluate_path

    result = evaluate_path(
        Path(args.data),
        args.format,
        args.model,
        checked_language(args.language),
        quantize=args.int8,
        timings=not args.no_timings,
        engine=args.engine,
    )
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        scores = result["scores"]
        print(f"{result['words']} words, {result['documents']} documents, {result['seconds']} s")
        for name in ("COMMA", "PERIOD", "QUESTION", "overall"):
            row = scores[name]
            print(
                f"{name:>9}  P {row['precision']:5.1f}  R {row['recall']:5.1f}  F1 {row['f1']:5.1f}  n {row['support']}"
            )
        print(f"      SER  {scores['SER']:.1f}")
    return EXIT_OK


def _train(args: argparse.Namespace) -> int:
    from app.training.runs import train_run

    train_run(
        Path(args.config),
        Path(args.data) if args.data else None,
        Path(args.output) if args.output else None,
        resume=args.resume,
        restart=args.restart,
        stop_after=args.stop_after,
    )
    return EXIT_OK


def _calibrate(args: argparse.Namespace) -> int:
    from app.training.runs import calibrate

    result = calibrate(
        Path(args.config), Path(args.model), args.dev_words, Path(args.data) if args.data else None
    )
    print(json.dumps(result, indent=2))
    return EXIT_OK


def _fit_confidence(args: argparse.Namespace) -> int:
    from app.training.confidence_fit import refit

    result = refit(
        Path(args.readings) if args.readings else None,
        Path(args.output) if args.output else None,
        check=args.check,
    )
    print(json.dumps(result, indent=2))
    return EXIT_OK


def _graft(args: argparse.Namespace) -> int:
    from app.training.runs import graft

    output = Path(args.output)
    if output.exists() and any(output.iterdir()):
        raise UsageError(f"{output} exists and is not empty; name a new folder")
    graft(Path(args.text), Path(args.timing_from), output)
    print(f"{output}: {args.text} with the timing branch of {args.timing_from}; calibrate it next")
    return EXIT_OK
