"""Read the line that failed: the condition an exception says was violated, from its message and the source line
the traceback printed under its innermost frame (pure: an ExceptionInfo in, sentences out).

CPython prints the failing statement under each frame; its words say what was violated: the expression of an
``assert``, the operand that was ``None`` in a subscript, call or attribute, the key a ``KeyError`` names, the sizes
of a shape mismatch (torch's ``The size of tensor a (X) must match the size of tensor b (Y) at non-singleton
dimension D`` and ``mat1 and mat2 shapes cannot be multiplied (AxB and CxD)``, aten/src/ATen/ExpandUtils.cpp and
native/LinearAlgebra.cpp), an ``ImportError`` whose module has ``(unknown location)`` (CPython's wording for a
namespace package: a folder without ``__init__.py`` that shadows the installed package), the divisor that was 0, the
sequence an index ran past, the value that unpacked to another number of names. Each sentence quotes what it read,
so a person can check it against the log.
"""
from __future__ import annotations

import re

from .. import lazyre
from ..signals import ExceptionInfo

# the message may open a parenthesis continued on the next lines (`assert a % b == 0, (`), which CPython prints alone
_ASSERT = lazyre.compile(r"^assert\s+(?P<expr>.+?)(?:,\s*(?P<msg>[fbru]?['\"].*|\(.*))?$")
_IS_NOT_NONE = lazyre.compile(r"^(?P<x>[\w.\[\]'\"()]+)\s+is\s+not\s+None$")
_COMPARE = lazyre.compile(r"^(?P<a>.+?)\s*(?P<op>==|!=|<=|>=|<|>|\bin\b|\bnot in\b)\s*(?P<b>.+)$")
_NONE_USE = lazyre.compile(r"'NoneType' object (?:is not (?P<what>subscriptable|iterable|callable|an iterator)|has no attribute "
                       r"'(?P<attr>\w+)')")
# the operand of builtin next() (Python/bltinmodule.c builtin_next: "'%.200s' object is not an iterator") and of a
# for loop or unpacking ("'NoneType' object is not iterable", Objects/abstract.c PyObject_GetIter)
_NEXT_ARG = lazyre.compile(r"\bnext\(\s*(?P<x>[\w.]+(?:\[[^\[\]]{0,40}\])*)\s*[,)]")
_FOR_IN = lazyre.compile(r"^(?:async\s+)?for\s+.+?\s+in\s+(?P<x>[\w.]+(?:\[[^\[\]]{0,40}\])*)\s*:")
# int() or float() of None (CPython Objects/abstract.c PyNumber_Long: "int() argument must be a string, a bytes-like
# object or a real number, not 'NoneType'"; floatobject.c: "float() argument must be a string or a real number, ...")
_CONVERT_NONE = lazyre.compile(r"^(?P<fn>int|float)\(\) argument must be .*, not 'NoneType'")
_CONVERT_ARG = lazyre.compile(r"\b(?P<fn>int|float)\(\s*(?P<x>[\w.]+(?:\[[^\[\]]{0,40}\])*)\s*\)")
# an option read from parsed arguments or a config object: `args.output_length`, `self.args.x`, `cfg.train.lr`
_OPTION = lazyre.compile(r"^(?:self\.)?(?:args|opt|opts|options|cfg|config|conf|hparams|training_args)\.(?P<name>\w+)")
_KEY = lazyre.compile(r"^(?P<q>['\"])(?P<key>[^'\"]{1,80})(?P=q)$")
_SIZE = lazyre.compile(r"The size of tensor a \((?P<a>\d+)\) must match the size of tensor b \((?P<b>\d+)\) at "
                   r"non-singleton dimension (?P<d>\d+)")
_MATMUL = lazyre.compile(r"mat1 and mat2 shapes cannot be multiplied \((?P<m>\d+)x(?P<k1>\d+) and (?P<k2>\d+)x(?P<n>\d+)\)")
_UNKNOWN_LOCATION = lazyre.compile(r"cannot import name '(?P<name>\w+)' from '(?P<mod>[\w.]+)' \(unknown location\)")


def _code(exc: ExceptionInfo) -> str:
    return exc.frames[-1].code.strip() if exc.frames and exc.frames[-1].code else ""


