"""A configuration printed as a pretty-printed nested dict, read line by line into dotted keys: verl's and EasyR1's
trainers print their whole config at start (verl/trainer/main_ppo.py: ``pprint(OmegaConf.to_container(config,
resolve=True))``), one key per line, each nested dict opening on its parent's line:

    {'actor_rollout_ref': {'actor': {'clip_ratio': 0.2,
                                     'kl_loss_type': 'low_var_kl',

A key's place is its column: a key at a column left of or at an open key's closes that key. Values are read as
literals only (numbers, strings, booleans, None, short one-line lists); nothing is evaluated. A paste cut inside the
dump keeps the keys read before the cut. Pure: lines in, (dotted key, value) pairs out."""
from __future__ import annotations

import ast
from typing import Any

from .. import lazyre

# the top-level sections of verl's ppo_trainer.yaml and EasyR1's config.yaml: a dict print that opens with one of them
SECTIONS = ("actor_rollout_ref", "algorithm", "data", "critic", "reward_model", "trainer", "custom_reward_function",
            "ray_init", "worker", "global_profiler", "reward")
_OPEN = lazyre.compile(r"^\{'(" + "|".join(SECTIONS) + r")': ")
# one override of verl's written alone on its line, as a person pastes "Key config:" ("data.max_response_length=1024",
# "actor_rollout_ref.rollout.n=8"): the keys of its ppo_trainer.yaml, dotted
OVERRIDE_LINE = lazyre.compile(r"^\s*(?:[-*]\s+)?`?((?:actor_rollout_ref|algorithm|critic|reward_model|data|trainer)"
                               r"\.[A-Za-z_][\w.]*)=([^\s`#]+)`?\s*(?:#.*)?$")
# the words that open a dump or a pasted config's section, or a pasted override, for the line gate (engine/state.py
# STATE_WORDS; data. and trainer. only with the keys the rules read: a path's "data." is everywhere)
LITERALS = (tuple(f"{{'{s}': " for s in SECTIONS) + tuple(f"{s}:" for s in SECTIONS)
            + ("actor_rollout_ref.", "algorithm.", "critic.", "reward_model.", "data.max_", "data.train_batch",
               "trainer.n_gpus", "trainer.nnodes"))
_KEY = lazyre.compile(r"'([A-Za-z_][\w.-]*)': ?")
MAX_LINES = 4000   # verl's dump is a few hundred lines
MAX_VALUE = 200    # a longer value (a long list, a prompt) is not a setting a rule reads


class _Nesting:
    """The open keys of a nested configuration read line by line, each with the column it stands at."""

    def __init__(self) -> None:
        self._stack: list[tuple[int, str]] = []
        self._lines = 0
        self.active = False

    def _close(self, col: int) -> None:
        """A key at ``col`` closes every open key at that column or right of it."""
        while self._stack and self._stack[-1][0] >= col:
            self._stack.pop()

    def _dotted(self, key: str) -> str:
        return ".".join([k for _, k in self._stack] + [key])


class DictDump(_Nesting):
    """Feed each line; ``feed`` returns the (dotted key, value) pairs the line completes, or None when the line is not
    part of a dump (and a dump in progress ends there)."""

    def __init__(self) -> None:
        super().__init__()
        self.framework = "verl"   # EasyR1's config has a worker section where verl's has actor_rollout_ref

    def feed(self, text: str) -> list[tuple[str, Any]] | None:
        if _OPEN.match(text):
            self._stack, self._lines, self.active = [], 0, True
        elif not self.active:
            return None
        elif not text.strip() or not text[:1].isspace() or self._lines >= MAX_LINES:
            self.active = False
            return None
        self._lines += 1
        keys = list(_KEY.finditer(text))
        if not keys:
            # a list's later items ("'optimizer',"), or a value wrapped onto its own line: nothing to read
            if text.lstrip().startswith(("'", "[", "{", '"')) or text.strip()[:1].isdigit():
                return []
            self.active = False
            return None
        out: list[tuple[str, Any]] = []
        for i, m in enumerate(keys):
            col = m.start()
            self._close(col)
            if not self._stack and m.group(1) == "worker":
                self.framework = "easyr1"
            end = keys[i + 1].start() if i + 1 < len(keys) else len(text)
            raw = text[m.end():end].strip()
            if raw.startswith("{") or not raw:
                self._stack.append((col, m.group(1)))  # a nested dict, opening here or on the next line
                continue
            value = _literal(raw.rstrip(",} ").rstrip())
            if value is not _NOTHING:
                out.append((self._dotted(m.group(1)), value))
        return out


