"""The rule catalog is well formed: every example matches its rule, no counter-example does, and
every rule is exercised by at least one real fixture."""
from __future__ import annotations

import json

import pytest
from conftest import fires
from golden import FIXTURES, cases

from doctor.registry import CATEGORIES, load_catalog

CATALOG = load_catalog()


def test_catalog_loads_and_ids_unique():
    assert len(CATALOG) >= 3
    assert len({m.id for m in CATALOG}) == len(CATALOG)
    assert all(m.category in CATEGORIES for m in CATALOG)


def test_every_regex_compiles(tmp_path):
    # catalog regexes compile lazily at run time: compile them all here so a bad one fails the suite
    for m in CATALOG:
        for p in m.patterns:
            assert p.regex.compile().pattern == p.source
        for e in m.exceptions:
            for rx in (e.type, e.message):
                if rx is not None:
                    rx.compile()
    (tmp_path / "fallback").mkdir()
    bad = tmp_path / "fallback" / "GD999-bad.toml"
    bad.write_text('id = "GD999"\nslug = "bad"\ncategory = "other"\nseverity = "error"\ntitle = "t"\nwhy = "w"\n'
                   '[[patterns]]\nregex = "(unclosed"\nliterals = ["unclosed"]\n', encoding="utf-8")
    from doctor.registry import CatalogError
    meta = load_catalog(str(tmp_path))[0]
    with pytest.raises(CatalogError, match="GD999-bad.toml: bad regex"):
        meta.patterns[0].regex.compile()


@pytest.mark.parametrize("meta", [m for m in CATALOG if m.patterns or m.exceptions or m.examples], ids=lambda m: m.id)
def test_examples_match(meta):
    assert meta.examples, f"{meta.id} has no examples"
    for ex in meta.examples:
        assert fires(meta, ex), f"{meta.id} does not fire on its example: {ex}"
    for ex in meta.not_examples:
        assert not fires(meta, ex), f"{meta.id} fires on its counter-example: {ex}"


@pytest.mark.parametrize("meta", CATALOG, ids=lambda m: m.id)
def test_rule_has_docs(meta):
    assert len(meta.why) > 80, f"{meta.id}: 'why' should explain the failure"
    assert meta.fix, f"{meta.id}: needs a fix text"


def test_every_rule_has_a_real_fixture():
    fired: set[str] = set()
    for case in cases():
        golden = FIXTURES / f"{case}.expected.json"
        if golden.exists():
            fired |= {f["rule_id"] for f in json.loads(golden.read_text())["findings"]}
    # preflight rules fire from commands: their real fixtures are fixtures/preflight/<case>/command.txt
    for golden in (FIXTURES.parent / "preflight").glob("*.expected.json"):
        fired |= {f["rule_id"] for f in json.loads(golden.read_text())["findings"]}
    for golden in (FIXTURES.parent / "ckpt").glob("*.expected.json"):  # checkpoint fixtures (check-ckpt)
        fired |= {f["rule_id"] for f in json.loads(golden.read_text())["findings"]}
    missing = [m.id for m in CATALOG if m.id not in fired and not m.options.get("no_real_fixture")]
    assert missing == [], f"rules without a real fixture: {missing}"


def test_readme_rule_index_in_sync():
    import subprocess
    import sys

    from conftest import ROOT
    p = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_index.py"), "--check"], capture_output=True)
    assert p.returncode == 0, p.stderr.decode()
