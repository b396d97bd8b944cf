"""Message sites of one Python source file, read with ``ast``: what tools/build_raise_index.py records.

A site is ``raise X(msg)``, ``assert cond, msg``, ``logger.error/warning/warn/critical/exception/fatal``
(and their ``*_once`` forms, on any receiver whose name holds "log": logger, logging, self.logger),
``warnings.warn(msg, Category)`` and ``sys.exit(msg)``. The message expression becomes a template:
literal text with typed holes ``{int}``, ``{float}``, ``{name}``, ``{quoted}``, ``{any}`` (literal braces
doubled). Literals, f-strings, ``%`` formatting, ``.format``, ``+`` concatenation, ``"sep".join([...])``
and a local variable assigned one of those earlier in the same function are read; anything else is a
``{any}`` hole, so a message built at run time keeps its literal parts.

Each site also records the condition under which it is reached, as source text: the test of the ``if`` (or the
negated test, in its ``else``) enclosing it in its function, the two innermost joined by ``and``; ``except T`` for a
site in an exception handler; the negated expression of an ``assert``. It is what a report quotes as "raised when"
(a message's holes name some of its operands, a run's flags others); '' when the site is not guarded or the text is
too long to read.
"""
from __future__ import annotations

import ast
import re
import string

LOG_METHODS = {"error": "error", "exception": "error", "critical": "critical", "fatal": "critical",
               "warning": "warning", "warn": "warning", "warning_once": "warning", "warn_once": "warning",
               "error_once": "error", "warning_rank0": "warning", "warning_once_rank0": "warning"}
_WS = re.compile(r"\s+")
_PCT = re.compile(r"%(?:\((\w+)\))?[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?[hlL]?([diouxXeEfFgGcrsa%])")
_MAX_NAME = 60
MAX_CONDITION = 200   # longer tests (a dozen clauses) say nothing a person reads at a glance
_INVERSE = {ast.Eq: ast.NotEq, ast.NotEq: ast.Eq, ast.Lt: ast.GtE, ast.GtE: ast.Lt, ast.Gt: ast.LtE, ast.LtE: ast.Gt,
            ast.In: ast.NotIn, ast.NotIn: ast.In, ast.Is: ast.IsNot, ast.IsNot: ast.Is}

Piece = tuple  # ("lit", text) | ("hole", type, name)


def _hole(typ: str, node_or_name) -> Piece:
    name = node_or_name if isinstance(node_or_name, str) else ast.unparse(node_or_name)
    return ("hole", typ, name[:_MAX_NAME])


def _expr_type(node: ast.AST) -> str:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "len":
        return "int"
    if isinstance(node, ast.Attribute) and node.attr in ("__name__", "__qualname__"):
        return "name"
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return "name"
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return "int"
    return "any"


def _spec_type(spec: str, conversion: str | None, default: str) -> str:
    if conversion == "r":
        return "quoted"
    spec = spec.strip()
    if spec and spec[-1] in "dnxXob":
        return "int"
    if spec and spec[-1] in "eEfFgG%":
        return "float"
    return default


def _pct_type(conv: str) -> str:
    return {"d": "int", "i": "int", "u": "int", "r": "quoted"}.get(conv, "float" if conv in "eEfFgG" else "any")


class _Reader:
    """Turns message expressions into pieces; ``names`` maps local variables to their pieces."""

    def __init__(self, names: dict[str, list[Piece]]):
        self.names = names

    def pieces(self, node: ast.AST, depth: int = 0) -> list[Piece]:
        if depth > 12:
            return [_hole("any", node)]
        if isinstance(node, ast.Constant):
            return [("lit", node.value)] if isinstance(node.value, str) else [_hole(_expr_type(node), node)]
        if isinstance(node, ast.JoinedStr):
            out: list[Piece] = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(("lit", str(v.value)))
                elif isinstance(v, ast.FormattedValue):
                    spec = ast.unparse(v.format_spec)[2:-1] if v.format_spec is not None else ""
                    conv = chr(v.conversion) if v.conversion and v.conversion > 0 else None
                    out.append(_hole(_spec_type(spec, conv, _expr_type(v.value)), v.value))
            return out
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and self.stringy(node):
            return self.pieces(node.left, depth + 1) + self.pieces(node.right, depth + 1)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
                and isinstance(node.left.value, str):
            args = node.right.elts if isinstance(node.right, ast.Tuple) else [node.right]
            return percent(node.left.value, args)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            base = node.func.value
            if node.func.attr == "format" and isinstance(base, ast.Constant) and isinstance(base.value, str):
                return fmt_method(base.value, node.args, {k.arg: k.value for k in node.keywords if k.arg})
            if node.func.attr == "join" and isinstance(base, ast.Constant) and isinstance(base.value, str) \
                    and len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)):
                out = []
                for i, e in enumerate(node.args[0].elts):
                    if i:
                        out.append(("lit", base.value))
                    out += self.pieces(e, depth + 1)
                return out
        if isinstance(node, ast.Name) and node.id in self.names:
            return list(self.names[node.id])
        return [_hole(_expr_type(node), node)]

    def stringy(self, node: ast.AST) -> bool:
        if isinstance(node, (ast.JoinedStr,)) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            return self.stringy(node.left) or (isinstance(node.op, ast.Add) and self.stringy(node.right))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "join"):
            return True
        return isinstance(node, ast.Name) and node.id in self.names