def _operand_before(code: str, token: str) -> str | None:
    """The expression right before ``token`` in a source line (``batch["x"]`` before ``[0]``, ``model`` before
    ``.config``)."""
    i = code.find(token)
    if i <= 0:
        return None
    m = re.search(r"([\w.]+(?:\[[^\[\]]{0,40}\])*)$", code[:i])
    return m.group(1) if m else None


def _chain(code: str, operand: str) -> list[str]:
    """``batch``, ``batch["images"]`` for ``batch["images"][0]``: each expression a subscript was applied to."""
    start = code.find(operand)
    m = re.match(r"[\w.]+((?:\[[^\[\]]{0,40}\])+)", code[start:])
    if not m:
        return [operand]
    base = code[start:start + m.start(1)]
    subs = re.findall(r"\[[^\[\]]{0,40}\]", m.group(1))
    return [base + "".join(subs[:i]) for i in range(len(subs))]


# CPython's arithmetic by zero (Objects/longobject.c "division by zero", "integer division or modulo by zero" before
# 3.12, "integer modulo by zero"; Objects/floatobject.c "float division by zero", "float modulo", "float floor division
# by zero"), a sequence index past its end (Objects/listobject.c, tupleobject.c, unicodeobject.c "... index out of
# range") and an unpacking of the wrong length (Python/ceval.c "too many values to unpack (expected N)", "not enough
# values to unpack (expected N, got M)")
_BY_ZERO = lazyre.compile(r"^(?:integer |float )?(?:division|modulo|floor division)(?: or modulo)? by zero$|^float modulo$")
_OUT_OF_RANGE = lazyre.compile(r"^(?:list|tuple|string) index out of range$")
_UNPACK = lazyre.compile(r"^(?P<how>too many|not enough) values to unpack \(expected (?P<n>\d+)(?:, got (?P<got>\d+))?\)$")
_OPERAND = r"[\w.]+(?:\([^()]{0,60}\))?(?:\[[^\[\]]{0,40}\])*"
_DIVISOR_TEXT = lazyre.compile(r"(?<![/*])(?://|/|%)\s*(?P<x>\(?" + _OPERAND + r"\)?)")
_SUBSCRIPT_TEXT = lazyre.compile(r"(?P<x>[A-Za-z_][\w.]*(?:\([^()]{0,60}\))?)\[(?P<i>[^\[\]]{1,40})\]")
_LEN = lazyre.compile(r"^\(?len\((?P<x>.+)\)\)?$")
# Objects/abstract.c binop_type_error and Objects/object.c do_richcompare: the operator and both operands' types
_OPERAND_TYPES = lazyre.compile(r"^unsupported operand type\(s\) for (?P<op>\S+): '(?P<a>[\w.]+)' and '(?P<b>[\w.]+)'$"
                                r"|^'(?P<cmp>[<>]=?)' not supported between instances of '(?P<ca>[\w.]+)' and '(?P<cb>[\w.]+)'$")


def _statement(code: str):
    """The failing line parsed as one statement, or None (a line of a statement continued on others, an f-string
    piece)."""
    import ast
    text = code.strip()
    for source in (text, text + " pass") if text.endswith(":") else (text,):  # a compound statement's header
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        return tree.body[0] if len(tree.body) == 1 else None
    return None


def _src(code: str, node) -> str:
    """A node's text as the line prints it (ast.unparse would requote strings and add parentheses)."""
    import ast
    return ast.get_source_segment(code.strip(), node) or ast.unparse(node)


def _divisors(code: str) -> list[str]:
    """The right operands of the failing line's divisions and modulos (a `%` after a string formats it)."""
    import ast
    stmt = _statement(code)
    if stmt is None:
        return list(dict.fromkeys(m.group("x") for m in _DIVISOR_TEXT.finditer(code)))
    kinds = (ast.Div, ast.FloorDiv, ast.Mod)
    found = []
    for n in ast.walk(stmt):
        if isinstance(n, ast.BinOp) and isinstance(n.op, kinds) and not (
                isinstance(n.op, ast.Mod) and isinstance(n.left, (ast.Constant, ast.JoinedStr))):
            found.append(_src(code, n.right))
        elif isinstance(n, ast.AugAssign) and isinstance(n.op, kinds):
            found.append(_src(code, n.value))
    return list(dict.fromkeys(found))