_NOTHING = object()


def _literal(raw: str) -> Any:
    """A printed literal's value, or _NOTHING (an unclosed list, a long value, an object's repr)."""
    if not raw or len(raw) > MAX_VALUE:
        return _NOTHING
    try:
        return ast.literal_eval(raw)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return _NOTHING


# a YAML line: an indented `key: value` (a comment after it), or a key that opens a nested block
_YAML = lazyre.compile(r"^(?P<indent> *)(?P<key>[A-Za-z_][\w.-]*):(?:[ \t]+(?P<value>[^\s#][^#]*?))?\s*(?:#.*)?$")
_SECTION = lazyre.compile(r"^(" + "|".join(SECTIONS) + r"):\s*(?:#.*)?$")


# the sections and keys only one of the two has: verl's actor_rollout_ref and critic, EasyR1's worker (examples/
# config.yaml at 0243608d) and its data/algorithm keys verl names otherwise (rollout_batch_size for verl's
# train_batch_size, format_prompt, online_filtering, disable_kl)
_OWN_SECTION = {"actor_rollout_ref": "verl", "critic": "verl", "worker": "easyr1"}
_EASYR1_KEYS = {"data": frozenset({"rollout_batch_size", "mini_rollout_batch_size", "format_prompt"}),
                "algorithm": frozenset({"disable_kl", "online_filtering"})}


class NestedYaml(_Nesting):
    """verl's and EasyR1's configuration pasted as YAML (EasyR1's examples/config.yaml, verl's ppo_trainer.yaml
    overrides file): top-level sections, nested by indentation, read into dotted keys as ``DictDump`` reads a printed
    dict. ``feed`` returns the pairs a line completes, or None when the line is not part of such a block."""

    def __init__(self) -> None:
        super().__init__()
        self.framework: str | None = None   # told by a section or a key only one of the two frameworks has

    def feed(self, text: str) -> list[tuple[str, Any]] | None:
        if _SECTION.match(text):
            if not self.active:
                self._lines, self.active = 0, True
            self._stack = [(0, text.split(":", 1)[0])]
            self.framework = _OWN_SECTION.get(self._stack[0][1], self.framework)
            return []
        if not self.active:
            return None
        if not text.strip() or text.lstrip().startswith("#"):
            return []
        m = _YAML.match(text)
        self._lines += 1
        if m is None or not m.group("indent") or self._lines >= MAX_LINES:
            self.active = False
            return None
        col = len(m.group("indent"))
        self._close(col)
        if not self._stack:
            self.active = False
            return None
        if m.group("value") is None:
            self._stack.append((col, m.group("key")))
            return []
        if len(self._stack) == 1 and m.group("key") in _EASYR1_KEYS.get(self._stack[0][1], ()):
            self.framework = "easyr1"
        raw = m.group("value").strip()
        value = _literal(raw)
        if value is _NOTHING:
            value = {"true": True, "false": False, "null": None, "~": None}.get(raw.lower(), raw)
        return [(self._dotted(m.group("key")), value)]


__all__ = ["LITERALS", "MAX_LINES", "OVERRIDE_LINE", "SECTIONS", "DictDump", "NestedYaml"]