def percent(fmt: str, args: list[ast.AST]) -> list[Piece]:
    out: list[Piece] = []
    pos, i = 0, 0
    for m in _PCT.finditer(fmt):
        out.append(("lit", fmt[pos:m.start()]))
        pos = m.end()
        if m.group(2) == "%":
            out.append(("lit", "%"))
            continue
        name = m.group(1) or (ast.unparse(args[i]) if i < len(args) else "?")
        if not m.group(1):
            i += 1
        out.append(_hole(_pct_type(m.group(2)), name))
    out.append(("lit", fmt[pos:]))
    return out


def fmt_method(fmt: str, args: list[ast.AST], kwargs: dict[str, ast.AST]) -> list[Piece]:
    out: list[Piece] = []
    auto = 0
    try:
        parsed = list(string.Formatter().parse(fmt))
    except ValueError:
        return [("lit", fmt)]
    for lit, field, spec, conv in parsed:
        out.append(("lit", lit))
        if field is None:
            continue
        head = re.split(r"[.\[]", field, maxsplit=1)[0]
        if head == "":
            node = args[auto] if auto < len(args) else None
            auto += 1
        elif head.isdigit():
            node = args[int(head)] if int(head) < len(args) else None
        else:
            node = kwargs.get(head)
        default = _expr_type(node) if node is not None and field == head else "any"
        out.append(_hole(_spec_type(spec or "", conv, default), ast.unparse(node) if node is not None else field))
    return out


def template(pieces: list[Piece]) -> tuple[str, list[str]]:
    """(template, hole names): whitespace runs collapsed, adjacent holes merged into one {any}."""
    parts: list[str] = []
    holes: list[str] = []
    last_hole = False
    for p in pieces:
        if p[0] == "lit":
            if p[1]:
                parts.append(_WS.sub(" ", p[1]).replace("{", "{{").replace("}", "}}"))
                last_hole = False
        elif last_hole:
            parts[-1] = "{any}"
            holes[-1] = f"{holes[-1]}+{p[2]}"
        else:
            parts.append("{" + p[1] + "}")
            holes.append(p[2])
            last_hole = True
    return _WS.sub(" ", "".join(parts)).strip(), holes