def _indexed(code: str) -> list[tuple[str, str]]:
    """(sequence, index) of each subscript of the failing line whose index is a number or a name (a slice never
    raises an index error)."""
    import ast
    stmt = _statement(code)
    if stmt is not None:
        return list(dict.fromkeys((_src(code, n.value), _src(code, n.slice)) for n in ast.walk(stmt)
                                  if isinstance(n, ast.Subscript) and not isinstance(n.slice, (ast.Slice, ast.Tuple))
                                  and not (isinstance(n.slice, ast.Constant) and isinstance(n.slice.value, str))))
    return list(dict.fromkeys((m.group("x"), m.group("i")) for m in _SUBSCRIPT_TEXT.finditer(code)
                              if ":" not in m.group("i") and not m.group("i").strip().startswith(("'", '"'))))


def _empty(expr: str) -> str:
    m = _LEN.match(expr)
    return f"`{m.group('x')}` was empty (`{expr}` is 0)" if m else f"`{expr}` was 0"


def _operands_of(code: str, op: str) -> list[tuple[str, str]]:
    """(left, right) of each use of ``op`` (``+``, ``*``, ``<``...) in the failing line."""
    import ast
    stmt = _statement(code)
    if stmt is None:
        return []
    bins = {"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.Div, "//": ast.FloorDiv, "%": ast.Mod, "**": ast.Pow,
            "@": ast.MatMult}
    cmps = {"<": ast.Lt, "<=": ast.LtE, ">": ast.Gt, ">=": ast.GtE}
    out = []
    for n in ast.walk(stmt):
        if isinstance(n, ast.BinOp) and op in bins and isinstance(n.op, bins[op]):
            out.append((_src(code, n.left), _src(code, n.right)))
        elif isinstance(n, ast.AugAssign) and op.rstrip("=") in bins and isinstance(n.op, bins[op.rstrip("=")]):
            out.append((_src(code, n.target), _src(code, n.value)))
        elif isinstance(n, ast.Compare) and op in cmps and len(n.ops) == 1 and isinstance(n.ops[0], cmps[op]):
            out.append((_src(code, n.left), _src(code, n.comparators[0])))
    return out


def _operand_types(exc: ExceptionInfo, code: str) -> list[str]:
    """The operand of another type than the operator takes (a None where a number was meant, most often)."""
    m = _OPERAND_TYPES.match(exc.message.strip())
    if m is None:
        return []
    op, left_type, right_type = (m.group("op"), m.group("a"), m.group("b")) if m.group("op") else \
        (m.group("cmp"), m.group("ca"), m.group("cb"))
    uses = _operands_of(code, op)
    if len(uses) != 1:
        return []
    left, right = uses[0]
    nones = [x for x, t in ((left, left_type), (right, right_type)) if t == "NoneType"]
    if nones:
        return [f"In `{code[:160]}`, " + " and ".join(f"`{x}`" for x in nones) + f" was None, which `{op}` cannot "
                f"take: a value left unset (a setting with no default, or a function that returned nothing)."]

    def a(t: str) -> str:
        return ("an " if t[:1].lower() in "aeiou" else "a ") + t
    return [f"In `{code[:160]}`, `{left}` was {a(left_type)} and `{right}` {a(right_type)}, which `{op}` cannot "
            f"combine."]


