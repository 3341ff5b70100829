"""The punctuation model: a pretrained encoder, a learned mix of its layers, and two small heads.

Architecture after Guerreiro et al.: a softmax-weighted sum of all encoder layers (whole layers
dropped at random in training so no single layer dominates), then for each word the embedding
of its last sub-token concatenated with that of the next token, then a linear classifier for the
mark after the word. A casing head reads the word's first and last sub-tokens.

An optional gap branch (after UniPunc's idea of a virtual embedding for missing audio) adds what
timings and audio say about each gap: pause, rate, loudness, pitch slope. It reads the word's text
features too, so a pause after "the" need not end a sentence. Where a gap has no evidence, a
learned stand-in embedding takes the evidence's place; its output layer starts at zero, so a
branch added to a trained text model starts out changing nothing.

An optional timing branch reads the gap vectors of the ``timing_context`` gaps on each side of a
timed word (two convolutions) with the word's text features, so a stage can learn from timings
while the gap branch stays frozen. It adds exactly nothing to a word without timing, so text alone
is read by the text model alone (whose gap branch is part of it), and training the timing branch
cannot move what users without timings get. Its output layer starts at zero too.

Before the listener this reader sat inside an acoustic branch that also attended to 10 ms mel frames
around each word's end; the recogniser that listens along the words (``app.ml.listener``)
replaced that, and combined with it the frames lowered F1 (LJSpeech 73.1 -> 68.5).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from app.ml.windows import GAP_INPUTS, MODEL_INPUTS, WindowBatch


class PunctuationModel(nn.Module):
    def __init__(
        self, encoder: nn.Module, num_marks: int, num_casings: int = 3, layer_dropout: float = 0.1
    ) -> None:
        super().__init__()
        self.encoder = encoder
        config: Any = encoder.config
        hidden = int(config.hidden_size)
        layers = int(config.num_hidden_layers) + 1  # the embeddings count as a layer
        self.layer_logits = nn.Parameter(torch.zeros(layers))
        self.scale = nn.Parameter(torch.ones(()))
        self.layer_dropout = layer_dropout
        self.dropout = nn.Dropout(0.1)
        self.mark_head = nn.Linear(2 * hidden, num_marks)
        self.casing_head = nn.Linear(2 * hidden, num_casings)
        self.gap_branch: GapBranch | None = None
        self.timing_branch: TimingBranch | None = None

    def add_gap_branch(self, features: int, width: int = 64, context: int = 0) -> None:
        self.gap_branch = GapBranch(
            self.mark_head.in_features, features, self.mark_head.out_features, width, context
        )

    def add_timing_branch(self, gap_features: int, context: int, width: int = 64) -> None:
        self.timing_branch = TimingBranch(
            self.mark_head.in_features, gap_features, self.mark_head.out_features, context, width
        )

    def mixed_layers(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        output = self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True)
        states = torch.stack(output.hidden_states)  # (layers, batch, tokens, hidden)
        logits: torch.Tensor = self.layer_logits
        if self.training and self.layer_dropout > 0:
            dropped = torch.rand_like(logits) < self.layer_dropout
            if bool(dropped.all()):
                dropped[-1] = False
            logits = logits.masked_fill(dropped, float("-inf"))
        weights = torch.softmax(logits, dim=0)
        return self.scale * torch.einsum("l,lbth->bth", weights, states)

    def forward(
        self,
        input_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        first_index: torch.Tensor,
        last_index: torch.Tensor,
        next_index: torch.Tensor,
        gap_features: torch.Tensor | None = None,
        gap_present: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mark logits (batch, words, marks) and casing logits (batch, words, casings).

        ``gap_features`` (batch, words, features) and ``gap_present`` (batch, words) carry the gap
        evidence. Without them every gap counts as absent.
        """
        states = self.dropout(self.mixed_layers(input_ids, attention_mask))
        last = _gather(states, last_index)
        following = _gather(states, next_index)
        first = _gather(states, first_index)
        text = torch.cat([last, following], dim=-1)
        marks = self.mark_head(text)
        if self.gap_branch is not None:
            marks = marks + self.gap_branch(text, gap_features, gap_present)
        if self.timing_branch is not None and gap_features is not None and gap_present is not None:
            marks = marks + self.timing_branch(text, gap_features, gap_present)
        casing = self.casing_head(torch.cat([first, last], dim=-1))
        return marks, casing


