"""A library's check said in words, and the ways out of it (pure).

The raise-site index keeps the test above each ``raise`` as source text (``model_args.quantization_bit is not None and
finetuning_args.finetuning_type != 'lora'``). Quoted as it is, it reads as code to someone whose run failed; said in
words ("quantization_bit is set and finetuning_type is not 'lora'") it names the settings that clashed. Only tests made
of comparisons of settings with literals, boolean settings and ``and``/``or`` are said; anything else (a call, a
subscript, arithmetic) is left to the quoted source, since a wrong paraphrase is worse than the code.

The ways out are the negations of the terms of a test's top-level ``and`` that name settings a person sets: each held
when the check raised, so making any one of them false gets past it ("set finetuning_type to 'lora'", "unset
quantization_bit").
"""
from __future__ import annotations

import ast
import re

# the objects a check reads its settings from (``self.args.x``, ``model_args.x``, ``config.x``): a person sets ``x``
# (or the dotted path under ``config`` a Hydra override names), not the object
_HOLDER = re.compile(r"^(?:self\.)?(?:(?:\w+_)?args\.|config\.|cfg\.)?")
_WORDS = {ast.Eq: "is", ast.NotEq: "is not", ast.Gt: "is above", ast.GtE: "is at least", ast.Lt: "is below",
          ast.LtE: "is at most", ast.In: "is one of", ast.NotIn: "is not one of"}


def setting(node: ast.expr) -> str | None:
    """The name a person knows a setting by: the attribute chain without the object holding it; None for anything
    that is not a name or an attribute chain."""
    if not isinstance(node, (ast.Name, ast.Attribute)):
        return None
    text = _HOLDER.sub("", ast.unparse(node))
    # a private attribute (``self._is_actor``) is the object's state, not a setting
    return text if text and not text.rsplit(".", 1)[-1].startswith("_") else None


_HOLDERS_IN = re.compile(r"(?<![\w.])(?:self\.)?(?:(?:\w+_)?args\.|config\.|cfg\.)|(?<![\w.])self\.")


def spoken(expression: str) -> str:
    """An expression of settings with the objects holding them left out (``self.per_device_train_batch_size *
    num_processes`` -> ``per_device_train_batch_size * num_processes``)."""
    return _HOLDERS_IN.sub("", expression)


def _literal(node: ast.expr) -> str | None:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        # an enum member (AdvantageEstimator.GRPO) reads as itself
        return ast.unparse(node) if isinstance(node, ast.Attribute) and "." in ast.unparse(node) and \
            ast.unparse(node).split(".")[-1].isupper() else None
    if isinstance(value, (list, tuple, set, frozenset)):
        return ", ".join(repr(v) for v in value) if value else None
    return repr(value)


def _term(node: ast.expr) -> str | None:
    # a truth test reads as a setting's only on an attribute of the object holding the settings (``self.use_vllm``);
    # a local's (``unused_keys``, a list) is not something a person switches
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        name = setting(node.operand) if isinstance(node.operand, ast.Attribute) else None
        return f"`{name}` is off" if name else None
    if isinstance(node, (ast.Name, ast.Attribute)):
        name = setting(node) if isinstance(node, ast.Attribute) else None
        return f"`{name}` is on" if name else None
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        return None
    left, op, right = node.left, node.ops[0], node.comparators[0]
    name = setting(left)
    if name is None:
        return None
    if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
        return f"`{name}` is {'not set' if isinstance(op, ast.Is) else 'set'}"
    other = setting(right)
    if other is not None and type(op) in _ORDER:  # two settings compared: "train_batch_size is below ppo_mini_batch_size"
        return f"`{name}` {_WORDS[type(op)]} `{other}`"
    value = _literal(right)
    if value is None or type(op) not in _WORDS:
        return None
    if isinstance(op, (ast.In, ast.NotIn)):
        value = f"({value})"
    return f"`{name}` {_WORDS[type(op)]} {value}"


