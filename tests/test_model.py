"""The punctuation model code on a tiny random encoder: shapes, learning, saving, loading, windows."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
from safetensors.torch import load_file

from app.ml.model import batch_tensors
from app.ml.packaging import ModelError, build_model, load_model, save_model
from app.ml.windows import encode_words, make_batch, plan_windows
from app.training.calibrate import expected_calibration_error, fit_bias, fit_temperature, micro_f1
from tests.ml_fixtures import WORDS, predict, tiny_encoder


@pytest.fixture(scope="module")
def encoder_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_encoder(tmp_path_factory.mktemp("tiny-encoder"))


def test_forward_gives_one_row_per_word(encoder_dir: Path) -> None:
    model, tokenizer, config = build_model(str(encoder_dir), lora_rank=4, lora_alpha=8)
    encoded = encode_words(tokenizer, WORDS)
    batch = make_batch(
        [(encoded, 0, len(WORDS)), (encoded, 3, 8)],
        tokenizer.cls_token_id,
        tokenizer.sep_token_id,
        tokenizer.pad_token_id,
    )
    marks, casing = model(**batch_tensors(batch))
    assert marks.shape == (2, len(WORDS), len(config["marks"]))
    assert casing.shape == (2, len(WORDS), 3)
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert any("lora_A" in n for n in trainable)
    assert not any("word_embeddings" in n for n in trainable)  # the big table stays frozen


def test_a_few_steps_learn_the_marks(encoder_dir: Path) -> None:
    torch.manual_seed(1)
    model, tokenizer, _ = build_model(str(encoder_dir), lora_rank=4, lora_alpha=8, layer_dropout=0.0)
    encoded = encode_words(tokenizer, WORDS)
    batch = make_batch(
        [(encoded, 0, len(WORDS))], tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id
    )
    labels = torch.tensor([[1, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 3]])
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-2)
    losses = []
    for _ in range(25):
        marks, _ = model(**batch_tensors(batch))
        loss = torch.nn.functional.cross_entropy(marks.reshape(-1, marks.size(-1)), labels.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0]


def _model_whose_adapters_matter(encoder_dir: Path, seed: int) -> tuple[Any, Any, dict[str, Any]]:
    """A tiny model in eval mode whose LoRA adapters change its output (they start at zero)."""
    torch.manual_seed(seed)
    model, tokenizer, config = build_model(str(encoder_dir), lora_rank=4, lora_alpha=8)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "lora_B" in name:
                parameter.normal_(0, 0.5)
    model.eval()
    return model, tokenizer, config


def test_saved_model_loads_with_the_same_predictions(encoder_dir: Path, tmp_path: Path) -> None:
    model, tokenizer, config = _model_whose_adapters_matter(encoder_dir, seed=2)
    before, _ = predict(model, tokenizer, WORDS, window_tokens=32)
    save_model(model, config, tmp_path / "model")
    loaded, _, _ = load_model(tmp_path / "model")
    after, _ = predict(loaded, tokenizer, WORDS, window_tokens=32)
    assert torch.allclose(before, after, atol=1e-4)
    assert after.shape == (len(WORDS), 6)
    assert torch.allclose(after.sum(dim=-1), torch.ones(len(WORDS)), atol=1e-5)
    quantized, _, _ = load_model(tmp_path / "model", quantize=True)
    fast, _ = predict(quantized, tokenizer, WORDS, window_tokens=32)
    assert fast.shape == after.shape
    assert (fast - after).abs().max() < 0.05  # int8 rounds; it does not change what the model says
    layers = dict(quantized.encoder.named_modules())
    # The feed-forward output projections stay in float32 (outlier inputs); the rest is int8.
    assert type(layers["encoder.layer.0.output.dense"]) is torch.nn.Linear
    assert type(layers["encoder.layer.0.intermediate.dense"]) is not torch.nn.Linear
    assert type(layers["encoder.layer.0.attention.output.dense"]) is not torch.nn.Linear


def test_pickle_only_and_damaged_models_are_refused(encoder_dir: Path, tmp_path: Path) -> None:
    pickled = tmp_path / "pickled"
    pickled.mkdir()
    (pickled / "pytorch_model.bin").write_bytes(b"\x80\x04not really")
    with pytest.raises(ModelError, match="safetensors only"):
        load_model(pickled)
    model, _, config = build_model(str(encoder_dir), lora_rank=4, lora_alpha=8)
    save_model(model, config, tmp_path / "model")
    weights = tmp_path / "model" / "weights.safetensors"
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(ModelError, match="damaged"):
        load_model(tmp_path / "model")
    with pytest.raises(ModelError, match="not a Punctum model"):
        load_model(tmp_path)


def test_long_documents_use_many_windows_and_keep_every_word(encoder_dir: Path) -> None:
    model, tokenizer, _ = build_model(str(encoder_dir), lora_rank=0)
    model.eval()
    words = (WORDS * 200)[:3000]
    marks, casing = predict(model, tokenizer, words, window_tokens=64, batch_size=16)
    assert marks.shape[0] == casing.shape[0] == 3000
    assert not torch.isnan(marks).any()
    assert (marks.sum(dim=-1) > 0.99).all()  # every word got a prediction


def test_mean_merge_averages_every_window_that_holds_a_word(encoder_dir: Path, tmp_path: Path) -> None:
    model, tokenizer, config = _model_whose_adapters_matter(encoder_dir, seed=3)
    words = (WORDS * 4)[:60]
    windows = plan_windows(encode_words(tokenizer, words), 30, 0.5)
    (first_a, stop_a), (first_b, stop_b) = windows[0], windows[1]
    word = stop_a - 1  # at the end of the first window and inside the second
    assert first_b <= word
    # Each window alone is a whole document of one window: the model's view from that window.
    alone_a, _ = predict(model, tokenizer, words[first_a:stop_a], window_tokens=32)
    alone_b, _ = predict(model, tokenizer, words[first_b:stop_b], window_tokens=32)
    expected = torch.softmax(
        (torch.log(alone_a[word - first_a]) + torch.log(alone_b[word - first_b])) / 2, dim=-1
    )
    merged, casing = predict(model, tokenizer, words, window_tokens=32, merge="mean")
    central, _ = predict(model, tokenizer, words, window_tokens=32, merge="central")
    assert torch.allclose(merged[word], expected, atol=1e-4)
    assert not torch.allclose(merged[word], central[word], atol=1e-3)
    assert torch.allclose(merged.sum(dim=-1), torch.ones(len(words)), atol=1e-5)
    assert torch.allclose(casing.sum(dim=-1), torch.ones(len(words)), atol=1e-5)
    # A document that fits one window has nothing to merge.
    short = words[first_a:stop_a]
    assert torch.allclose(
        predict(model, tokenizer, short, window_tokens=32, merge="mean")[0], alone_a, atol=1e-6
    )
    # A model whose settings ask for a merge this Punctum does not know is refused, not guessed at.
    save_model(model, {**config, "window_merge": "vote"}, tmp_path / "model")
    with pytest.raises(ModelError, match="window_merge 'vote'"):
        load_model(tmp_path / "model")


def test_mark_bias_does_not_move_for_a_handful_of_words() -> None:
    # 1,000 commas among 10,000 words, all found but two that fall just short: a comma bias would
    # win those two (0.1 F1 points), too little to tell from the noise of another dev set.
    gold = torch.zeros(10_000, dtype=torch.long)
    gold[:1000] = 1
    logits = torch.zeros(10_000, 6)
    logits[torch.arange(10_000), gold] = 5.0
    logits[:2, 1], logits[:2, 0] = 4.9, 5.0
    log_probabilities = torch.log_softmax(logits, dim=-1)
    assert fit_bias(log_probabilities, gold) == [0.0] * 6
    assert fit_bias(log_probabilities, gold, min_gain=1e-6)[1] > 0  # what chasing every word gives


def test_temperature_fixes_overconfidence() -> None:
    torch.manual_seed(3)
    labels = torch.randint(0, 3, (4000,))
    logits = torch.randn(4000, 3)
    logits[torch.arange(4000), labels] += 1.0  # right about 60% of the time...
    overconfident = torch.log_softmax(logits * 4, dim=-1)  # ...but says 95%
    before = expected_calibration_error(overconfident.exp(), labels)
    temperature = fit_temperature(overconfident, labels)
    after = expected_calibration_error(torch.softmax(overconfident / temperature, dim=-1), labels)
    assert temperature > 2
    assert after < before / 3


def toy_run(output: Path, encoder_dir: Path, **settings: Any) -> Any:
    """A training run on the tiny encoder, small enough for a test, its data beside ``output``."""
    from app.training.config import TrainConfig

    small = {"batch_size": 2, "window_tokens": 48, "lora_rank": 2, "lora_alpha": 4, "warmup_steps": 1}
    return TrainConfig(
        output=output, data_root=output.parent / "data", encoder=str(encoder_dir), **{**small, **settings}
    )


def test_training_checkpoints_and_resumes(encoder_dir: Path, tmp_path: Path) -> None:
    from app.training.train import train

    corpus = tmp_path / "data" / "en"
    corpus.mkdir(parents=True)
    text = "Hello there, how are you? I am fine, thank you. It is a nice day, is it not? Yes. " * 40
    (corpus / "a.txt").write_text(text)
    config = toy_run(
        tmp_path / "run",
        encoder_dir,
        steps=4,
        eval_every=2,
        checkpoint_every=2,
        # A source's own cap on its training words overrides the run's.
        sources=[{"name": "toy", "kind": "text", "path": "en", "language": "en", "max_words": 600}],
    )
    # The dev set comes from a UD-style file; here the same text serves.
    (tmp_path / "data" / "dev.conllu").write_text(
        "".join(f"# text = {s.strip()}.\n\n" for s in text.split(".")[:60])
    )
    config.sources.append({"name": "dev", "kind": "conllu", "path": "dev.conllu", "language": "en"})
    first = train(config, log=lambda _: None)
    assert first["steps"] == 4
    assert 590 <= first["data"]["toy"]["train_words"] <= 600 < len(text.split())
    assert (tmp_path / "run" / "best" / "weights.safetensors").exists()
    config.steps = 6
    second = train(config, log=lambda _: None)
    assert second["steps"] == 6
    assert [e["step"] for e in second["evaluations"]] == [2, 4, 6]
    saved = json.loads((tmp_path / "run" / "training.json").read_text())
    assert saved["steps"] == 6

    # A second stage starts from the first one's best model with its lowest layer left alone.
    stage_one = load_file(str(tmp_path / "run" / "best" / "weights.safetensors"))
    config.output, config.steps = tmp_path / "stage2", 2
    config.init_from, config.frozen_layers = tmp_path / "run" / "best", 1
    train(config, resume=False, log=lambda _: None)
    stage_two = load_file(str(tmp_path / "stage2" / "best" / "weights.safetensors"))
    assert stage_two.keys() == stage_one.keys()
    lowest = [k for k in stage_one if "layer.0." in k and "lora_" in k]
    assert lowest and all(torch.equal(stage_one[k], stage_two[k]) for k in lowest)
    assert any(not torch.equal(stage_one[k], stage_two[k]) for k in stage_one if "layer.1." in k)
    load_model(tmp_path / "stage2" / "best")  # the partly frozen model saves everything it needs


def test_a_stage_whose_encoder_matrices_learn_saves_them_as_adapters_and_resumes(
    encoder_dir: Path, tmp_path: Path
) -> None:
    from app.training.train import train

    corpus = tmp_path / "data" / "en"
    corpus.mkdir(parents=True)
    text = "Hello there, how are you? I am fine, thank you. It is a nice day, is it not? Yes. " * 40
    (corpus / "a.txt").write_text(text)
    sources = [{"name": "toy", "kind": "text", "path": "en", "language": "en", "max_words": 600}]
    adapters = toy_run(tmp_path / "lora", encoder_dir, steps=2, eval_every=2, sources=sources)
    train(adapters, log=lambda _: None)
    start = load_file(str(tmp_path / "lora" / "last" / "weights.safetensors"))

    # The tiny encoder's matrices are at most 64 wide: rank 64 keeps their whole change.
    full = toy_run(
        tmp_path / "full",
        encoder_dir,
        steps=4,
        eval_every=4,
        checkpoint_every=2,
        sources=sources,
        init_from=tmp_path / "lora" / "last",
        full_layers=True,
        frozen_layers=1,
        lr_encoder=1e-2,
        saved_rank=64,
    )
    messages: list[str] = []
    paused = train(full, log=lambda _: None, stop_after_steps=2)
    assert paused["steps"] == 2
    resumed = train(full, log=messages.append)
    assert resumed["steps"] == 4
    assert any("rank 64 keeps 1.0000" in m for m in messages)
    saved = load_file(str(tmp_path / "full" / "last" / "weights.safetensors"))
    settings = json.loads((tmp_path / "full" / "last" / "punctum-model.json").read_text())
    assert settings["lora"]["rank"] == settings["lora"]["alpha"] == 64

    def difference(weights: dict[str, torch.Tensor], module: str) -> torch.Tensor:
        prefix = f"encoder.base_model.model.{module}"
        scale = 64 / 64 if weights is saved else 4 / 2  # alpha / rank
        return scale * weights[f"{prefix}.lora_B.default.weight"] @ weights[f"{prefix}.lora_A.default.weight"]

    frozen, learning = "encoder.layer.0.attention.self.query", "encoder.layer.1.attention.self.query"
    # The frozen layer keeps the adapters' change exactly; the layer above has learned more.
    assert torch.allclose(difference(saved, frozen), difference(start, frozen), atol=1e-5)
    assert not torch.allclose(difference(saved, learning), difference(start, learning), atol=1e-3)

    # Loaded (adapters merged), the saved folder has the very matrices the run trained, which
    # its checkpoint holds whole; a smaller rank keeps less of the change.
    network, _, _ = load_model(tmp_path / "full" / "last")
    checkpoint = load_file(str(tmp_path / "full" / "checkpoint" / "checkpoint.safetensors"))
    trained = checkpoint[f"model.encoder.{learning}.weight"]
    assert torch.allclose(network.encoder.get_submodule(learning).weight, trained, atol=1e-5)
    from app.ml.packaging import base_matrices, low_rank_state

    _, kept = low_rank_state(network, base_matrices(str(encoder_dir)), 1)
    assert kept < 0.999


def test_a_casing_stage_learns_only_mid_sentence_capitals_and_leaves_marks_alone(
    encoder_dir: Path, tmp_path: Path
) -> None:
    from app.training.config import TrainConfig
    from app.training.data import UNKNOWN, from_punctuated_text, mid_sentence_casing
    from app.training.train import train

    text = "We met Anna in Paris. Then we left, and NASA called. Did I say so? Yes. " * 30
    document = from_punctuated_text(text, "en", "toy")
    shown = mid_sentence_casing(document)
    # Sentence starts (We, Then, Did, Yes) are hidden; names, acronyms and "I" stay.
    assert [w for w, c in zip(document.words[:16], shown, strict=False) if c == UNKNOWN] == [
        "we",
        "then",
        "did",
        "yes",
    ]
    assert [w for w, c in zip(document.words[:16], shown, strict=False) if c > 0] == [
        "anna",
        "paris",
        "nasa",
        "i",
    ]

    (tmp_path / "data" / "en").mkdir(parents=True)
    (tmp_path / "data" / "en" / "a.txt").write_text(text)
    (tmp_path / "data" / "dev.conllu").write_text(
        "".join(f"# text = {s.strip()}.\n\n" for s in text.split(".")[:40])
    )
    sources = [
        {"name": "toy", "kind": "text", "path": "en", "language": "en"},
        {"name": "dev", "kind": "conllu", "path": "dev.conllu", "language": "en"},
    ]
    common = dict(data_root=tmp_path / "data", encoder=str(encoder_dir), batch_size=2, window_tokens=48)
    common |= dict(eval_every=2, lora_rank=2, lora_alpha=4, warmup_steps=1, sources=sources)
    train(TrainConfig(output=tmp_path / "text", steps=2, **common), log=lambda _: None)  # type: ignore[arg-type]
    casing_stage = TrainConfig(
        output=tmp_path / "casing",
        steps=3,
        init_from=tmp_path / "text" / "last",
        only_casing_head=True,
        casing_mid_sentence_only=True,
        **common,  # type: ignore[arg-type]
    )
    train(casing_stage, resume=False, log=lambda _: None)
    before = load_file(str(tmp_path / "text" / "last" / "weights.safetensors"))
    after = load_file(str(tmp_path / "casing" / "last" / "weights.safetensors"))
    assert after.keys() == before.keys()
    changed = {k for k in before if not torch.equal(before[k], after[k])}
    assert changed and all(k.startswith("casing_head.") for k in changed)


def test_a_timing_branch_moves_onto_another_text_model(encoder_dir: Path, tmp_path: Path) -> None:
    from app.ml.packaging import load_part
    from app.training.gaps import SIZE

    def timing_model() -> tuple[Any, dict[str, Any]]:
        model, _, config = build_model(
            str(encoder_dir), lora_rank=2, lora_alpha=4, gap_features=SIZE, timing_context=2
        )
        return model, config

    torch.manual_seed(1)
    trained, config = timing_model()
    assert trained.timing_branch is not None
    torch.nn.init.normal_(trained.timing_branch.out.weight, std=0.5)
    save_model(trained, config, tmp_path / "timed")
    torch.manual_seed(2)
    other, _ = timing_model()
    load_part(other, tmp_path / "timed", "timing_branch.")
    moved, kept = trained.state_dict(), other.state_dict()
    assert all(torch.equal(moved[k], kept[k]) for k in kept if k.startswith("timing_branch."))
    assert not torch.equal(moved["mark_head.weight"], kept["mark_head.weight"])

    text_only, _, text_config = build_model(str(encoder_dir), lora_rank=2, lora_alpha=4)
    save_model(text_only, text_config, tmp_path / "text")
    with pytest.raises(ModelError, match="timing_branch does not fit"):
        load_part(other, tmp_path / "text", "timing_branch")


def test_graft_keeps_the_text_model_and_puts_in_the_other_timing_branch(
    encoder_dir: Path, tmp_path: Path
) -> None:
    from app.ml.packaging import graft_timing_branch
    from app.training.gaps import SIZE

    torch.manual_seed(1)
    timed, _, timed_config = build_model(
        str(encoder_dir), lora_rank=2, lora_alpha=4, gap_features=SIZE, timing_context=2
    )
    assert timed.timing_branch is not None
    torch.nn.init.normal_(timed.timing_branch.out.weight, std=0.5)
    save_model(timed, {**timed_config, "temperature": 1.3}, tmp_path / "timed")
    torch.manual_seed(2)
    text, _, text_config = build_model(str(encoder_dir), lora_rank=2, lora_alpha=4, gap_features=SIZE)
    torch.nn.init.normal_(text.mark_head.weight, std=0.5)
    save_model(text, {**text_config, "stride": 0.25}, tmp_path / "text")

    settings = graft_timing_branch(tmp_path / "text", tmp_path / "timed", tmp_path / "both")
    assert settings.timing_context == 2
    assert settings.stride == 0.25 and "temperature" not in settings.json  # calibrate it anew
    both = load_file(str(tmp_path / "both" / "weights.safetensors"))
    for name, value in timed.state_dict().items():
        if name.startswith("timing_branch."):
            assert torch.equal(both[name], value)
    text_state = text.state_dict()
    assert all(torch.equal(both[k], text_state[k]) for k in both if not k.startswith("timing_branch."))
    load_model(tmp_path / "both")  # a whole model, as the product loads it

    with pytest.raises(ModelError, match="has no timing branch"):
        graft_timing_branch(tmp_path / "text", tmp_path / "text", tmp_path / "none")


def test_a_model_that_reads_audio_frames_is_refused_in_one_line(encoder_dir: Path, tmp_path: Path) -> None:
    from app.ml.validation import check_model

    model, _, config = build_model(str(encoder_dir), lora_rank=2, lora_alpha=4)
    save_model(model, {**config, "acoustic_features": 44}, tmp_path / "old")
    with pytest.raises(ModelError, match="reads audio frames, which this Punctum no longer does"):
        check_model(tmp_path / "old")


def test_a_continued_run_reads_the_sources_of_the_run_it_continues(tmp_path: Path) -> None:
    from app.training.config import TrainConfig

    (tmp_path / "first.toml").write_text(
        '[train]\noutput = "first"\n\n'
        '[[source]]\nname = "en"\nkind = "text"\npath = "en"\nlanguage = "en"\nweight = 2.0\n'
    )
    (tmp_path / "more.toml").write_text(
        '[train]\noutput = "more"\ninit_from = "first/best"\nsources_from = "first.toml"\nseed = 5\n'
    )
    first = TrainConfig.load(tmp_path / "first.toml")
    more = TrainConfig.load(tmp_path / "more.toml")
    assert more.sources == first.sources and more.sources[0]["weight"] == 2.0
    assert more.init_from == (tmp_path / "first" / "best").resolve()
    assert (more.output, more.seed) == ((tmp_path / "more").resolve(), 5)

    # A continued run may change a named source of that file; the file itself stays as it was.
    (tmp_path / "weighted.toml").write_text(
        '[train]\nsources_from = "first.toml"\n\n[[source_change]]\nname = "en"\nweight = 3.0\n'
    )
    weighted = TrainConfig.load(tmp_path / "weighted.toml")
    assert weighted.sources == [{**first.sources[0], "weight": 3.0}]
    assert TrainConfig.load(tmp_path / "first.toml").sources[0]["weight"] == 2.0


def test_a_continued_run_adds_sources_of_its_own_but_names_each_once(tmp_path: Path) -> None:
    from app.training.config import TrainConfig, TrainConfigError

    (tmp_path / "first.toml").write_text(
        '[train]\n\n[[source]]\nname = "en"\nkind = "text"\npath = "en"\nlanguage = "en"\n'
    )
    (tmp_path / "more.toml").write_text(
        '[train]\nsources_from = "first.toml"\n\n'
        '[[source]]\nname = "talks"\nkind = "talks"\npath = "t.txt"\nlanguage = "en"\n\n'
        '[[source_change]]\nname = "talks"\nweight = 4.0\n'
    )
    more = TrainConfig.load(tmp_path / "more.toml")
    assert [(s["name"], s.get("weight")) for s in more.sources] == [("en", None), ("talks", 4.0)]
    (tmp_path / "twice.toml").write_text(
        '[train]\nsources_from = "first.toml"\n\n[[source]]\nname = "en"\nkind = "text"\npath = "x"\n'
    )
    with pytest.raises(TrainConfigError, match="named twice: en"):
        TrainConfig.load(tmp_path / "twice.toml")


def test_talks_are_read_whole_and_held_out_whole(tmp_path: Path) -> None:
    from app.training.data import held_out_talks, read_talks

    talks = "\n\n".join(f"Talk {n} begins here. It goes on, and on?\nA second paragraph." for n in range(50))
    (tmp_path / "talks.txt").write_text(talks + "\n")
    documents = read_talks(tmp_path / "talks.txt", "en", "ted")
    assert len(documents) == 50
    assert documents[7].words[:3] == ["talk", "7", "begins"] and documents[7].words[-1] == "paragraph"
    assert documents[7].labels[:4] == [0, 0, 0, 2] and documents[7].casing[0] == 1
    split = held_out_talks(documents, 25)
    assert [d.words[1] for d in split["dev"]] == ["12", "37"]
    assert len(split["train"]) == 48 and not {id(d) for d in split["dev"]} & {id(d) for d in split["train"]}

    # A lowercased, tokenized file (no blank lines) becomes pseudo-talks; casing is unknown and
    # Moses escapes and split elisions are undone, as ASR writes them.
    (tmp_path / "fr.txt").write_text("mais qu&apos; en est-il de l&apos; eau ?\n" * 250)
    french = read_talks(tmp_path / "fr.txt", "fr", "ted", cased=False)
    assert len(french) == 3
    assert french[0].words[:7] == ["mais", "qu'en", "est-il", "de", "l'eau", "mais", "qu'en"]
    assert french[0].labels[4] == 3 and set(french[0].casing) == {-100}


def test_a_paused_run_resumes_exactly_where_it_stopped(encoder_dir: Path, tmp_path: Path) -> None:
    from app.training.config import TrainConfig
    from app.training.train import train

    text = "Hello there, how are you? I am fine, thank you. It is a nice day, is it not? Yes. "
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "talks.txt").write_text("\n\n".join(text * (3 + n % 4) for n in range(40)))

    def config(output: str) -> TrainConfig:
        return toy_run(
            tmp_path / output,
            encoder_dir,
            steps=6,
            eval_every=3,
            checkpoint_every=100,
            # Dropout draws from torch's random state, which the checkpoint must carry too.
            layer_dropout=0.3,
            time_budget_minutes=10_000,
            sources=[
                {"name": "ted", "kind": "talks", "path": "talks.txt", "language": "en", "asr_noise": 0.1}
            ],
        )

    whole = train(config("whole"), log=lambda _: None)
    paused = train(config("paused"), log=lambda _: None, stop_after_steps=2)
    assert paused["steps"] == 2 and paused["stop_reason"].startswith("paused at step 2")
    # The checkpoint holds every weight: what the run started from need not be at hand any more.
    moved_elsewhere = config("paused")
    moved_elsewhere.init_from = tmp_path / "no-longer-here"
    resumed = train(moved_elsewhere, log=lambda _: None)
    assert resumed["steps"] == 6
    assert [(s["from_step"], s["to_step"]) for s in resumed["segments"]] == [(0, 2), (2, 6)]
    assert [e["SER"] for e in resumed["evaluations"]] == [e["SER"] for e in whole["evaluations"]]
    expected = load_file(str(tmp_path / "whole" / "last" / "weights.safetensors"))
    got = load_file(str(tmp_path / "paused" / "last" / "weights.safetensors"))
    # Equal but for the learning rate's decay by wall-clock time, which no two runs share.
    assert all(torch.allclose(expected[k], got[k], rtol=1e-4, atol=1e-6) for k in expected)


def test_runs_with_different_seeds_share_a_dev_sample_when_it_has_its_own_seed(tmp_path: Path) -> None:
    from app.training.config import TrainConfig
    from app.training.sampling import dev_documents

    calls = tmp_path / "data" / "calls"
    calls.mkdir(parents=True)
    for number in range(20):
        rows = [f"call{number}word{i}|1|{i}.0|{i}.5|{'.' if i % 6 == 5 else ''}||LC|[]|||" for i in range(30)]
        (calls / f"{number:02d}.nlp").write_text(
            "token|speaker|ts|endTs|punctuation|prepunctuation|case|tags\n" + "\n".join(rows)
        )

    def dev_calls(seed: int, dev_seed: int | None) -> list[str]:
        config = TrainConfig(
            output=tmp_path / "run",
            data_root=tmp_path / "data",
            seed=seed,
            dev_seed=dev_seed,
            max_words_per_source=100,
            dev_words_per_source=60,
            sources=[{"name": "calls", "kind": "earnings22", "path": "calls"}],
        )
        return [document.name for document in dev_documents(config)]

    # Without a dev seed, each run's seed draws its own dev sample (so their dev scores differ in kind).
    assert dev_calls(1, None) != dev_calls(2, None)
    assert dev_calls(1, 7) == dev_calls(2, 7) == dev_calls(3, 7)
    assert len(dev_calls(1, 7)) == 2


def test_asr_noise_changes_words_but_keeps_every_mark() -> None:
    import random

    from app.training.data import UNKNOWN, from_punctuated_text, with_asr_noise

    text = " ".join(f"Word{i} some words here, then more text." for i in range(400))
    clean = from_punctuated_text(text, "en", "test")
    noisy = with_asr_noise(clean, 0.2, random.Random(5))

    assert len(noisy.words) == len(noisy.labels) == len(noisy.casing)
    # Marks never sit on neighbouring words here, so a dropped word always hands its mark on.
    assert sorted(label for label in noisy.labels if label) == sorted(
        label for label in clean.labels if label
    )
    changed = sum(a != b for a, b in zip(clean.words, noisy.words, strict=False))
    assert changed > len(clean.words) * 0.1
    assert abs(len(noisy.words) - len(clean.words)) < len(clean.words) * 0.05
    # Inserted words are the only ones whose casing the loss ignores.
    assert 0 < noisy.casing.count(UNKNOWN) < len(clean.words) * 0.1
    assert with_asr_noise(clean, 0.2, random.Random(5)) == noisy
    assert with_asr_noise(clean, 0.0, random.Random(5)).words == clean.words


def test_mark_bias_restores_a_timid_models_decisions() -> None:
    torch.manual_seed(4)
    gold = torch.randint(0, 3, (5000,))
    logits = torch.randn(5000, 6)
    logits[torch.arange(5000), gold] += 2.5
    logits[:, 1] -= 3.0  # commas are almost never chosen
    log_probabilities = torch.log_softmax(logits, dim=-1)
    bias = fit_bias(log_probabilities, gold)
    assert bias[0] == 0 and bias[1] > 1.5
    assert (
        micro_f1(log_probabilities, gold, torch.tensor(bias))
        > micro_f1(log_probabilities, gold, torch.zeros(6)) + 0.1
    )


def _with_new_branch(encoder_dir: Path, **branch: int) -> tuple[Any, Any, Any, dict[str, Any]]:
    """A tiny text model, and the same model with a branch added (both in eval mode)."""
    torch.manual_seed(0)
    text_model, tokenizer, _ = build_model(str(encoder_dir), lora_rank=2, lora_alpha=4)
    model, _, config = build_model(str(encoder_dir), lora_rank=2, lora_alpha=4, **branch)
    model.load_state_dict(text_model.state_dict(), strict=False)
    model.eval()
    text_model.eval()
    return text_model, model, tokenizer, config


def _train_branch(
    model: Any,
    branch: torch.nn.Module,
    make: Callable[[], tuple[Any, torch.Tensor]],
    steps: int,
    rate: float,
) -> None:
    """Train only ``branch`` on the batches and labels ``make`` builds, then back to eval mode."""
    optimizer = torch.optim.Adam(branch.parameters(), lr=rate)
    model.train()
    for _ in range(steps):
        batch, labels = make()
        logits, _ = model(**batch_tensors(batch))
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()


def _long_pauses_as_periods(
    tokenizer: Any, words: list[str], gaps: list[list[float] | None]
) -> tuple[Callable[[], tuple[Any, torch.Tensor]], torch.Tensor]:
    """A batch maker for the words with their gaps, labelled with a period after each long pause;
    and those labels."""
    from app.training.gaps import SIZE

    encoded = encode_words(tokenizer, words)
    labels = torch.tensor([[2 if g is not None and g[1] == 1.0 else 0 for g in gaps]])

    def make() -> tuple[Any, torch.Tensor]:
        batch = make_batch([(encoded, 0, len(words))], tokenizer.cls_token_id, tokenizer.sep_token_id, 1)
        batch.add_gaps([(gaps, 0, len(words))], SIZE)
        return batch, labels

    return make, labels


def test_gap_branch_starts_neutral_and_learns_from_pauses(encoder_dir: Path, tmp_path: Path) -> None:
    from app.training.gaps import SIZE, timed_gaps

    text_model, model, tokenizer, config = _with_new_branch(encoder_dir, gap_features=SIZE)
    words = ["so", "we", "left", "then", "it", "rained"] * 4
    starts = [0.4 * i for i in range(len(words))]
    ends = [s + 0.3 for s in starts]
    for i in range(2, len(words), 3):  # a long pause after every third word
        ends[i] -= 0.2
    gaps = timed_gaps(words, starts, ends)
    assert sum(g is not None and g[1] == 1.0 for g in gaps) == len(words) // 3 - 1  # none after the last
    plain, _ = predict(text_model, tokenizer, words, window_tokens=32)
    absent, _ = predict(model, tokenizer, words, window_tokens=32)
    timed, _ = predict(model, tokenizer, words, window_tokens=32, gaps=gaps)
    assert torch.allclose(plain, absent, atol=1e-5) and torch.allclose(plain, timed, atol=1e-5)

    # A little training on pause-after-every-third-word data: the branch finds the pauses.
    assert model.gap_branch is not None
    make, labels = _long_pauses_as_periods(tokenizer, words, gaps)

    _train_branch(model, model.gap_branch, make, steps=60, rate=1e-2)
    timed, _ = predict(model, tokenizer, words, window_tokens=32, gaps=gaps)
    assert (timed.argmax(dim=-1) == labels[0]).float().mean() > 0.95
    save_model(model, config, tmp_path / "gap-model")
    reloaded, _, settings = load_model(tmp_path / "gap-model")
    assert settings.gap_features == SIZE and reloaded.gap_branch is not None
    again, _ = predict(reloaded, tokenizer, words, window_tokens=32, gaps=gaps)
    assert torch.allclose(again, timed, atol=1e-4)


def test_a_model_trained_on_timings_alone_is_not_shown_loudness_or_pitch() -> None:
    from app.training.gaps import FEATURES, TIMING_FEATURES, restrict

    heard = [[0.8, 1.0, 0.2, 0.6, -0.4, 1.0], None]
    assert restrict(heard, TIMING_FEATURES) == [[0.8, 1.0, 0.2, 0.0, 0.0, 0.0], None]
    assert restrict(heard, FEATURES) == heard and restrict(heard, None) == heard
    assert restrict(None, TIMING_FEATURES) is None


# Two speakers for the gap-context test: a fast one pauses 0.05 s between words and 0.4 s at a
# boundary, a slow one 0.6 s and 0.95 s. No single pause length separates both speakers' boundaries
# from their other gaps; the pauses around a gap do. Boundaries fall at random, so the words cannot
# tell either.
SPEAKER_WORDS = ["and", "then", "we", "went", "on"] * 5
Spoken = tuple[list[list[float] | None], list[int]]


def _spoken(usual_pause: float, rng: Any) -> Spoken:
    from app.training.gaps import timed_gaps

    marks = [2 if rng.random() < 0.3 else 0 for _ in SPEAKER_WORDS]
    starts, ends, clock = [], [], 0.0
    for mark in marks:
        starts.append(clock)
        ends.append(clock + 0.3)
        clock += 0.3 + usual_pause + (0.35 if mark else 0.0)
    return timed_gaps(SPEAKER_WORDS, starts, ends), marks


def _gap_accuracy(model: Any, tokenizer: Any, trials: list[Spoken]) -> float:
    right = total = 0
    for gaps, marks in trials:
        found, _ = predict(model, tokenizer, SPEAKER_WORDS, window_tokens=64, gaps=gaps)
        # The last word has no gap after it: nothing can be known there.
        chosen = found.argmax(dim=-1)[:-1].tolist()
        right += sum(int(f) == m for f, m in zip(chosen, marks[:-1], strict=True))
        total += len(chosen)
    return right / total


def _trained_on_two_speakers(encoder_dir: Path, context: int) -> tuple[Any, Any, dict[str, Any]]:
    import random

    from app.training.gaps import SIZE

    _, model, tokenizer, config = _with_new_branch(encoder_dir, gap_features=SIZE, gap_context=context)
    assert model.gap_branch is not None
    encoded = encode_words(tokenizer, SPEAKER_WORDS)
    rng = random.Random(3)

    def make() -> tuple[Any, torch.Tensor]:
        trials = [_spoken(usual, rng) for usual in (0.05, 0.6, 0.05, 0.6)]
        rows = [(encoded, 0, len(SPEAKER_WORDS))] * len(trials)
        batch = make_batch(rows, tokenizer.cls_token_id, tokenizer.sep_token_id, 1)
        batch.add_gaps([(gaps, 0, len(SPEAKER_WORDS)) for gaps, _ in trials], SIZE)
        return batch, torch.tensor([marks for _, marks in trials])

    _train_branch(model, model.gap_branch, make, steps=150, rate=1e-2)
    return model, tokenizer, config


def test_gap_context_tells_a_boundary_pause_from_a_slow_speakers_usual_one(
    encoder_dir: Path, tmp_path: Path
) -> None:
    import random

    held_out = [_spoken(usual, random.Random(11 + i)) for i, usual in enumerate((0.05, 0.6) * 4)]
    alone, tokenizer, _ = _trained_on_two_speakers(encoder_dir, context=0)
    around, tokenizer, config = _trained_on_two_speakers(encoder_dir, context=7)
    scores = _gap_accuracy(alone, tokenizer, held_out), _gap_accuracy(around, tokenizer, held_out)
    assert scores[1] > 0.95 and scores[0] < scores[1] - 0.05, scores
    save_model(around, config, tmp_path / "context-model")
    reloaded, _, settings = load_model(tmp_path / "context-model")
    assert settings.gap_context == 7
    assert _gap_accuracy(reloaded, tokenizer, held_out) == scores[1]


def test_each_language_gets_its_own_mark_biases() -> None:
    from app.training.calibrate import calibrate

    torch.manual_seed(5)
    documents, labels, languages = [], [], []
    for language, question_shift in (("en", 3.0), ("de", -3.0)):
        gold = torch.randint(0, 4, (9000,))
        logits = torch.randn(9000, 6)
        logits[torch.arange(9000), gold] += 2.5
        logits[:, 3] += question_shift  # English over-asks, German under-asks
        documents.append(torch.softmax(logits, dim=-1))
        labels.append(gold.tolist())
        languages.append(language)
    result = calibrate(documents, labels, languages)
    by_language = result["mark_bias_by_language"]
    assert by_language["en"][3] < 0 < by_language["de"][3]
    assert result["f1_after"] > result["f1_before"]


def test_a_timing_branch_leaves_words_without_timings_exactly_to_the_text_model(
    encoder_dir: Path, tmp_path: Path
) -> None:
    from app.training.gaps import SIZE, timed_gaps

    # A text model whose gap branch has learned something, so its stand-in for missing timings
    # is part of how it reads plain text; then the same with a trained (here: randomised)
    # timing branch that must stay silent where there is no timing.
    torch.manual_seed(0)
    text_model, tokenizer, _ = build_model(str(encoder_dir), lora_rank=2, lora_alpha=4, gap_features=SIZE)
    assert text_model.gap_branch is not None
    torch.nn.init.normal_(text_model.gap_branch.out.weight, std=0.5)
    model, _, config = build_model(
        str(encoder_dir), lora_rank=2, lora_alpha=4, gap_features=SIZE, timing_context=2
    )
    model.load_state_dict(text_model.state_dict(), strict=False)
    assert model.timing_branch is not None
    torch.nn.init.normal_(model.timing_branch.out.weight, std=0.5)
    torch.nn.init.normal_(model.timing_branch.absent, std=1.0)
    text_model.eval()
    model.eval()

    words = ["so", "we", "left", "then", "it", "rained", "all", "day"] * 3
    plain, _ = predict(text_model, tokenizer, words, window_tokens=32)
    assert torch.equal(plain, predict(model, tokenizer, words, window_tokens=32)[0])

    # Timings for the first half only: the others are read exactly as the text model reads them.
    starts = [0.4 * i for i in range(len(words))]
    gaps: list[list[float] | None] = list(timed_gaps(words, starts, [s + 0.3 for s in starts]))
    half = len(words) // 2
    gaps[half:] = [None] * (len(words) - half)
    text_timed, _ = predict(text_model, tokenizer, words, window_tokens=32, gaps=gaps)
    timed, _ = predict(model, tokenizer, words, window_tokens=32, gaps=gaps)
    assert torch.equal(text_timed[half:], timed[half:])
    assert not torch.allclose(text_timed[: half - 1], timed[: half - 1], atol=1e-3)

    save_model(model, config, tmp_path / "timed-model")
    reloaded, _, settings = load_model(tmp_path / "timed-model")
    assert settings.timing_context == 2 and reloaded.timing_branch is not None
    assert torch.equal(predict(reloaded, tokenizer, words, window_tokens=32)[0], plain)


def test_the_timing_branch_learns_from_pauses_beside_a_frozen_gap_branch(
    encoder_dir: Path, tmp_path: Path
) -> None:
    from app.training.gaps import SIZE, timed_gaps

    # A timing stage on a text model whose gap branch stays frozen (here: never trained): only
    # the timing branch can learn what the pauses say.
    text_model, model, tokenizer, config = _with_new_branch(encoder_dir, gap_features=SIZE, timing_context=2)
    words = ["so", "we", "left", "then", "it", "rained"] * 4
    starts = [0.4 * i for i in range(len(words))]
    ends = [s + 0.3 for s in starts]
    # A pause after every fourth word of a six-word refrain: the words alone cannot tell where.
    for i in range(3, len(words) - 1, 4):
        ends[i] -= 0.2
    gaps = timed_gaps(words, starts, ends)
    plain, _ = predict(text_model, tokenizer, words, window_tokens=32)
    timed, _ = predict(model, tokenizer, words, window_tokens=32, gaps=gaps)
    assert torch.allclose(plain, timed, atol=1e-5)  # the new branch starts out changing nothing

    assert model.timing_branch is not None
    make, labels = _long_pauses_as_periods(tokenizer, words, gaps)

    # The timing branch is the only part of the model that sees the pauses.
    _train_branch(model, model.timing_branch, make, steps=60, rate=1e-2)
    timed, _ = predict(model, tokenizer, words, window_tokens=32, gaps=gaps)
    assert (timed.argmax(dim=-1) == labels[0]).float().mean() > 0.95
    # Without timings the words have no evidence, and the text model answers alone.
    assert torch.equal(predict(model, tokenizer, words, window_tokens=32)[0], plain)

    save_model(model, config, tmp_path / "timing-reader-model")
    reloaded, _, settings = load_model(tmp_path / "timing-reader-model")
    assert settings.timing_context == 2
    again, _ = predict(reloaded, tokenizer, words, window_tokens=32, gaps=gaps)
    assert torch.allclose(again, timed, atol=1e-4)


def test_a_timing_stage_may_teach_the_frozen_gap_branch_only_where_timings_reach(
    encoder_dir: Path, tmp_path: Path
) -> None:
    from app.ml.model import GapBranch
    from app.training.config import TrainConfig
    from app.training.gaps import SIZE, timed_gaps
    from app.training.optimisation import choose_trainable

    model, tokenizer, _ = build_model(
        str(encoder_dir),
        lora_rank=2,
        lora_alpha=4,
        gap_features=SIZE,
        gap_context=2,
        timing_context=2,
    )
    config = TrainConfig(
        output=tmp_path,
        data_root=tmp_path,
        only_branches=True,
        frozen_gap_branch=True,
        gap_evidence_learns=True,
    )
    choose_trainable(model, config)
    learning = {".".join(name.split(".")[:2]) for name, p in model.named_parameters() if p.requires_grad}
    assert {"gap_branch.evidence", "gap_branch.context"} <= learning
    assert all(
        name.startswith(("gap_branch.evidence", "gap_branch.context", "timing_branch")) for name in learning
    )

    # Whatever those parts learn (here: random weights), words without timings read as before.
    assert model.gap_branch is not None
    torch.nn.init.normal_(model.gap_branch.out.weight, std=0.5)
    model.eval()
    words = ["so", "we", "left", "then", "it", "rained"] * 4
    starts = [0.4 * i for i in range(len(words))]
    gaps: list[list[float] | None] = list(timed_gaps(words, starts, [s + 0.3 for s in starts]))
    half = len(words) // 2
    gaps[half:] = [None] * (len(words) - half)
    before, _ = predict(model, tokenizer, words, window_tokens=32, gaps=gaps)
    plain, _ = predict(model, tokenizer, words, window_tokens=32)
    with torch.no_grad():
        for name, parameter in model.gap_branch.named_parameters():
            if name.startswith(GapBranch.EVIDENCE_PARTS):
                parameter.normal_(std=1.0)
    after, _ = predict(model, tokenizer, words, window_tokens=32, gaps=gaps)
    assert torch.equal(before[half:], after[half:])
    assert not torch.allclose(before[: half - 1], after[: half - 1], atol=1e-3)
    assert torch.equal(predict(model, tokenizer, words, window_tokens=32)[0], plain)