def negated(test: ast.expr) -> str:
    """The source text of ``not test``, written as a person would (``a != b`` for ``not a == b``)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ast.unparse(test.operand)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in _INVERSE:
        return ast.unparse(ast.Compare(test.left, [_INVERSE[type(test.ops[0])]()], test.comparators))
    text = ast.unparse(test)
    return f"not {text}" if isinstance(test, (ast.Name, ast.Attribute, ast.Call, ast.Subscript)) else f"not ({text})"


Guard = tuple  # (the test's text, the same text as one operand of ``and``)


def _guard(test: ast.expr | None, text: str | None = None) -> Guard:
    """A guard of ``test`` (or a ready ``text``): an ``or`` or a conditional expression is parenthesised when it
    is joined to another test."""
    text = ast.unparse(test) if text is None else text
    wrap = isinstance(test, (ast.IfExp, ast.Lambda, ast.NamedExpr)) or (
        isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or))
    return text, f"({text})" if wrap else text


def _condition(guards: list[Guard]) -> str:
    """The two innermost guards of a site, outer first; '' when there is none or the text is too long. A handler
    (``except T``) is told alone: a test joined to it by ``and`` would read as an expression it is not."""
    last = guards[-2:]
    if len(last) == 2 and any(g[0].startswith("except") for g in last):
        last = last[1:]
    text = last[0][0] if len(last) == 1 else " and ".join(g[1] for g in last)
    if len(text) > MAX_CONDITION:
        text = guards[-1][0] if guards else ""
    return text if len(text) <= MAX_CONDITION else ""


def _log_level(call: ast.Call) -> str | None:
    f = call.func
    if not isinstance(f, ast.Attribute) or f.attr not in LOG_METHODS:
        return None
    recv = f.value
    name = recv.attr if isinstance(recv, ast.Attribute) else recv.id if isinstance(recv, ast.Name) else ""
    return LOG_METHODS[f.attr] if "log" in name.lower() else None


def _call_name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


class _Visitor(ast.NodeVisitor):
    def __init__(self):
        self.stack: list[str] = []
        self.scopes: list[dict[str, list[Piece]]] = [{}]
        self.guards: list[Guard] = []   # the conditions enclosing the node visited, in its function
        self.sites: list[tuple[str, str, str, list[str], str]] = []  # (where, kind, template, holes, condition)

    def _scope(self, node, kind: str):
        self.stack.append(node.name)
        self.scopes.append({} if kind == "def" else self.scopes[-1])
        outer, self.guards = self.guards, []
        self.generic_visit(node)
        self.guards = outer
        self.scopes.pop()
        self.stack.pop()

    def _under(self, guard: Guard | None, nodes: list[ast.stmt]) -> None:
        if guard is not None:
            self.guards.append(guard)
        for n in nodes:
            self.visit(n)
        if guard is not None:
            self.guards.pop()

    def visit_If(self, node, chained: bool = False):
        self.visit(node.test)
        self._under(_guard(node.test), node.body)
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            self.visit_If(node.orelse[0], chained=True)  # an elif: its own test is what leads into its body
        elif node.orelse:
            # the else of an elif chain is reached when every test above failed: the last one's negation alone
            # would say less than that, so it adds no guard
            self._under(None if chained else _guard(None, negated(node.test)), node.orelse)

    def visit_ExceptHandler(self, node):
        self._under(_guard(None, f"except {ast.unparse(node.type)}" if node.type is not None else "except"), node.body)

    def visit_ClassDef(self, node):
        self._scope(node, "class")

    def visit_FunctionDef(self, node):
        self._scope(node, "def")

    visit_AsyncFunctionDef = visit_FunctionDef

    def _add(self, kind: str, msg: ast.AST | None, fmt_args: list[ast.AST] | None = None,
             guard: Guard | None = None) -> None:
        if msg is None or not kind:
            return
        reader = _Reader(self.scopes[-1])
        if fmt_args and isinstance(msg, ast.Constant) and isinstance(msg.value, str):
            pieces = percent(msg.value, fmt_args)
        else:
            pieces = reader.pieces(msg)
        tpl, holes = template(pieces)
        if tpl:
            cond = _condition(self.guards + [guard] if guard else self.guards)
            self.sites.append((".".join(self.stack) or "<module>", kind, tpl, holes, cond))

    def visit_Assign(self, node):
        if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            reader = _Reader(self.scopes[-1])
            if reader.stringy(node.value):
                self.scopes[-1][node.targets[0].id] = reader.pieces(node.value)
            else:
                self.scopes[-1].pop(node.targets[0].id, None)
        self.generic_visit(node)

    def visit_AugAssign(self, node):
        if isinstance(node.target, ast.Name) and isinstance(node.op, ast.Add) and node.target.id in self.scopes[-1]:
            reader = _Reader(self.scopes[-1])
            self.scopes[-1][node.target.id] = self.scopes[-1][node.target.id] + reader.pieces(node.value)
        self.generic_visit(node)

    def visit_Raise(self, node):
        exc = node.exc
        if isinstance(exc, ast.Call):
            msg = exc.args[0] if exc.args else next((k.value for k in exc.keywords if k.arg in ("msg", "message")), None)
            self._add(_call_name(exc), msg)
        self.generic_visit(node)

    def visit_Assert(self, node):
        self._add("AssertionError", node.msg, guard=_guard(None, negated(node.test)))
        self.generic_visit(node)

    def visit_Call(self, node):
        level = _log_level(node)
        f = node.func
        if level and node.args:
            self._add(level, node.args[0], node.args[1:] or None)
        elif _call_name(f) == "warn" and node.args and not (isinstance(f, ast.Attribute) and _log_level(node)):
            cat = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "category"), None)
            self._add(_call_name(cat) if cat is not None else "UserWarning", node.args[0])
        elif isinstance(f, ast.Attribute) and f.attr == "exit" and isinstance(f.value, ast.Name) \
                and f.value.id == "sys" and node.args and _Reader(self.scopes[-1]).stringy(node.args[0]):
            self._add("SystemExit", node.args[0])
        self.generic_visit(node)


def sites(source: str | bytes) -> list[tuple[str, str, str, list[str], str]]:
    """(where, kind, template, hole names, condition) of every message site of one file; [] when it does not
    parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    v = _Visitor()
    v.visit(tree)
    return v.sites
