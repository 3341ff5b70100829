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

An optional acoustic branch (after UniPunc) listens to the audio itself: the frame features
around the end of each word (`app/audio/frames.py`) are down-sampled by two strided convolutions
and the word's text features attend to them (cross-attention), so a rising pitch or a breath can
reach the mark. Words without audio get a learned virtual embedding instead, and its output layer
too starts at zero.

With ``silent_without_evidence``, the acoustic branch adds exactly nothing to a word that has
neither timing nor audio. Its virtual embedding still stands in for audio a timed word lacks, but
text alone is then read by the text model alone (whose gap branch is part of it), so training the
acoustic branch cannot move what users without media get.

With a timing reader (``timing_context`` > 0), the acoustic branch also reads the gap vectors
around each timed word. A frozen gap branch keeps whatever the text runs taught it about pauses;
this lets an audio stage still learn from timings, and from them alone when there is no audio
(captions with word timings but no media). Its output layer starts at zero too.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch import nn

if TYPE_CHECKING:
    from app.ml.windows import WindowBatch


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
        self.acoustic_branch: AcousticBranch | None = None
        self.silent_without_evidence = False

    def add_gap_branch(self, features: int, width: int = 64, context: int = 0) -> None:
        self.gap_branch = GapBranch(
            self.mark_head.in_features, features, self.mark_head.out_features, width, context
        )

    def add_acoustic_branch(
        self, features: int, frames: int, width: int = 64, gap_features: int = 0, timing_context: int = 0
    ) -> None:
        self.acoustic_branch = AcousticBranch(
            self.mark_head.in_features, features, frames, self.mark_head.out_features, width
        )
        if timing_context:
            self.acoustic_branch.add_timing_reader(gap_features, timing_context)

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
        audio_frames: torch.Tensor | None = None,
        audio_present: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mark logits (batch, words, marks) and casing logits (batch, words, casings).

        ``gap_features`` (batch, words, features) and ``gap_present`` (batch, words) carry the gap
        evidence; ``audio_frames`` (batch, words, frames, features) and ``audio_present`` the audio
        around each word's end. Without them every gap counts as absent.
        """
        states = self.dropout(self.mixed_layers(input_ids, attention_mask))
        last = _gather(states, last_index)
        following = _gather(states, next_index)
        first = _gather(states, first_index)
        text = torch.cat([last, following], dim=-1)
        marks = self.mark_head(text)
        if self.gap_branch is not None:
            marks = marks + self.gap_branch(text, gap_features, gap_present)
        if self.acoustic_branch is not None:
            if not self.silent_without_evidence:
                marks = marks + self.acoustic_branch(
                    text, audio_frames, audio_present, gap_features, gap_present
                )
            elif (evidence := _any_evidence(gap_present, audio_present)) is not None:
                # Words with no evidence keep the text model's answer exactly.
                heard = self.acoustic_branch(text, audio_frames, audio_present, gap_features, gap_present)
                marks = marks + heard.masked_fill(~evidence.unsqueeze(-1), 0.0)
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


class AcousticBranch(_Correction):
    """Mark logit corrections from the audio around each word's end, read with the word's text."""

    def __init__(self, text_size: int, features: int, frames: int, marks: int, width: int = 64) -> None:
        super().__init__(text_size, marks, width)
        self.features, self.frames = features, frames
        self.down = nn.Sequential(
            nn.Conv1d(features, width, 5, stride=2, padding=2),
            nn.GELU(),
            nn.Conv1d(width, width, 5, stride=2, padding=2),
            nn.GELU(),
        )
        self.position = nn.Parameter(torch.randn((frames + 3) // 4, width) * 0.02)
        self.query = nn.Linear(text_size, width)
        self.attention = nn.MultiheadAttention(width, 4, batch_first=True)
        self.timing: nn.Sequential | None = None

    def add_timing_reader(self, gap_features: int, context: int) -> None:
        """Read the gap vectors of the ``context`` gaps on each side of a timed word as well."""
        width = self.absent.numel()
        # The extra input channel says which gaps have evidence at all.
        reader = nn.Sequential(
            nn.Conv1d(gap_features + 1, width, 2 * context + 1, padding=context),
            nn.GELU(),
            nn.Conv1d(width, width, 1),
        )
        last = reader[2]
        assert isinstance(last, nn.Conv1d) and last.bias is not None
        nn.init.zeros_(last.weight)  # starts as the branch without it
        nn.init.zeros_(last.bias)
        self.timing = reader

    def forward(
        self,
        text: torch.Tensor,
        frames: torch.Tensor | None,
        present: torch.Tensor | None,
        gap_features: torch.Tensor | None = None,
        gap_present: torch.Tensor | None = None,
    ) -> torch.Tensor:
        heard = self.absent.expand(*text.shape[:-1], -1)
        if frames is not None and present is not None and bool(present.any()):
            # Only words with audio go through the convolutions and the attention.
            chosen = frames[present].transpose(1, 2)  # (words, features, frames)
            keys = self.down(chosen).transpose(1, 2) + self.position
            query = self.query(text[present]).unsqueeze(1)
            attended, _ = self.attention(query, keys, keys, need_weights=False)
            heard = heard.clone()
            heard[present] = attended.squeeze(1).to(heard.dtype)
        if self.timing is not None and gap_features is not None and gap_present is not None:
            around, flags = _channels_with_presence(gap_features, gap_present)
            # Only timed words take it: the rest keep the stand-in (or what the audio says).
            heard = heard + (self.timing(around).transpose(1, 2) * flags).to(heard.dtype)
        return self.correct(text, heard)


def _channels_with_presence(
    features: torch.Tensor, present: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """Gap evidence as a convolution reads it, (batch, features + 1, gaps): zeroed where absent,
    with an extra channel saying where it is present; and those flags as (batch, gaps, 1)."""
    flags = present.unsqueeze(-1).to(features.dtype)
    return torch.cat([features * flags, flags], dim=-1).transpose(1, 2), flags


def _any_evidence(*presence: torch.Tensor | None) -> torch.Tensor | None:
    """Which words have some evidence (batch, words); None when no word has any."""
    given = [p for p in presence if p is not None]
    if not given:
        return None
    combined = given[0]
    for p in given[1:]:
        combined = combined | p
    return combined if bool(combined.any()) else None


def _gather(states: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    expanded = index.unsqueeze(-1).expand(-1, -1, states.size(-1))
    return torch.gather(states, 1, expanded)


def batch_tensors(batch: WindowBatch) -> dict[str, torch.Tensor | None]:
    """A batch of windows as ``PunctuationModel.forward``'s keyword arguments."""

    def tensor(array: Any) -> torch.Tensor | None:
        return None if array is None else torch.from_numpy(array)

    return {
        "input_ids": tensor(batch.input_ids),
        "attention_mask": tensor(batch.attention_mask),
        "first_index": tensor(batch.first_index),
        "last_index": tensor(batch.last_index),
        "next_index": tensor(batch.next_index),
        "gap_features": tensor(batch.gap_features),
        "gap_present": tensor(batch.gap_present),
        "audio_frames": tensor(batch.dense_audio()),
        "audio_present": tensor(batch.audio_present()),
    }
