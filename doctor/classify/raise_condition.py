"""The check that raised a message, read with the run's values (pure).

tools/raise_index_ast.py records, for each message site of the indexed libraries, the condition that leads to it in
the newest release holding it: the ``if`` test above a ``raise`` (negated in its ``else``), the negated expression of
an ``assert``, ``except T`` for a site in a handler. A template's holes are named by the expressions they print, so
the values a message shows bind some of the condition's operands; the run's arguments of the same name bind others.
Said together, they name the violated condition with the values behind it, where the bare message only says that
something failed.
"""
from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .component import PACKAGES, possessive
from .condition_words import plain, setting, spoken, way_out
from .raise_sites import SiteMatch

# operand names too generic to be a run argument a person sets (a local `model`, `self.config`)
_GENERIC = frozenset({"self", "args", "kwargs", "config", "model", "module", "value", "name", "key", "data", "x", "y"})
# swiftconfig.RunConfig.provenance's sources, as a sentence names them
_SOURCE = {"command": "the command", "launcher": "the launch script", "dump": "the arguments the log printed",
           "args.json": "args.json"}


@dataclass(frozen=True)
class ConditionReading:
    condition: str                                  # the source text, as the newest release holding the site has it
    package: str
    versions: str                                   # "0.15-0.16,0.18": the indexed releases with this wording
    function: str
    module: str
    from_message: tuple[tuple[str, str], ...] = ()  # (operand, value) the message printed
    from_run: tuple[tuple[str, str, str], ...] = ()  # (argument, value, where the run showed it) the test agrees with
    implied: tuple[tuple[str, str], ...] = ()       # (operand, value) an `==` term of the test that held must have had
    settable: tuple[str, ...] = ()                  # the arguments among them a person sets (the fix names them)

    def sentence(self) -> str:
        """The test that leads to the raise, said with the values the log shows for it (which releases hold it is the
        report's raised-by part). A handler's site says that the exception it replaces is the cause."""
        where = f"{possessive(PACKAGES.get(self.package, self.package))} {self.function.rsplit('.', 1)[-1]}"
        if self.condition.startswith("except"):
            caught = " or ".join(t.strip() for t in self.condition[len("except"):].strip().strip("()").split(","))
            article = "an" if caught[:1].lower() in tuple("aeiou") else "a"
            return (f"{where} raises it while handling {article + ' ' + caught if caught else 'another exception'}: "
                    f"the exception it replaces (printed above it, \"During handling of the above exception\") is "
                    f"the cause.")
        said = [f"`{spoken(op)}` is {value}" for op, value in self.from_message]
        said += [f"the run's {arg} is {value} ({where_read})" for arg, value, where_read in self.from_run]
        words = plain(self.condition)
        # said in words when every part of the test can be (settings against literals); else its source, quoted
        text = (f"{where} raises it when {words}" if words else
                f"{where} raises it when this check in its source holds: `{self.condition}`") + \
            ("; here " + ", ".join(said) if said else "")
        if self.implied:
            text += ("; that condition held here, so " + ", ".join(f"`{spoken(op)}` was {value}"
                                                                 for op, value in self.implied))
        return text + "."

    def fix(self) -> str | None:
        """What to change: the ways out of the test (each held term of its top-level ``and`` that names a setting a
        person sets, negated) when it can be said so; else, when the test names arguments a person sets and the run
        shows one of them, those values; None otherwise (values the test implies alone would be a guess at which
        one to change)."""
        tree = _parse(self.condition)
        if tree is not None:
            names = {setting(op) for op in _operand_nodes(tree) if _settable(ast.unparse(op), self.function)}
            names |= {setting(op) for op in _operand_nodes(tree)
                      if ast.unparse(op).rsplit(".", 1)[-1] in self.settable}
            settable = {n for n in names if n}
            values = {spoken(op): value for op, value in self.from_message}
            values.update((arg, value) for arg, value, _ in self.from_run)
            parts = terms(tree)
            # "X is not None and X not in TEMPLATES": the first term guards the second, the check is about X's value;
            # leaving X unset is no way out of it (the run needs X), so a guarded setting gives only its other terms'
            guarded = {setting(t.left) for t in parts if isinstance(t, ast.Compare) and len(t.ops) == 1
                       and isinstance(t.ops[0], ast.IsNot)
                       and sum(setting(o) == setting(t.left) for p in parts for o in _operand_nodes(p)) > 1}
            ways = list(dict.fromkeys(
                w for t in parts if not (isinstance(t, ast.Compare) and isinstance(t.ops[0], ast.IsNot)
                                         and setting(t.left) in guarded)
                and (w := way_out(t, settable, values)))) if settable else []
            # the values to set first, the switches that step around the check last
            ways.sort(key=lambda w: w.startswith("turn "))
            if ways:
                known = [f"{arg} = {value}" for arg, value, _ in self.from_run]
                held = f" (the run has {', '.join(known)})" if known else ""
                return (f"Get past this check{held}: {ways[0]}, then rerun." if len(ways) == 1 else
                        f"Get past this check{held} with any one of: {'; '.join(ways)}; then rerun.")
        if not any(arg in self.settable for arg, _, _ in self.from_run):
            return None
        known = {arg: value for arg, value, _ in self.from_run}
        known.update((op.rsplit(".", 1)[-1], value) for op, value in self.implied)
        values = ", ".join(f"{arg} = {known[arg]}" for arg in self.settable if arg in known)
        which = "it" if len(self.settable) == 1 else "one of them"
        words = plain(self.condition)
        check = f"The check ({words})" if words else f"The check `{self.condition}`"
        return f"{check} held with {values}: change {which} so that it no longer holds, then rerun."


