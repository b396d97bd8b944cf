"""What ``@dataclass`` does to a class of this package, recorded once per interpreter and replayed (CPython 3.11).

The stdlib's dataclasses._process_class reads each field's annotation (three regex-backed tests of whether it names
ClassVar, InitVar or KW_ONLY), builds a Field, writes each generated method as source text and runs it: for the ~60
classes `watch -- true` imports (~480 fields) that was ~50 M of its ~365 M instructions, the fastclasses cache of the
compiled methods (doctor/fastclasses.py) already in. What it does is a function of what it reads: the decorator's
arguments, the class's annotations (all strings here: ``from __future__ import annotations``), what each annotated
name holds (a Field and its settings, a default, nothing), the fields of its dataclass bases, which methods the class
defines itself, whether it has ``__post_init__`` and a docstring, and the module's bindings of the names an
annotation starts with. A first process records, per class, those inputs, the words each annotation starts with
(the regex's groups) and, for each method, the code that makes it and the names of the values it closes over; a
later process whose class reads the very same inputs replays it: the same _process_class steps, in the same order,
with those codes run on the live values (the field's type, default or factory, the class), so every attribute comes
out as the stdlib makes it; a generated method is made when it is first read (classplans_replay._Lazy): a run calls
few of them. Anything else (another interpreter, a class with slots, an input that differs, a method whose
closed-over values the record cannot name) goes to the stdlib, which records it again. tests/test_classplans.py
builds every dataclass of the package both ways and compares them (~50 M -> ~30 M instructions of `watch -- true`).
"""
from __future__ import annotations

import sys
import types
from _thread import get_ident
from typing import Any

# the methods whose presence in a class's own body changes what _process_class does
_OWN = ("__init__", "__repr__", "__eq__", "__lt__", "__le__", "__gt__", "__ge__", "__setattr__", "__delattr__",
        "__match_args__")
_PLAN_FORM = 1
_table: dict | None = None   # (module, qualname) -> plan, from the cache file; None until read
_new: dict = {}              # plans recorded in this process, written at exit
_stdlib: Any = None          # dataclasses._process_class
_create: Any = None          # dataclasses._create_fn
_calls: tuple[int, list] | None = None   # while a class is recorded: the recording thread, its _create_fn calls
dc: Any = None               # the dataclasses module, once installed


def install() -> None:
    """Route dataclasses' class processing through the plans, on the interpreter they mirror; otherwise nothing."""
    global _stdlib, _create, dc
    import dataclasses
    if sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11) or _stdlib is not None:
        return
    names = ("_process_class", "_create_fn", "_FIELD", "_FIELD_INITVAR", "_FIELD_CLASSVAR", "_MODULE_IDENTIFIER_RE",
             "_DataclassParams", "_HAS_DEFAULT_FACTORY", "_hash_action", "_hash_add", "_recursive_repr",
             "_set_new_attribute", "_set_qualname", "_fields_in_init_order", "_tuple_str", "_is_classvar",
             "_is_initvar", "_is_kw_only", "FrozenInstanceError", "MISSING", "Field")
    if not all(hasattr(dataclasses, n) for n in names):
        return
    dc = dataclasses
    _stdlib, _create = dataclasses._process_class, dataclasses._create_fn
    dataclasses._process_class = _process_class
    dataclasses._create_fn = _create_fn


def _process_class(cls: type, *args: Any) -> type:
    if not cls.__module__.startswith("doctor.") or len(args) != 10 or args[8]:   # slots=True makes a new class
        return _stdlib(cls, *args)
    inputs = _inputs(cls, args)
    if inputs is None:
        return _stdlib(cls, *args)
    key = (cls.__module__, cls.__qualname__)
    plan = (_load() if _table is None else _table).get(key)
    if plan is not None and plan[0] == inputs:
        from .classplans_replay import replay
        return replay(cls, args, plan)
    return _record(cls, args, key, inputs)


def _inputs(cls: type, args: tuple) -> tuple | None:
    """Everything _process_class reads of the class (the annotations' bindings aside: ``_groups``), or None when the
    class is not one a plan covers (an annotation that is not a string, a base field typed so)."""
    ann = cls.__dict__.get("__annotations__", {})
    attrs = []
    for name, t in ann.items():
        if type(t) is not str:
            return None
        a = getattr(cls, name, dc.MISSING)
        if isinstance(a, dc.Field):
            attrs.append(("F", *_settings(a)))
        elif a is dc.MISSING:
            attrs.append(("",))
        else:
            attrs.append(("S",) if isinstance(a, types.MemberDescriptorType) else ("V",))
    bases = []
    for b in cls.__mro__[-1:0:-1]:
        fields = getattr(b, "__dataclass_fields__", None)
        if fields is not None:
            state = []
            for f in fields.values():
                if type(f.type) is not str:
                    return None
                state.append((f.name, f.type, f._field_type.name, *_settings(f)))
            bases.append((bool(b.__dataclass_params__.frozen), tuple(state)))
    own = cls.__dict__
    class_hash = own.get("__hash__", dc.MISSING)
    explicit_hash = not (class_hash is dc.MISSING or (class_hash is None and "__eq__" in own))
    stray = tuple(n for n, v in own.items() if isinstance(v, dc.Field) and n not in ann)
    return (_PLAN_FORM, args, tuple(ann.items()), tuple(attrs), tuple(bases), tuple(n in own for n in _OWN),
            explicit_hash, stray, hasattr(cls, "__post_init__"), not cls.__doc__)