def _arithmetic(exc: ExceptionInfo, code: str) -> list[str]:
    """The operand that was 0, the sequence that was too short, the value that unpacked to another length."""
    msg = exc.message.strip()
    if _BY_ZERO.match(msg):
        found = _divisors(code)
        if len(found) == 1:
            return [f"In `{code[:160]}`, {_empty(found[0])}: the division has nothing to divide by."]
        if found:
            return [f"In `{code[:160]}`, one of " + ", ".join(f"`{d}`" for d in found[:4]) + " was 0."]
        return []
    if _OUT_OF_RANGE.match(msg):
        found = _indexed(code)
        if len(found) == 1:
            seq, index = found[0]
            said = (f"`{seq}` was empty" if index.strip() in ("0", "-1") else
                    f"`{seq}` holds fewer items than the index `{index}` asks for")
            return [f"In `{code[:160]}`, {said}."]
        if found:
            return [f"In `{code[:160]}`, one of " + ", ".join(f"`{s}`" for s, _ in found[:4]) +
                    " holds fewer items than its index asks for."]
        return []
    m = _UNPACK.match(msg)
    if m:
        import ast
        stmt = _statement(code)
        more = "more" if m.group("how") == "too many" else "fewer"
        got = f" ({m.group('got')})" if m.group("got") else ""
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Tuple):
            return [f"In `{code[:160]}`, `{_src(code, stmt.value)}` gave {more} values{got} than the {m.group('n')} "
                    f"names `{_src(code, stmt.targets[0])}` take: it returns something other than what this line was "
                    f"written for (a function whose result changed between releases, or an object of another kind)."]
        if isinstance(stmt, ast.For) and isinstance(stmt.target, ast.Tuple):
            return [f"In `{code[:160]}`, an item of `{_src(code, stmt.iter)}` held {more} values{got} than the "
                    f"{m.group('n')} names `{_src(code, stmt.target)}` take: its items are not what this loop was "
                    f"written for (data of another shape, or a function whose result changed between releases)."]
    return []


def _data_lookup(code: str) -> tuple[str, str] | None:
    """(mapping, inner subscript) of the failing line's one lookup whose key is itself a subscript (`table[row[k]]`),
    or None."""
    import ast
    stmt = _statement(code)
    if stmt is None:
        text = code.strip().rstrip(",")
        # a line of a dict or call continued on others (`"role": role_map[m["role"]],`): its value alone
        if ":" in text and text[:1] in "'\"":
            text = text.split(":", 1)[1]
        stmt = _statement(text)
        code = text
    if stmt is None:
        return None
    found = [n for n in ast.walk(stmt) if isinstance(n, ast.Subscript) and isinstance(n.slice, ast.Subscript)]
    # the outermost one (walk goes breadth first); a second lookup outside it makes the line ambiguous
    if not found or any(n not in set(ast.walk(found[0].slice)) for n in found[1:]):
        return None
    return _src(code, found[0].value), _src(code, found[0].slice)


def _converted_none(exc: ExceptionInfo, code: str) -> tuple[str, str | None] | None:
    """(the expression, the option it reads or None) that the failing line converts with int()/float() while it is
    None (`int(args.output_length)`), or None when the message and the line do not show that."""
    conv = _CONVERT_NONE.match(exc.message)
    arg = _CONVERT_ARG.search(code) if conv else None
    if arg is None or arg.group("fn") != conv.group("fn"):
        return None
    opt = _OPTION.match(arg.group("x"))
    return arg.group("x"), (opt.group("name") if opt else None)


def unset_option(exc: ExceptionInfo) -> str | None:
    """The option the failing line converts with int()/float() while it is None (`int(args.output_length)`), or None."""
    got = _converted_none(exc, _code(exc))
    return got[1] if got else None