def plain(condition: str) -> str | None:
    """The test in words, or None when a part of it is not a comparison of a setting with a literal, a boolean
    setting, or ``and``/``or`` of those."""
    try:
        tree = ast.parse(condition, mode="eval").body
    except SyntaxError:
        return None
    return _said(tree, top=True)


def _said(node: ast.expr, top: bool = False) -> str | None:
    if isinstance(node, ast.BoolOp):
        parts = [_said(v) for v in node.values]
        if any(p is None for p in parts):
            return None
        # a test that reads one setting twice (a local and the object's field of one name) says it once, and "X is
        # set and X is below 1" is "X is below 1"
        said = list(dict.fromkeys(p for p in parts if p))
        if isinstance(node.op, ast.And):
            said = [p for p in said if not (p.endswith("` is set") and
                                            any(o != p and o.startswith(p[:-len(" is set")] + " ") for o in said))]
        joined = (" and " if isinstance(node.op, ast.And) else " or ").join(said)
        return joined if top else f"({joined})"
    return _term(node)


# a held comparison of two settings a <op> b, and what makes it false: (which side is set, the bound it is set to)
# by the other side's value; a < b is false once b <= a ("set b to a's value or less") or a >= b
_ORDER = {ast.Lt: (("{b}", "to {a} or less"), ("{a}", "to {b} or more")),
          ast.LtE: (("{b}", "below {a}"), ("{a}", "above {b}")),
          ast.Gt: (("{b}", "to {a} or more"), ("{a}", "to {b} or less")),
          ast.GtE: (("{b}", "above {a}"), ("{a}", "below {b}")),
          ast.NotEq: (("{b}", "to {a}"), ("{a}", "to {b}"))}


def _between(name: str, op: ast.cmpop, other: str, settable: set[str], values: dict[str, str]) -> list[str]:
    """The ways out of a held ``name <op> other``: set either side (a person sets) to the bound the other's value
    gives; without that value, the bound is the other setting itself."""
    out = []
    for side, bound in _ORDER[type(op)]:
        target = side.format(a=name, b=other)
        if target not in settable:
            continue
        a = values.get(name, f"`{name}`")
        b = values.get(other, f"`{other}`")
        out.append(f"set `{target}` " + bound.format(a=a, b=b))
    return out


def way_out(term: ast.expr, settable: set[str], values: dict[str, str] | None = None) -> str | None:
    """What makes one held term of a check false, for a setting a person sets; None for a term that is not one.
    ``values``: the settings' values the run or the message shows (a comparison of two settings is said with them)."""
    if isinstance(term, ast.UnaryOp) and isinstance(term.op, ast.Not):
        name = setting(term.operand)
        return f"turn `{name}` on" if name in settable else None
    name = setting(term)
    if name is not None:
        return f"turn `{name}` off" if name in settable else None
    if not isinstance(term, ast.Compare) or len(term.ops) != 1:
        return None
    name = setting(term.left)
    op, right = term.ops[0], term.comparators[0]
    other = setting(right)
    if name is not None and other is not None and type(op) in _ORDER:
        ways = _between(name, op, other, settable, values or {})
        return " or ".join(ways) if ways else None
    if name not in settable:
        return None
    # only negations that name what to do: "X is not None" -> leave X unset, "X != 'v'" -> set X to 'v', a bound ->
    # a value on its other side; not "X is None" (set X to what? another check may refuse both set) nor "X == 'v'"
    # (usually what the run is for: stage == 'ppo')
    if isinstance(op, ast.IsNot) and isinstance(right, ast.Constant) and right.value is None:
        return f"leave `{name}` unset"
    value = _literal(right)
    if value is None:
        return None
    name = f"`{name}`"
    return {ast.NotEq: f"set {name} to {value}",
            ast.Gt: f"set {name} to {value} or less", ast.GtE: f"set {name} below {value}",
            ast.Lt: f"set {name} to {value} or more", ast.LtE: f"set {name} above {value}",
            ast.NotIn: f"set {name} to one of ({value})"}.get(type(op))


__all__ = ["plain", "setting", "spoken", "way_out"]