def _settings(f: Any) -> tuple:
    kw = f.kw_only
    return (f.default is not dc.MISSING, f.default_factory is not dc.MISSING, f.init, f.repr, f.hash, f.compare,
            "missing" if kw is dc.MISSING else bool(kw))


def _groups(annotation: str) -> tuple[str | None, str] | None:
    m = dc._MODULE_IDENTIFIER_RE.match(annotation)
    return (m.group(1), m.group(2)) if m else None


_NOT_GIVEN = object()


def _create_fn(name: str, args: Any, body: Any, *, globals: Any = None, locals: Any = None,  # noqa: A002
               return_type: Any = _NOT_GIVEN) -> Any:
    """dataclasses._create_fn; while a class is recorded, each call's code and closed-over values are kept."""
    kw: dict[str, Any] = {} if return_type is _NOT_GIVEN else {"return_type": return_type}
    calls = _calls
    if calls is None or calls[0] != get_ident():   # nothing recorded, or by another thread (its own imports)
        return _create(name, args, body, globals=globals, locals=locals, **kw)
    import marshal

    from . import fastclasses
    if locals is None:
        locals = {}   # the stdlib's own default, kept here to read what it added (_return_type)
    fastclasses.seen = (calls[0], seen := [])
    try:
        fn = _create(name, args, body, globals=globals, locals=locals, **kw)
    finally:
        fastclasses.seen = None
    # the code run must be the one that made this method: the text defines __create_fn__, which defines the method
    packed = seen[0] if len(seen) == 1 else None
    if packed is not None and not any(fn.__code__ in c.co_consts for c in marshal.loads(packed).co_consts
                                      if isinstance(c, types.CodeType)):
        packed = None
    calls[1].append((name, packed, dict(locals)))
    return fn


def _record(cls: type, args: tuple, key: tuple, inputs: tuple) -> type:
    global _calls
    groups = tuple(_groups(t) for t in cls.__dict__.get("__annotations__", {}).values())
    calls: list = []
    if _calls is not None:   # another thread records a class now: this one is left to the stdlib
        return _stdlib(cls, *args)
    _calls = (get_ident(), calls)
    try:
        out = _stdlib(cls, *args)
    finally:
        _calls = None
    made = []
    fields = out.__dict__.get("__dataclass_fields__", {})
    for name, packed, values in calls:
        # each value the method closes over must be the one _value gives for its name (or the plan is not kept)
        try:
            if packed is None or any(_value(k, fields, out) is not v for k, v in values.items()):
                return out
        except KeyError:
            return out
        made.append((name, packed, tuple(values)))
    if [m[0] for m in made] != _expected(args, inputs[6]):
        return out
    plan = (inputs, groups, tuple(made))
    if _table is None:
        _load()
    _table[key] = _new[key] = plan   # type: ignore[index]
    if len(_new) == 1:
        import atexit
        atexit.register(_save)
    return out


def _expected(args: tuple, explicit_hash: bool) -> list[str]:
    """The methods _process_class makes, in order, with these arguments."""
    init, repr_, eq, order, unsafe_hash, frozen = args[:6]
    names = (["__init__"] if init else []) + (["__repr__"] if repr_ else []) + (["__eq__"] if eq else [])
    names += ["__lt__", "__le__", "__gt__", "__ge__"] if order else []
    names += ["__setattr__", "__delattr__"] if frozen else []
    if dc._hash_action[bool(unsafe_hash), bool(eq), bool(frozen), explicit_hash] is dc._hash_add:
        names.append("__hash__")
    return names


def _value(name: str, fields: dict, cls: type) -> Any:
    """The value the generated methods close over under ``name``, from the class's fields."""
    if name.startswith("_type_"):
        return fields[name[6:]].type
    if name.startswith("_dflt_"):
        f = fields[name[6:]]
        return f.default_factory if f.default_factory is not dc.MISSING else f.default
    fixed = {"MISSING": dc.MISSING, "_HAS_DEFAULT_FACTORY": dc._HAS_DEFAULT_FACTORY,
             "__dataclass_builtins_object__": object, "_return_type": None, "cls": cls,
             "FrozenInstanceError": dc.FrozenInstanceError}
    return fixed[name] if name in fixed else _Unknown


class _Unknown:
    """A closed-over name _value does not know: never the stdlib's value, so no plan is kept."""


def _load() -> dict:
    global _table
    from . import cachefiles, fastclasses
    _table = {}
    _table.update(cachefiles.read_table(cachefiles.CLASS_PLANS, fastclasses._key()))
    return _table


def _save() -> None:
    from . import cachefiles, fastclasses
    cachefiles.merge_table(cachefiles.CLASS_PLANS, fastclasses._key(), _new)
