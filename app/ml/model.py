"""The punctuation model: a pretrained encoder, a learned mix of its layers, and two small heads.

Architecture after Guerreiro et al.: a softmax-weighted sum of all encoder layers (whole layers
dropped at random in training so no single layer dominates), then for each word the embedding
of its last sub-token concatenated with that of the next token, then a linear classifier for the
mark after the word. A casing head reads the word's first and last sub-tokens.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


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
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Mark logits (batch, words, marks) and casing logits (batch, words, casings)."""
        states = self.dropout(self.mixed_layers(input_ids, attention_mask))
        last = _gather(states, last_index)
        following = _gather(states, next_index)
        first = _gather(states, first_index)
        marks = self.mark_head(torch.cat([last, following], dim=-1))
        casing = self.casing_head(torch.cat([first, last], dim=-1))
        return marks, casing


def _gather(states: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    expanded = index.unsqueeze(-1).expand(-1, -1, states.size(-1))
    return torch.gather(states, 1, expanded)


def head_state(model: PunctuationModel) -> dict[str, torch.Tensor]:
    """The weights that belong to the punctuation model rather than the encoder."""
    return {
        name: tensor.detach().clone()
        for name, tensor in model.state_dict().items()
        if not name.startswith("encoder.")
    }