class _Correction(nn.Module):
    """What the branches share: evidence (or the learned stand-in for its absence) read together
    with the word's text features, into mark logit corrections that start at zero."""

    def __init__(self, text_size: int, marks: int, width: int) -> None:
        super().__init__()
        self.text = nn.Linear(text_size, width)
        self.absent = nn.Parameter(torch.zeros(width))  # the stand-in ("virtual") embedding
        self.hidden = nn.Linear(width, width)
        self.out = nn.Linear(width, marks)
        nn.init.zeros_(self.out.weight)
        nn.init.zeros_(self.out.bias)

    def correct(self, text: torch.Tensor, evidence: torch.Tensor) -> torch.Tensor:
        hidden = nn.functional.gelu(self.text(text) + evidence)
        out: torch.Tensor = self.out(nn.functional.gelu(self.hidden(hidden)))
        return out


class GapBranch(_Correction):
    """Mark logit corrections from gap evidence read together with the word's text features.

    With ``context`` > 0, a convolution also reads the evidence of the ``context`` gaps on each
    side: a pause means more from a speaker who rarely pauses than from one who often does.
    """

    # The parts that read the evidence itself; a word without evidence never reaches them.
    EVIDENCE_PARTS = ("evidence.", "context.")

    def __init__(self, text_size: int, features: int, marks: int, width: int = 64, context: int = 0) -> None:
        super().__init__(text_size, marks, width)
        self.features = features
        self.evidence = nn.Sequential(nn.Linear(features, width), nn.GELU(), nn.Linear(width, width))
        self.context: nn.Conv1d | None = None
        if context:
            # The extra channel says which neighbours have evidence at all.
            around = nn.Conv1d(features + 1, width, 2 * context + 1, padding=context)
            nn.init.zeros_(around.weight)  # starts as the branch without context
            assert around.bias is not None
            nn.init.zeros_(around.bias)
            self.context = around

    def forward(
        self, text: torch.Tensor, features: torch.Tensor | None, present: torch.Tensor | None
    ) -> torch.Tensor:
        if features is None or present is None:
            evidence = self.absent.expand(*text.shape[:-1], -1)
        else:
            local = self.evidence(features)
            if self.context is not None:
                around, _ = _channels_with_presence(features, present)
                local = local + self.context(around).transpose(1, 2).to(local.dtype)
            evidence = torch.where(present.unsqueeze(-1), local, self.absent)
        return self.correct(text, evidence)


class TimingBranch(_Correction):
    """Mark logit corrections from the gap vectors around each timed word, read with its text;
    nothing for a word without timing."""

    def __init__(self, text_size: int, gap_features: int, marks: int, context: int, width: int = 64) -> None:
        super().__init__(text_size, marks, width)
        self.gap_features, self.context = gap_features, context
        # The extra input channel says which gaps have evidence at all.
        reader = nn.Sequential(
            nn.Conv1d(gap_features + 1, width, 2 * context + 1, padding=context),
            nn.GELU(),
            nn.Conv1d(width, width, 1),
        )
        last = reader[2]
        assert isinstance(last, nn.Conv1d) and last.bias is not None
        nn.init.zeros_(last.weight)  # starts as a reader that hears nothing
        nn.init.zeros_(last.bias)
        self.timing = reader

    def forward(
        self, text: torch.Tensor, gap_features: torch.Tensor, gap_present: torch.Tensor
    ) -> torch.Tensor:
        around, flags = _channels_with_presence(gap_features, gap_present)
        read = self.absent + (self.timing(around).transpose(1, 2) * flags).to(text.dtype)
        correction = self.correct(text, read)
        # Words without timing keep the text model's answer exactly.
        return correction.masked_fill(~gap_present.unsqueeze(-1), 0.0)


def _channels_with_presence(
    features: torch.Tensor, present: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gap evidence as a convolution reads it, (batch, features + 1, gaps): zeroed where absent,
    with an extra channel saying where it is present; and those flags as (batch, gaps, 1)."""
    flags = present.unsqueeze(-1).to(features.dtype)
    return torch.cat([features * flags, flags], dim=-1).transpose(1, 2), flags


def _gather(states: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    expanded = index.unsqueeze(-1).expand(-1, -1, states.size(-1))
    return torch.gather(states, 1, expanded)


def batch_tensors(batch: WindowBatch) -> dict[str, torch.Tensor | None]:
    """A batch of windows as ``PunctuationModel.forward``'s keyword arguments."""
    arrays = {name: getattr(batch, name) for name in (*MODEL_INPUTS, *GAP_INPUTS)}
    return {name: None if array is None else torch.from_numpy(array) for name, array in arrays.items()}