def _operand_nodes(tree: ast.expr) -> list[ast.expr]:
    """The names and attribute chains of a test, as nodes (a chain is one operand)."""
    out: list[ast.expr] = []

    def walk(node: ast.AST) -> None:
        if isinstance(node, (ast.Name, ast.Attribute)):
            out.append(node)
            return
        for child in ast.iter_child_nodes(node):
            walk(child)

    walk(tree)
    return out


def _short(value: str, limit: int = 80) -> str:
    return value if len(value) <= limit else value[:limit - 3].rstrip() + "..."


def operands(condition: str) -> list[str]:
    """The names and attribute chains of a condition (``self.args.max_len``, ``num_generations``), outermost
    first; [] when the text is not an expression (an ``except`` clause)."""
    tree = _parse(condition)
    out: list[str] = []

    def walk(node: ast.AST) -> None:
        if isinstance(node, (ast.Name, ast.Attribute)):
            text = ast.unparse(node)
            if text not in out:
                out.append(text)
            return  # a chain is one operand: `self.args` inside `self.args.x` is not another
        for child in ast.iter_child_nodes(node):
            walk(child)

    if tree is not None:
        walk(tree)
    return out


def _parse(condition: str) -> ast.expr | None:
    try:
        return ast.parse(condition, mode="eval").body
    except SyntaxError:
        return None


