"""GD910: pip's report of installed packages whose requirements the environment breaks (pip
_internal/commands/install.py _warn_about_conflicts: "<pkg> <ver> requires <req>, but you have <dep> <ver> which is
incompatible."). The fix joins the requirements each dependency must meet into one pip line."""
from __future__ import annotations

from ... import lazyre
from ...engine.state import RunState
from ...rules import Diagnosis, Hit

# the requirement's name, extras and specifiers: "fsspec[http]<=2024.12.0,>=2023.1.0", "numpy<2.0.0"
_REQ = lazyre.compile(r"^(?P<name>[A-Za-z0-9][\w.-]*)(?:\[[^\]]*\])?\s*(?P<spec>[<>=!~][^;]*)?")
# one version specifier as PEP 440 writes it: nothing from the log that a shell would read reaches the printed command
_SPEC = lazyre.compile(r"^(?:===?|[<>]=?|!=|~=)\s*[\w.*+!-]+$")


def _norm(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def pip_conflicts_fix(hits: list[Hit], ctx: RunState) -> Diagnosis:
    wanted: dict[str, list[str]] = {}
    have: dict[str, str] = {}
    by: dict[str, list[str]] = {}
    for h in hits:
        g = h.groups
        m = _REQ.match(g.get("req", "").strip())
        dep = g.get("dep", "")
        if not m or not dep:
            continue
        key = _norm(dep)
        have[key] = g.get("have", "")
        spec = (m.group("spec") or "").strip().rstrip(",")
        for part in (p.strip() for p in spec.split(",") if _SPEC.match(p.strip())):
            if part not in wanted.setdefault(key, []):
                wanted[key].append(part)
        by.setdefault(key, [])
        who = f"{g.get('pkg')} {g.get('ver')}"
        if who not in by[key]:
            by[key].append(who)
    if not wanted:
        return Diagnosis(message="pip reports installed packages whose requirements are not met.")
    said = "; ".join(f"{dep} {have[dep]} (wanted by {', '.join(by[dep][:3])}: {','.join(wanted[dep]) or 'any'})"
                     for dep in list(wanted)[:6])
    msg = (f"pip's install left {len(wanted)} package(s) at versions other installed packages were not released for "
           f"(read from its conflict report): {said}. The install went through, and those packages fail or misbehave "
           f"when they run with them.")
    line = " ".join(f"'{dep}{','.join(wanted[dep])}'" for dep in list(wanted)[:6] if wanted[dep])
    fix = []
    if line:
        fix.append(f"pip install {line}  (the requirements of the report joined per package: computed; pip says so if "
                   f"no release meets them all, and then one of the packages that require them needs another release)")
    fix.append("Then `pip check`: it lists what is still broken.")
    return Diagnosis(message=msg, fix=tuple(fix))
