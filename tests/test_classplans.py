"""doctor/classplans.py: a dataclass of the package replayed from its recorded plan is the class the stdlib makes.

Every module of the package that defines a dataclass is run three times in a fresh process (its source executed into
a new module object): by the stdlib alone, while the plans are recorded, and from the plans; each dataclass of the
third run (and of the second) is compared with the first's: parameters, fields and their settings, every attribute
of the class (the generated methods made: code, defaults, annotations, closed-over values, names), docstring,
match args and hash."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from conftest import ROOT

SCRIPT = textwrap.dedent(r'''
    import dataclasses, importlib, importlib.util, pkgutil, sys, types
    import doctor
    from doctor import classplans as cp

    if cp._stdlib is None:
        print("not installed"); sys.exit(0)

    def fresh(name):
        spec = importlib.util.find_spec(name)
        mod = importlib.util.module_from_spec(spec)
        old = sys.modules.get(name)
        sys.modules[name] = mod
        try:
            spec.loader.exec_module(mod)
        finally:
            sys.modules[name] = old
        return mod

    def classes(mod):
        return {k: v for k, v in vars(mod).items() if isinstance(v, type) and v.__module__ == mod.__name__
                and "__dataclass_fields__" in v.__dict__ and "__slots__" not in v.__dict__}

    def same(a, b, ca, cb, where):
        if a is b or (a is ca and b is cb):
            return
        if isinstance(a, types.FunctionType) and isinstance(b, types.FunctionType):
            for attr in ("__code__", "__defaults__", "__kwdefaults__", "__annotations__", "__qualname__", "__name__",
                         "__module__", "__doc__"):
                assert getattr(a, attr) == getattr(b, attr), (where, attr)
            assert sorted(vars(a)) == sorted(vars(b)), where
            for k in vars(a):
                same(vars(a)[k], vars(b)[k], ca, cb, f"{where}.{k}")
            assert (a.__closure__ is None) == (b.__closure__ is None), where
            for i, (x, y) in enumerate(zip(a.__closure__ or (), b.__closure__ or (), strict=True)):
                same(x.cell_contents, y.cell_contents, ca, cb, f"{where} cell {i}")
            return
        if isinstance(a, type) and isinstance(b, type):
            assert a.__qualname__ == b.__qualname__, where
            return
        if isinstance(a, dataclasses.Field):
            for attr in ("name", "type", "default", "default_factory", "init", "repr", "hash", "compare", "metadata",
                         "kw_only", "_field_type"):
                same(getattr(a, attr), getattr(b, attr), ca, cb, f"{where}.{attr}")
            return
        if isinstance(a, dict) and isinstance(b, dict):
            assert list(a) == list(b), where
            for k in a:
                same(a[k], b[k], ca, cb, f"{where}[{k!r}]")
            return
        if isinstance(a, property) and isinstance(b, property):
            for attr in ("fget", "fset", "fdel"):
                same(getattr(a, attr), getattr(b, attr), ca, cb, f"{where}.{attr}")
            return
        if isinstance(a, (staticmethod, classmethod)) and type(a) is type(b):
            same(a.__func__, b.__func__, ca, cb, f"{where}.__func__")
            return
        # anything else the class body holds (a constant, a pattern, an enum member of the module run again): equal,
        # or alike where its repr is its address
        ta, tb = type(a), type(b)
        assert ta is tb or (ta.__qualname__, ta.__module__) == (tb.__qualname__, tb.__module__), (where, a, b)
        assert a == b or repr(a) == repr(b) or " at 0x" in repr(a), (where, a, b)

    lazies = 0

    def compare(ca, cb, where):
        global lazies
        lazies += sum(type(v).__name__ == "_Lazy" for v in vars(cb).values())
        for name in list(vars(ca)):          # every generated method made (a replayed class makes it on first read)
            getattr(cb, name, None)
        assert list(vars(ca)) == list(vars(cb)), (where, list(vars(ca)), list(vars(cb)))
        assert repr(ca.__dataclass_params__) == repr(cb.__dataclass_params__), where
        for k in vars(ca):
            if k in ("__dict__", "__weakref__"):
                continue
            same(vars(ca)[k], vars(cb)[k], ca, cb, f"{where}.{k}")

    names = [m.name for m in pkgutil.walk_packages(doctor.__path__, "doctor.")]
    mods = []
    for name in names:
        try:
            mod = importlib.import_module(name)
        except Exception:   # an optional dependency missing: not the plans' business
            continue
        if classes(mod):
            mods.append(name)
    stdlib, replayed, recorded = {}, {}, {}
    process, create = dataclasses._process_class, dataclasses._create_fn
    dataclasses._process_class, dataclasses._create_fn = cp._stdlib, cp._create
    try:
        for name in mods:
            stdlib[name] = fresh(name)
    finally:
        dataclasses._process_class, dataclasses._create_fn = process, create
    cp._table, cp._new = {}, {}
    for name in mods:
        recorded[name] = fresh(name)
    plans = len(cp._table)
    for name in mods:
        replayed[name] = fresh(name)
    assert len(cp._new) == plans, "a class was recorded again instead of replayed"
    n = 0
    for name in mods:
        for cname, ca in classes(stdlib[name]).items():
            compare(ca, classes(recorded[name])[cname], f"{name}.{cname}")
            before = lazies
            compare(ca, classes(replayed[name])[cname], f"{name}.{cname}")
            assert lazies > before, f"{name}.{cname} was not replayed"
            n += 1
    print("compared", n, "plans", plans, "modules", len(mods))
''')


def test_replayed_dataclasses_are_the_stdlibs():
    p = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    if p.stdout.startswith("not installed"):
        pytest.skip("class plans need CPython 3.11")
    n, plans = int(p.stdout.split()[1]), int(p.stdout.split()[3])
    assert n >= 60 and plans >= n, p.stdout


def test_a_replayed_class_behaves_and_makes_its_methods_on_first_use(tmp_path, monkeypatch):
    """A class from a plan: __init__, repr, ==, hash and the frozen guard work, each made when first used."""
    code = textwrap.dedent('''
        import dataclasses, sys
        from doctor import classplans as cp
        if cp._stdlib is None:
            print("not installed"); sys.exit(0)
        src = """
        from __future__ import annotations
        import dataclasses
        from typing import ClassVar
        @dataclasses.dataclass(frozen=True)
        class P:
            \\"\\"\\"A point.\\"\\"\\"
            x: int
            y: list[int] = dataclasses.field(default_factory=list, compare=False)
            z: str = "z"
            k: ClassVar[int] = 3
        """
        import types, textwrap
        for round_ in ("record", "replay"):
            mod = types.ModuleType("doctor._plan_probe"); sys.modules[mod.__name__] = mod
            exec(textwrap.dedent(src), mod.__dict__)
            P = mod.P
            lazy = type(P.__dict__["__repr__"]).__name__
            a, b = P(1), P(1, [2])
            assert repr(a) == "P(x=1, y=[], z='z')" and a == b and hash(a) == hash(b) and P.k == 3
            try:
                a.x = 2
            except dataclasses.FrozenInstanceError:
                pass
            else:
                raise AssertionError("frozen")
            assert [f.name for f in dataclasses.fields(P)] == ["x", "y", "z"]
            assert dataclasses.replace(a, z="w").z == "w"
            print(round_, lazy, type(P.__dict__["__repr__"]).__name__)
    ''')
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    if p.stdout.startswith("not installed"):
        pytest.skip("class plans need CPython 3.11")
    assert p.stdout.split("\n")[:2] == ["record function function", "replay _Lazy function"], p.stdout
