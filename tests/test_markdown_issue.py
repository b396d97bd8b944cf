"""Issue 17 point 11: markdown made for a GitHub issue, checked with a real CommonMark parser (markdown-it-py):
placeholders and dunders survive as text, nothing from the input becomes markup, paths are relative to the run
directory, long evidence is folded, and the launch flags come first."""
from __future__ import annotations

import re

import pytest
from render_cases import FIXTURES, case_report, cases

from doctor.analyze import analyze
from doctor.model import Evidence, Finding, InputInfo, Report, Severity
from doctor.render import markdown

markdown_it = pytest.importorskip("markdown_it")
MD = markdown_it.MarkdownIt("commonmark")
PLACEHOLDER = re.compile(r"<[A-Za-z_][\w.:/-]{0,40}>|(?<!\w)__\w+__")
OWN_HTML = re.compile(r"\s*(</?sub>|<details>(<summary>[\w ,.()-]+</summary>)?|</details>)\s*")


def _tokens(md: str):
    for tok in MD.parse(md):
        yield tok
        yield from tok.children or ()


def _text(md: str) -> str:
    """What a reader sees: the content of text, code and fence tokens (markdown-it unescapes backslashes)."""
    return "\n".join(t.content for t in _tokens(md) if t.type in ("text", "code_inline", "fence", "code_block"))


def _foreign_html(md: str) -> list[str]:
    return [t.content for t in _tokens(md) if t.type in ("html_inline", "html_block")
            and not all(OWN_HTML.fullmatch(x) for x in t.content.strip().splitlines() if x.strip())]


@pytest.mark.parametrize("case", cases())
def test_placeholders_survive_and_no_foreign_html(case):
    rep = case_report(case)
    md = markdown.render(rep)
    assert not _foreign_html(md)
    seen = _text(md)
    for f in rep.findings:
        for s in (f.title, f.message, *f.fix, *(e.text for e in f.evidence)):
            for ph in PLACEHOLDER.findall(s):
                assert ph in seen, (case, ph)


def test_placeholders_flags_and_dunders_by_hand():
    f = Finding("GD999", "x", "other", Severity.error, "__call__ failed",
                "connect to <host>:<port> failed; pass --vllm_server_host <host> and check __init__",
                fix=("--vllm_server_port <port> (the <answer> tag stays)",))
    md = markdown.render(Report("X", [InputInfo("<stdin>", "log")], {}, [f]))
    toks = list(_tokens(md))
    assert not [t for t in toks if t.type in ("strong_open", "em_open")] and not _foreign_html(md)
    code = {t.content for t in toks if t.type == "code_inline"}
    assert {"<host>", "<port>", "<answer>", "--vllm_server_host", "--vllm_server_port"} <= code
    seen = _text(md)
    assert "__call__ failed" in seen and "__init__" in seen


def test_paths_are_relative_to_the_run_directory():
    run = FIXTURES / "real-batch-div-grad-accum"
    md = markdown.render(analyze([str(run)]))
    assert str(FIXTURES) not in md and "/work" not in md and "fixtures" not in md
    assert "log.txt:45: ValueError: generation_batch_size (6)" in _text(md)
    assert "relative to the run directory" in md and "`real-batch-div-grad-accum`" in md
    single = markdown.render(analyze([str(run / "log.txt")]))
    assert str(FIXTURES) not in single and "log.txt:45:" in _text(single)


def test_long_evidence_is_folded_and_complete():
    ev = tuple(Evidence(f"/home/alice/run/logs/rank{i}.log", 10 + i, f"RuntimeError: rank {i} <host>") for i in range(9))
    f = Finding("GD999", "x", "other", Severity.error, "t", "m", evidence=ev)
    md = markdown.render(Report("X", [InputInfo("/home/alice/run/args.json", "args"), *(InputInfo(e.path, "log") for e in ev)],
                                   {}, [f]))
    assert "alice" not in md and "/home" not in md
    assert md.count("<details><summary>5 more evidence lines</summary>") == 1 and "</details>" in md
    fences = [t.content for t in _tokens(md) if t.type == "fence"]
    assert fences[0].count("\n") == 4 and fences[1].count("\n") == 5
    for i in range(9):
        assert f"logs/rank{i}.log:{10 + i}: RuntimeError: rank {i} <host>" in "".join(fences)
    assert not _foreign_html(md)


def test_launch_flags_block():
    md = markdown.render(case_report("real-batch-div-grad-accum"))
    fence = next(t for t in _tokens(md) if t.type == "fence")
    assert fence.info == "bash"
    assert fence.content.splitlines()[0] == "swift rlhf \\"
    assert "    --gradient_accumulation_steps 3 \\" in fence.content
    assert "    --reward_funcs accuracy format \\" in fence.content
    assert md.index("Launch flags") < md.index("### 1.")


def test_launch_block_leaves_secrets_out_and_folds_when_long():
    run = {"framework": "ms-swift", "command": "rlhf", "env": {"HF_TOKEN": "hf_secret", "NPROC_PER_NODE": "8"},
           "args": {f"flag_{i}": i for i in range(20)} | {"deepspeed": None}}
    md = markdown.render(Report("X", [], run, []))
    assert "hf_secret" not in md and "NPROC_PER_NODE=8 swift rlhf \\" in md and "--deepspeed" not in md
    assert md.startswith("## grpo-doctor report") and "<details><summary>Launch flags (20 lines" in md
    assert not _foreign_html(md)