def terms(test: ast.expr) -> list[ast.expr]:
    """The terms of a test's top-level ``and`` (each held, since the test did)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [t for v in test.values for t in terms(v)]
    return [test]


_NO = object()


def _comparison(term: ast.expr) -> tuple[str, ast.cmpop, Any] | None:
    """(operand, operator, literal) of a term comparing one name or attribute chain with a literal."""
    if not isinstance(term, ast.Compare) or len(term.ops) != 1:
        return None
    left, right, op = term.left, term.comparators[0], term.ops[0]
    if not isinstance(left, (ast.Name, ast.Attribute)):
        if isinstance(right, (ast.Name, ast.Attribute)) and isinstance(op, (ast.Eq, ast.NotEq)):
            left, right = right, left
        else:
            return None
    try:
        literal = ast.literal_eval(right)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None
    return ast.unparse(left), op, literal


def _as(value: str, like: Any) -> Any:
    """A value read from a log as the type of the literal it is compared with; _NO when it cannot be one."""
    text = value.strip().strip("'\"")
    if isinstance(like, bool) or like is None:
        return {"true": True, "false": False, "none": None}.get(text.lower(), _NO)
    if isinstance(like, (int, float)):
        try:
            return float(text)
        except ValueError:
            return _NO
    return text if isinstance(like, str) else _NO


def _holds(op: ast.cmpop, value: str, literal: Any) -> bool | None:
    """Whether ``value <op> literal`` holds; None when it cannot be told."""
    if isinstance(op, (ast.In, ast.NotIn)) and isinstance(literal, (set, frozenset, tuple, list)):
        members = [m for m in literal if isinstance(m, (str, int, float))]
        if not members:
            return None
        got = _as(value, members[0])
        if got is _NO:
            return None
        inside = got in {m if isinstance(m, str) else float(m) for m in members}
        return inside if isinstance(op, ast.In) else not inside
    got = _as(value, literal)
    if got is _NO:
        return None
    want = float(literal) if isinstance(literal, (int, float)) and not isinstance(literal, bool) else literal
    table = {ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Is: lambda a, b: a is b,
             ast.IsNot: lambda a, b: a is not b}
    if type(op) in table:
        return table[type(op)](got, want)
    if isinstance(got, float) and isinstance(want, float):
        order = {ast.Lt: got < want, ast.LtE: got <= want, ast.Gt: got > want, ast.GtE: got >= want}
        return order.get(type(op))
    return None


def _in(operand: str, condition: str) -> bool:
    return re.search(r"(?<![\w.])" + re.escape(operand) + r"(?![\w(])", condition) is not None


# a class whose fields are the command's flags (transformers' HfArgumentParser and the frameworks built on it parse
# dataclass fields into flags): GRPOConfig, TrainingArguments, FinetuningArguments, RLHFArguments...
_ARGUMENT_CLASS = re.compile(r"^\w*(?:Arguments|Args|Config)\.")
_ARGUMENT_CHAIN = re.compile(r"^(?:self\.)?(?:\w+_)?args\.\w+$")


def _settable(operand: str, function: str) -> bool:
    """Whether an operand is a run argument: a field of an argument class read in its own method
    (``self.stage`` in ``FinetuningArguments.__post_init__``), or of an arguments object (``args.x``)."""
    return bool(_ARGUMENT_CHAIN.match(operand)) or (
        operand.count(".") == 1 and operand.startswith("self.") and bool(_ARGUMENT_CLASS.match(function)))


def read(site: SiteMatch, args: Mapping[str, Any], provenance: Mapping[str, str]) -> ConditionReading | None:
    """The reading of ``site``'s condition with the message's and the run's values, each checked against the test
    (it held, so every term of its top-level ``and`` did: a run value a term refuses is another launch's, and is
    not said). None when the site has no recorded condition, the message was cut inside its template (the holes
    may hold a cut value), or a value the message printed contradicts the test (another release's check)."""
    condition = site.condition.replace("`", "'")
    if not condition or site.cut:
        return None
    base = ConditionReading(condition=condition, package=site.package, versions=site.versions, function=site.where,
                            module=site.module)
    tree = _parse(condition)
    if tree is None:
        return base
    checks: dict[str, list[tuple[ast.cmpop, Any]]] = {}
    parts = terms(tree)
    for term in parts:
        got = _comparison(term)
        if got is not None:
            checks.setdefault(got[0], []).append(got[1:])

    def refused(operand: str, value: str) -> bool:
        return any(_holds(op, value, literal) is False for op, literal in checks.get(operand, ()))

    from_message = []
    for op, value in site.holes.items():
        if value and "+" not in op and _in(op, condition):
            if refused(op, value):
                return None
            from_message.append((op, _short(value)))
    bound = {op for op, _ in from_message}
    from_run, settable = [], []
    for op in operands(condition):
        arg = op.rsplit(".", 1)[-1]
        if arg in _GENERIC or len(arg) < 4 or arg not in args or any(a == arg for a, _, _ in from_run):
            continue
        value = args[arg]
        if value is None or str(value).strip() in ("", "None") or refused(op, str(value)):
            continue
        bound.add(op)
        from_run.append((arg, _short(str(value)), f"read from {_SOURCE.get(provenance.get(arg, ''), 'the run')}"))
        if _settable(op, site.where) or op == arg:
            settable.append(arg)
    implied = []
    for op, found in checks.items():
        equal = [literal for cmp, literal in found if isinstance(cmp, (ast.Eq, ast.Is))]
        if op not in bound and equal and len(parts) > 1:  # a lone term says itself what held
            implied.append((op, repr(equal[0])))
            if _settable(op, site.where) and op.rsplit(".", 1)[-1] not in settable:
                settable.append(op.rsplit(".", 1)[-1])
    return ConditionReading(condition=condition, package=site.package, versions=site.versions, function=site.where,
                            module=site.module, from_message=tuple(from_message), from_run=tuple(from_run),
                            implied=tuple(implied), settable=tuple(settable))


__all__ = ["ConditionReading", "operands", "read", "terms"]
