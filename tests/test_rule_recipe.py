"""rules/README.md is the way in for a new rule: its key table and id ranges agree with the loader, and its
recipe (tools/new_rule.py, fill in the TOML, optional check) gives a rule that loads and fires."""
from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from conftest import ROOT

from doctor.engine import Session
from doctor.registry import EXCEPTION_KEYS, FAMILY_IDS, KEYS, PATTERN_KEYS, CatalogError, load_catalog

sys.path.insert(0, str(ROOT / "tools"))
import new_rule  # noqa: E402

from doctor.signals import LogLine, Where

README = (ROOT / "rules" / "README.md").read_text(encoding="utf-8")


def _table(header: str) -> list[list[str]]:
    part = README.split(header, 1)[1]
    rows = []
    for line in part.splitlines()[1:]:
        if line.startswith("## "):
            break
        if line.startswith("| ") and not line.startswith("| ---"):
            rows.append([c.strip() for c in line.strip("|").split("|")])
    return rows[1:]  # without the header row


def test_readme_key_table_is_the_loaders():
    keys = {r[0].strip("`") for r in _table("## The keys of a rule file")}
    assert keys == set(KEYS)
    sub = set(re.findall(r"`(\w+)`", next(r[3] for r in _table("## The keys of a rule file") if r[0] == "`patterns`")))
    assert sub >= set(PATTERN_KEYS)
    sub = set(re.findall(r"`(\w+)`", next(r[3] for r in _table("## The keys of a rule file") if r[0] == "`exceptions`")))
    assert sub >= set(EXCEPTION_KEYS)


def test_readme_id_ranges_are_the_loaders():
    got = {}
    for fam, ids, *_ in _table("## Families and id ranges"):
        got[fam] = tuple((int(a), int(b or a)) for a, b in re.findall(r"GD(\d+)(?:-GD(\d+))?", ids))
    assert got == FAMILY_IDS


def test_every_rule_is_in_its_familys_range_and_folder():
    for m in load_catalog():
        assert Path(m.path).parent.name == m.family
        lo_hi = FAMILY_IDS[m.family]
        assert any(lo <= int(m.id[2:]) <= hi for lo, hi in lo_hi), m.id


def test_unknown_key_is_refused(tmp_path):
    (tmp_path / "batch").mkdir()
    (tmp_path / "batch" / "GD190-typo.toml").write_text(
        'id = "GD190"\nslug = "typo"\ncategory = "other"\nseverity = "error"\ntitle = "t"\nwhy = "w"\n'
        'exampels = ["x"]\n[[patterns]]\nregex = "x"\nliterals = ["x"]\n', encoding="utf-8")
    with pytest.raises(CatalogError, match="GD190-typo.toml: unknown key.*exampels"):
        load_catalog(str(tmp_path))


def test_id_outside_family_is_refused(tmp_path):
    (tmp_path / "batch").mkdir()
    (tmp_path / "batch" / "GD650-x.toml").write_text(
        'id = "GD650"\nslug = "x"\ncategory = "other"\nseverity = "error"\ntitle = "t"\nwhy = "w"\n'
        '[[patterns]]\nregex = "x"\nliterals = ["x"]\n', encoding="utf-8")
    with pytest.raises(CatalogError, match="outside the ids of family 'batch'"):
        load_catalog(str(tmp_path))


def _fill(toml: Path, **extra: str) -> None:
    text = toml.read_text(encoding="utf-8")
    text = text.replace('title = "TODO: one line, what failed"', 'title = "Recipe test rule"')
    for key, value in extra.items():
        text = re.sub(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
    toml.write_text(text, encoding="utf-8")


def _lines(*texts: str) -> list[LogLine]:
    return [LogLine(t, t, Where("train.log", i + 1), None, i) for i, t in enumerate(texts)]


def test_recipe_toml_only_rule(tmp_path):
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    toml, = new_rule.scaffold("data", "recipe-widget-missing", check=False, category="dataset-or-template-error",
                              severity="error", rules_root=rules)
    assert toml.name.startswith("GD") and toml.parent.name == "data"
    _fill(toml)
    text = toml.read_text(encoding="utf-8").replace('literals = ["TODO"]', 'literals = ["widget column"]')
    text = text.replace("regex = 'TODO'", r"regex = 'widget column (?P<col>\w+) is missing'")
    text = text.replace('examples = ["TODO: a real line the rule must fire on"]',
                        'examples = ["KeyError: widget column answer is missing"]')
    toml.write_text(text, encoding="utf-8")
    cat = load_catalog(str(rules))
    meta = next(m for m in cat if m.slug == "recipe-widget-missing")
    assert meta.family == "data" and meta.id == toml.name[:5]
    s = Session([meta])
    for line in _lines("step 1", "KeyError: widget column answer is missing"):
        s.feed_line(line)
    found = s.finish()
    assert [f.rule_id for f in found] == [meta.id]
    assert found[0].evidence[0].line == 2


def test_recipe_toml_and_check_rule(tmp_path):
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    checks = ROOT / "doctor" / "checks"
    try:
        toml, py = new_rule.scaffold("batch", "recipe-gizmo-seen", check=True, category="batch-divisibility",
                                     severity="warning", rules_root=rules, checks_root=checks)
        assert py == checks / "batch" / "recipe_gizmo_seen.py"
        _fill(toml)
        py.write_text(py.read_text(encoding="utf-8").replace('literals = ("TODO",)', 'literals = ("gizmo",)'),
                      encoding="utf-8")
        meta = next(m for m in load_catalog(str(rules)) if m.slug == "recipe-gizmo-seen")
        assert meta.check == "batch.recipe_gizmo_seen:RecipeGizmoSeen"
        s = Session([meta])
        for line in _lines("nothing here", "a gizmo appeared", "another gizmo"):
            s.feed_line(line)
        found = s.finish()
        assert len(found) == 1 and found[0].rule_id == meta.id and found[0].count == 2
        assert found[0].evidence[0].line == 2
    finally:
        for mod in [m for m in sys.modules if m.endswith("recipe_gizmo_seen")]:
            del sys.modules[mod]
        (checks / "batch" / "recipe_gizmo_seen.py").unlink(missing_ok=True)


def test_scaffold_refuses_bad_input(tmp_path):
    rules = tmp_path / "rules"
    shutil.copytree(ROOT / "rules", rules, ignore=shutil.ignore_patterns("__pycache__", "*.py"))
    with pytest.raises(SystemExit, match="kebab-case"):
        new_rule.scaffold("data", "Bad_Slug", check=False, category="other", severity="error", rules_root=rules)
    with pytest.raises(SystemExit, match="is taken"):
        new_rule.scaffold("batch", "train-batch-not-divisible", check=False, category="other", severity="error",
                          rules_root=rules)
