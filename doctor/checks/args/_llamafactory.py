"""GD401 for LLaMA-Factory: each argument its parser refused, read against the release history of its arguments
(doctor/swift/llamafactory_args.py): renamed (old -> new, since which release), removed, added after the release
that ran, a transformers training argument given to a command that takes none, or never declared (the closest
names). Said as the run wrote it: a YAML key (``split``) or a flag (``--split test``)."""
from __future__ import annotations

from ...swift import llamafactory_args as lfa


def shown(name: str, vals: list[str], key: bool) -> str:
    if key:
        return name if not vals else f"{name}: {' '.join(vals)}"
    flag = name if name.startswith("-") else f"--{name}"
    return " ".join([flag] + [v if v and " " not in v else repr(v) for v in vals])


def _name(name: str, key: bool) -> str:
    return name if key else f"--{name}"


def _summed(new: str, flags: list[tuple[str, list[str]]]) -> tuple[str, str] | None:
    """(cutoff_len's value, how) from max_source_length + max_target_length when both came with numbers (0.2.0's
    rule)."""
    vals = [v[0] for n, v in flags if v and (lfa.renamed(n.lstrip("-").replace("-", "_")) or ("",))[0] == new]
    if new == "cutoff_len" and len(vals) == 2 and all(v.isdigit() for v in vals):
        return str(int(vals[0]) + int(vals[1])), f" ({vals[0]} + {vals[1]}) in place of both"
    return None


def reading(name: str, version: str | None) -> tuple[str, str] | None:
    """(kind, short reading) of an argument LLaMA-Factory's history explains; None when it says nothing (an argument
    the release declares, or one no release and no transformers release declares)."""
    key = name.lstrip("-").replace("-", "_")
    ren = lfa.renamed(key)
    if ren:
        return "renamed", f"renamed {ren[0]} in {ren[1]}"
    gone = lfa.removed(key)
    if gone:
        last, first_out, exact, _ = gone
        return "removed", (f"removed in {first_out}" if exact else f"declared up to {last}, gone by {first_out}")
    sp = lfa.span(key)
    if sp and lfa.declared(key, version) is False:
        old = lfa.renamed_to(key)
        return "added", (f"added in {old[1]}, before it {old[0]}" if old else f"declared from {sp[0]}")
    return None


def advice(name: str, vals: list[str], version: str | None, key: bool,
           flags: list[tuple[str, list[str]]]) -> str:
    """One fix line for one refused argument; ``flags``: all the refused ones (a pair renamed into one)."""
    k = name.lstrip("-").replace("-", "_")
    s = shown(name, vals, key)
    ver = f"LLaMA-Factory {version}" if version else "the LLaMA-Factory installed"
    ren = lfa.renamed(k)
    if ren:
        new, rel, why = ren
        val, how = _summed(new, flags) or (" ".join(vals), "")
        write = f"{new}: {val}" if key else f"--{new}{' ' + val if val else ''}"
        pair = [n for n, _ in flags if (lfa.renamed(n.lstrip("-").replace("-", "_")) or ("",))[0] == new]
        if how and pair.index(name) > 0:
            return f"`{s}`: the same rename; the one `{write}` above replaces both."
        return f"`{s}` is the name of releases before {rel}: {why}. Write `{write}`{how or ' instead'}."
    gone = lfa.removed(k)
    if gone:
        last, first_out, exact, why = gone
        when = why if exact else (f"{lfa.label(last)} is the last release checked that declares it, "
                                  f"{lfa.label(first_out)} does not")
        return f"Drop {'the key ' if key else ''}`{s}`: LLaMA-Factory no longer has this argument: {when}."
    sp = lfa.span(k)
    if sp and lfa.declared(k, version) is False:
        old = lfa.renamed_to(k)
        if old:
            return (f"`{s}` exists from {old[1]} on ({old[2]}); {ver} is older and calls it "
                    f"`{_name(old[0], key)}`: use that name, or upgrade LLaMA-Factory.")
        return (f"`{s}` is an argument of LLaMA-Factory {sp[0]}-{sp[1]} (the releases checked), not of {ver}: "
                f"upgrade LLaMA-Factory or drop it.")
    if sp and lfa.only(k) == "eval":
        return f"`{s}` is read only by `llamafactory-cli eval` (its EvaluationArguments): another command refuses it."
    if lfa.is_transformers(k) or (sp and lfa.only(k) == "train"):
        return (f"`{s}` is a training argument (transformers' Seq2SeqTrainingArguments): only `llamafactory-cli "
                f"train` takes those (chat, export, eval and api do not); run a training or predict config with "
                f"`llamafactory-cli train`, or drop it (a transformers release without this field refuses it too).")
    if sp:
        return (f"`{s}` is declared by {ver}: the parser that refused it is not that release's (an older checkout "
                f"or another project's script first on the path); run the LLaMA-Factory the log names.")
    close = lfa.closest(k, version)
    if close:
        return f"`{s}` is not an argument of LLaMA-Factory: did you mean {' or '.join(f'`{_name(c, key)}`' for c in close)}?"
    rels = lfa.releases()
    return (f"`{s}` is not an argument of any LLaMA-Factory release ({rels[0]}-{rels[-1]}) nor a transformers "
            f"training argument: check its spelling against the release's example configs, or drop it.")


def hint(name: str, vals: list[str], flags: list[tuple[str, list[str]]]) -> str | None:
    """For a script the log does not tie to a framework: the reading LLaMA-Factory's history gives of a flag that
    is one of its own (renamed, removed, or a new name of a rename), as a conditional line; None otherwise."""
    k = name.lstrip("-").replace("-", "_")
    if lfa.is_transformers(k):
        return None
    head = "If this is LLaMA-Factory (llmtuner): "
    old = lfa.renamed_to(k)
    if old:
        return (f"{head}`{shown(name, vals, False)}` exists from {old[1]} on ({old[2]}); an older release calls it "
                f"`--{old[0]}`: use that name with it, or upgrade.")
    if lfa.renamed(k) or lfa.removed(k):
        return head + advice(name, vals, None, False, flags)
    return None
