"""GD815: transformers' 'newly initialized' warning listing the body of the model (its layers, its embeddings), not
only a new head: the checkpoint holds part of the model (an adapter, a prefix encoder, a partial save). A list of head
weights alone (classifier, score, pooler, lm_head) is what loading a base model into a task class prints: silent."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

# a weight of the model's body: a numbered layer's, or the token embeddings
_BODY = lazyre.compile(r"(?:^|\.)(?:layers?|h|blocks?|decoder\.layers)\.\d+\.|(?:^|\.)(?:embed_tokens|word_embeddings|wte)\.")
_KEY = lazyre.compile(r"'([\w.\-]+)'")
# a folder a training run writes (a Trainer's checkpoint-N, an output folder): its saves are what the run trained
_TRAINING_OUTPUT = lazyre.compile(r"checkpoint-\d+|(?:^|/)(?:output|outputs|saves?)(?:/|$)")


def partial_load_fix(hits: list[Hit], ctx: RunState) -> Diagnosis | None:
    g = hits[0].groups
    keys = _KEY.findall(g.get("keys") or "")
    body = [k for k in keys if _BODY.search(k)]
    if len(body) < 2:
        return None  # a new head, or too little of the list to tell
    path = g.get("path") or ""
    trained = bool(_TRAINING_OUTPUT.search(path))
    shown = ", ".join(body[:3])
    listed = g.get("keys") or ""
    count = f"{len(body)}" if "]" in listed else f"at least {len(body)}"   # the paste may cut the list
    msg = (f"transformers loaded {g.get('cls')} from `{path}` and initialised {count} weights of the model's body from "
           f"scratch ({shown}...): the folder holds only part of the model"
           + (", as a training run saves it (a PEFT adapter, a P-Tuning prefix encoder)" if trained else "")
           + ". The model that runs is random in those layers: it generates noise without any error.")
    return Diagnosis(message=msg, category=None if trained else "checkpoint-corrupt")