def explain(exc: ExceptionInfo) -> list[str]:
    """Sentences naming the violated condition, each quoting what was read; [] when the line tells nothing."""
    out: list[str] = []
    code = _code(exc)
    short = exc.type.rsplit(".", 1)[-1]
    if short == "AssertionError" and code.startswith("assert "):
        m = _ASSERT.match(code)
        if m:
            expr = m.group("expr").strip()
            n = _IS_NOT_NONE.match(expr)
            if n:
                out.append(f"The failing line is `{code[:160]}`: `{n.group('x')}` was None at this point.")
            else:
                c = _COMPARE.match(expr)
                shown = f" (the message gives {exc.message[:120]!r})" if exc.message else ""
                what = (f"`{c.group('a').strip()} {c.group('op')} {c.group('b').strip()}` was false" if c
                        else f"`{expr[:120]}` was false")
                out.append(f"The failing line is `{code[:160]}`: {what}{shown}.")
    m = _NONE_USE.search(exc.message)
    if m and code:
        token = {"subscriptable": "[", "callable": "("}.get(m.group("what") or "", "")
        if m.group("attr"):
            token = "." + m.group("attr")
        operand = _operand_before(code, token) if token else None
        if m.group("what") in ("an iterator", "iterable"):
            it = (_NEXT_ARG if m.group("what") == "an iterator" else _FOR_IN).search(code)
            operand = it.group("x") if it else None
        if operand and token == "[":
            # a chain of subscripts: the message does not say which step met None
            chain = _chain(code, operand)
            if len(chain) > 1:
                out.append(f"In `{code[:160]}`, one of " + ", ".join(f"`{c}`" for c in chain) + " was None.")
            else:
                out.append(f"In `{code[:160]}`, `{operand}` was None.")
        elif operand:
            out.append(f"In `{code[:160]}`, `{operand}` was None.")
    converted = _converted_none(exc, code) if code and short == "TypeError" else None
    if converted:
        x, option = converted
        out.append(f"In `{code[:160]}`, `{x}` was None" + (
            f": the option `{option}` was not given and has no default." if option else "."))
    if code and short in ("ZeroDivisionError", "IndexError", "ValueError"):
        out += _arithmetic(exc, code)
    if code and short == "TypeError":
        out += _operand_types(exc, code)
    if short == "KeyError":
        k = _KEY.match(exc.message.strip())
        if k:
            key = k.group("key")
            # the frames GD606 reads as reward code (the trainers' reward calls, reward modules): one definition
            from ..checks.rewards.function_raised import reward_frames
            in_reward = bool(reward_frames(exc, [])[1])
            if in_reward:
                out.append(f"A reward function read the key '{key}' and the row has none: the dataset has no "
                           f"'{key}' column (trl and ms-swift pass a reward function the dataset's columns by "
                           f"name), or it was renamed or dropped by the preprocessing.")
            elif code:
                looked_up = _data_lookup(code)
                if looked_up is not None:
                    # `role_map[m["role"]]`: the key was itself read from another mapping (a row, a message), so
                    # that one holds a value the first was not built for
                    table, read_by = looked_up
                    out.append(f"The failing line `{code[:160]}` looks up `{table}` with the value of `{read_by}`: "
                               f"that value was '{key}', which `{table}` has no entry for (most often a value of the "
                               f"data that the code or its configuration does not map).")
                elif "[" in code or ".pop(" in code:
                    # a line with no lookup of its own (a call) raised it deeper: the line reads no key
                    out.append(f"The failing line `{code[:160]}` reads the key '{key}', which the mapping does not "
                               f"hold.")
            if ".base_layer." in key and any(f.func == "load_weights" for f in exc.frames):
                # peft's LoRA layers keep the wrapped module as `base_layer` (peft tuners/lora/layer.py LoraLayer):
                # a weight name with it is a LoRA-wrapped model's name, which a model built without LoRA lacks
                out.append(f"'{key}' is a name of a peft LoRA-wrapped model (`.base_layer.` is the wrapped layer): "
                           f"the trainer sent LoRA-wrapped weight names to an engine model built without LoRA; the "
                           f"sync must send merged or unwrapped names (a trainer and vLLM pair that agree on the "
                           f"naming), or the engine must be started with LoRA enabled.")
    m = _SIZE.search(exc.message)
    if m:
        out.append(f"Two tensors differ in dimension {m.group('d')}: {m.group('a')} against {m.group('b')}.")
    m = _MATMUL.search(exc.message)
    if m:
        out.append(f"A matrix product got ({m.group('m')}x{m.group('k1')}) @ ({m.group('k2')}x{m.group('n')}): the "
                   f"inner sizes {m.group('k1')} and {m.group('k2')} differ (a layer's input width against the "
                   f"tensor's last dimension).")
    m = _UNKNOWN_LOCATION.search(exc.message)
    if m:
        mod = m.group("mod").split(".")[0]
        out.append(f"'{m.group('mod')}' was found with no file (\"unknown location\": a namespace package), so a "
                   f"folder named '{mod}' in the working directory or on PYTHONPATH shadows the installed package.")
    return out


__all__ = ["explain"]
