"""doctor/fastclasses.py: a dataclass made through the compiled-method cache is the dataclass Python makes, from the
first process (which compiles and records) to the next (which reads the cache file)."""
from __future__ import annotations

import dataclasses
import subprocess
import sys
import textwrap

from doctor import fastclasses

PROBE = textwrap.dedent("""
    import dataclasses, sys
    import doctor  # installs the cache (doctor/__init__.py)
    from doctor import fastclasses

    @dataclasses.dataclass(frozen=True)
    class Probe:
        a: int
        b: 'tuple[str, ...]' = dataclasses.field(default_factory=tuple)
        c: float = 0.5

    p = Probe(1)
    print(dataclasses.exec is fastclasses._exec, len(fastclasses._new), repr(p), p == Probe(1), hash(p) == hash(Probe(1)),
          Probe.__init__.__annotations__, Probe.__init__.__defaults__, Probe.__match_args__)
""")


def _probe(env):
    return subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env, check=True).stdout


def test_a_second_process_makes_the_same_class_from_the_cache(tmp_path):
    import os
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    first, second = _probe(env), _probe(env)
    assert list(tmp_path.glob("grpo-doctor/dataclasses-*.marshal"))
    assert first.startswith("True ") and second.startswith("True 0 ")   # the second compiled nothing
    assert first.split(" ", 2)[2] == second.split(" ", 2)[2]
    assert "Probe(a=1, b=(), c=0.5) True True {'a': <class 'int'>, 'b': 'tuple[str, ...]', 'c': <class 'float'>, 'return': None}" in second


def test_the_generated_methods_are_the_ones_exec_of_their_text_gives(tmp_path, monkeypatch):
    # the same class made with the builtin exec and through the cache (a fresh table: compiled, then read back)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(fastclasses, "_table", {})
    monkeypatch.setattr(fastclasses, "_new", {})

    def make():
        @dataclasses.dataclass(frozen=True, order=True)
        class K:
            x: int
            y: str = "y"
        return K

    assert dataclasses.exec is fastclasses._exec   # type: ignore[attr-defined]
    cached = make()
    monkeypatch.setattr(fastclasses, "_table", dict(fastclasses._new))   # the next make() reads every method back
    again = make()
    monkeypatch.delattr(dataclasses, "exec")
    plain = make()
    for name in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__", "__delattr__", "__lt__"):
        want = getattr(plain, name).__code__
        assert getattr(cached, name).__code__ == want and getattr(again, name).__code__ == want, name
        assert getattr(again, name).__code__.co_filename == want.co_filename
    # this module reads annotations as text (from __future__): the generated __init__ keeps them as they are
    assert cached.__init__.__annotations__ == plain.__init__.__annotations__ == {"x": "int", "y": "str", "return": None}
