"""The replay of a recorded ``@dataclass`` plan (doctor/classplans.py): CPython 3.11's dataclasses._process_class,
step for step and in its order, with two things taken from the plan instead of worked out again: whether each
annotation names ClassVar, InitVar or KW_ONLY (from the words the annotation starts with, which the plan keeps, and
the module's bindings of them, read now) and the generated methods (the code the stdlib compiled for them, run on
the class's live values). Only a class whose inputs equal the plan's comes here (classplans._process_class)."""
from __future__ import annotations

import abc
import marshal
import sys
import types
from typing import Any

from . import classplans as cp


def replay(cls: type, args: tuple, plan: tuple) -> type:
    dc = cp.dc
    init, repr_, eq, order, unsafe_hash, frozen, match_args, kw_only, slots, weakref_slot = args
    _, groups, made = plan
    fields: dict[str, Any] = {}
    globals = sys.modules[cls.__module__].__dict__ if cls.__module__ in sys.modules else {}  # noqa: A001
    cls.__dataclass_params__ = dc._DataclassParams(init, repr_, eq, order, unsafe_hash, frozen)
    any_frozen_base = False
    has_dataclass_bases = False
    for b in cls.__mro__[-1:0:-1]:
        base_fields = getattr(b, "__dataclass_fields__", None)
        if base_fields is not None:
            has_dataclass_bases = True
            for f in base_fields.values():
                fields[f.name] = f
            if b.__dataclass_params__.frozen:
                any_frozen_base = True
    cls_annotations = cls.__dict__.get("__annotations__", {})
    cls_fields = []
    kw_only_seen = False
    typing = sys.modules.get("typing")
    for (name, type_), words in zip(cls_annotations.items(), groups):
        # what the annotation's words name, as dataclasses._is_type reads them for the module it gives
        named = _named(words, cls, dc)
        if named is not _NONE and dc._is_kw_only(named, dc):   # a string annotation: the stdlib's 1st test is False
            if kw_only_seen:
                raise TypeError(f"{name!r} is KW_ONLY, but KW_ONLY has already been specified")
            kw_only_seen = True
            kw_only = True
        else:
            in_typing = named if words is None or not words[0] else _named(words, cls, typing)
            cls_fields.append(_get_field(cls, name, type_, kw_only, typing, in_typing, named))
    for f in cls_fields:
        fields[f.name] = f
        if isinstance(getattr(cls, f.name, None), dc.Field):
            if f.default is dc.MISSING:
                delattr(cls, f.name)
            else:
                setattr(cls, f.name, f.default)
    for name, value in cls.__dict__.items():
        if isinstance(value, dc.Field) and name not in cls_annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    if has_dataclass_bases:
        if any_frozen_base and not frozen:
            raise TypeError("cannot inherit non-frozen dataclass from a frozen one")
        if not any_frozen_base and frozen:
            raise TypeError("cannot inherit frozen dataclass from a non-frozen one")
    cls.__dataclass_fields__ = fields
    class_hash = cls.__dict__.get("__hash__", dc.MISSING)
    has_explicit_hash = not (class_hash is dc.MISSING or (class_hash is None and "__eq__" in cls.__dict__))
    if order and not eq:
        raise ValueError("eq must be true if order is true")
    all_init_fields = [f for f in fields.values() if f._field_type in (dc._FIELD, dc._FIELD_INITVAR)]
    std_init_fields, kw_only_init_fields = dc._fields_in_init_order(all_init_fields)

    codes = {name: (packed, names) for name, packed, names in made}

    def make(name: str) -> Any:
        """The method the stdlib would make now, made when first read (_Lazy)."""
        return _Lazy(cls, name, codes[name], fields, globals)

    if init:
        dc._set_new_attribute(cls, "__init__", make("__init__"))
    field_list = [f for f in fields.values() if f._field_type is dc._FIELD]
    if repr_:
        dc._set_new_attribute(cls, "__repr__", make("__repr__"))
    if eq:
        dc._set_new_attribute(cls, "__eq__", make("__eq__"))
    if order:
        for name in ("__lt__", "__le__", "__gt__", "__ge__"):
            if dc._set_new_attribute(cls, name, make(name)):
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}. Consider using "
                                "functools.total_ordering")
    if frozen:
        for name in ("__setattr__", "__delattr__"):
            if dc._set_new_attribute(cls, name, make(name)):
                raise TypeError(f"Cannot overwrite attribute {name} in class {cls.__name__}")
    hash_action = dc._hash_action[bool(unsafe_hash), bool(eq), bool(frozen), has_explicit_hash]
    if hash_action is dc._hash_add:
        cls.__hash__ = make("__hash__")   # type: ignore[method-assign]
    elif hash_action:
        cls.__hash__ = hash_action(cls, field_list, globals)   # type: ignore[method-assign]
    if not cls.__doc__:
        import inspect
        try:
            text_sig = str(inspect.signature(cls)).replace(" -> None", "")
        except (TypeError, ValueError):
            text_sig = ""
        cls.__doc__ = (cls.__name__ + text_sig)
    if match_args:
        dc._set_new_attribute(cls, "__match_args__", tuple(f.name for f in std_init_fields))
    if weakref_slot and not slots:
        raise TypeError("weakref_slot is True but slots is False")
    abc.update_abstractmethods(cls)
    return cls


_NONE = object()   # an annotation whose words name nothing _is_type would look at


def _named(words: tuple | None, cls: type, a_module: Any) -> Any:
    """What dataclasses._is_type(annotation, cls, a_module, ...) hands its predicate, or _NONE where it returns False
    without asking it (the annotation's regex groups given, the module's bindings read now)."""
    if words is None:
        return _NONE
    module = sys.modules.get(cls.__module__)
    if not words[0]:
        ns = module.__dict__   # type: ignore[union-attr]
    elif module and module.__dict__.get(words[0]) is a_module:
        ns = module.__dict__
    else:
        return _NONE
    return ns.get(words[1]) if ns else _NONE


def _get_field(cls: type, a_name: str, a_type: str, default_kw_only: bool, typing: Any, in_typing: Any,
               in_dataclasses: Any) -> Any:
    """dataclasses._get_field for a string annotation, its ClassVar and InitVar tests on what its words name."""
    dc = cp.dc
    default = getattr(cls, a_name, dc.MISSING)
    if isinstance(default, dc.Field):
        f = default
    else:
        if isinstance(default, types.MemberDescriptorType):   # a field in __slots__: no default
            default = dc.MISSING
        f = dc.field(default=default)
    f.name = a_name
    f.type = a_type
    f._field_type = dc._FIELD
    if typing:
        if in_typing is not _NONE and dc._is_classvar(in_typing, typing):
            f._field_type = dc._FIELD_CLASSVAR
    if f._field_type is dc._FIELD:
        if in_dataclasses is not _NONE and dc._is_initvar(in_dataclasses, dc):
            f._field_type = dc._FIELD_INITVAR
    if f._field_type in (dc._FIELD_CLASSVAR, dc._FIELD_INITVAR):
        if f.default_factory is not dc.MISSING:
            raise TypeError(f"field {f.name} cannot have a default factory")
    if f._field_type in (dc._FIELD, dc._FIELD_INITVAR):
        if f.kw_only is dc.MISSING:
            f.kw_only = default_kw_only
    else:
        assert f._field_type is dc._FIELD_CLASSVAR
        if f.kw_only is not dc.MISSING:
            raise TypeError(f"field {f.name} is a ClassVar but specifies kw_only")
    if f._field_type is dc._FIELD and f.default.__class__.__hash__ is None:
        raise ValueError(f"mutable default {type(f.default)} for field {f.name} is not allowed: use default_factory")
    return f


class _Lazy:
    """A generated method of a replayed class, made the first time it is read: the function the stdlib makes, from
    the same code and values, then put in the class in its place. Most classes a run imports never have most of their
    methods called (a repr, an ordering, a frozen class's __setattr__), and making each (its code unmarshalled, run,
    closed over) was most of what a replay cost. Special methods are looked up through the type, which honours
    __get__, so ``x == y``, ``repr(x)``, ``hash(x)`` and ``Cls(...)`` all make it on their first use."""

    __slots__ = ("owner", "name", "code", "fields", "globals")
    __isabstractmethod__ = False   # abc.update_abstractmethods reads it without making the method

    def __init__(self, owner: type, name: str, code: tuple, fields: dict, globals: dict):  # noqa: A002
        self.owner, self.name, self.code, self.fields, self.globals = owner, name, code, fields, globals

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        packed, names = self.code
        ns: dict[str, Any] = {}
        exec(marshal.loads(packed), self.globals, ns)   # the stdlib's `exec(txt, globals, ns)`, compiled
        fn = ns["__create_fn__"](**{k: cp._value(k, self.fields, self.owner) for k in names})
        if self.name == "__repr__":
            fn = cp.dc._recursive_repr(fn)
        cp.dc._set_qualname(self.owner, fn)
        if self.owner.__dict__.get(self.name) is self:
            setattr(self.owner, self.name, fn)
        return fn.__get__(obj, objtype)
