"""The category-from-words reading: the runtime scorer (doctor/classify/category_words.py, pure Python) gives the
decisions scikit-learn gave when tools/build_category_words.py trained the model; the model is trained on exactly the
labelled logs under fixtures/devlogs*; the session uses it only over a generic primary finding of category `other`,
and says what it is. Whether it helps on logs it never saw is measured leave-one-set-out by the build tool
(`--cross-validate`), and on the blind sets: no test here can say it, the model has read every fixture."""
from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path

import pytest
from conftest import run_text

from doctor.classify import category_words
from doctor.classify.category_words import MIN_MARGIN, MIN_SCORE, TAIL_LINES, closest, scores, tokens
from doctor.registry import load_catalog

WORD_READING = True  # tests/conftest.py: the category-from-words post-pass stays on here

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "doctor" / "data" / "category_words.json.gz"


def _model() -> dict:
    return json.loads(gzip.decompress(MODEL.read_bytes()))


def _texts(case: Path) -> list[str]:
    out = []
    for name in ("log.txt", "command.txt"):
        p = case / name
        if p.is_file():
            out.append("\n".join(p.read_text(errors="replace").splitlines()[-TAIL_LINES:]))
    return out


def test_the_model_is_trained_on_exactly_the_labelled_fixtures():
    model = _model()
    labels = sorted(ROOT.glob("fixtures/devlogs*/*/label.json"))
    listed = "\n".join(f"{p.parent.parent.name}/{p.parent.name}\t{json.loads(p.read_text())['category']}"
                       for p in labels)
    assert model["trained_on"] == len(labels), "a development set was added or removed: run tools/build_category_words.py"
    assert model["cases_digest"] == hashlib.sha256(listed.encode()).hexdigest(), \
        "the labelled fixtures changed since the model was built: run tools/build_category_words.py"
    assert set(model["classes"]) <= {m.category for m in load_catalog()} | {"other"}


def test_the_runtime_scorer_gives_scikit_learns_decisions():
    checks = _model()["checks"]
    assert len(checks) >= 40
    for check in checks:
        got = scores(_texts(ROOT / "fixtures" / check["case"]))
        assert got is not None
        values = got[0]
        order = sorted(range(len(values)), key=lambda k: -values[k])
        classes = _model()["classes"]
        assert classes[order[0]] == check["category"], check["case"]
        # coefficients under 0.005 are left out of the file and the rest rounded: the margin moves a little
        assert abs((values[order[0]] - values[order[1]]) - check["margin"]) < 0.02, check["case"]
        assert abs(values[order[0]] - check["score"]) < 0.02, check["case"]


def test_tokens_are_identifiers_lowercased_but_exception_names_and_cjk_pairs():
    assert list(tokens("KeyError: 'prompt' in Dataset.map 训练报错 of x1")) == \
        ["KeyError", "prompt", "dataset", "map", "训练", "报错"]


def test_only_the_last_lines_count():
    tail = "KeyError: 'image'\n" * 3
    assert scores(["ImportError flash_attn undefined symbol\n" + "padding line\n" * TAIL_LINES + tail]) == \
        scores(["unrelated words here\n" * 5 + "padding line\n" * TAIL_LINES + tail])


# an exception no rule or structural entry places, its stack in the user's own code only: the words around it decide
_UNPLACED = ('Traceback (most recent call last):\n  File "/home/u/train.py", line 40, in <module>\n'
             '    main()\nFrobnicationError: the thing could not be frobnicated\n')


def test_a_generic_primary_takes_the_words_category_and_says_it_is_word_statistics():
    bare = run_text(_UNPLACED)
    assert bare[0].rule_id == "GD999" and bare[0].category == "other"
    # the same exception under the lines of a dataset that lacks a column the template reads
    words = ("Map: 100%|##########| 2000/2000 [00:01<00:00]\ndataset column 'messages' missing: the dataset "
             "has columns ['instruction', 'output']; template apply_chat_template dataset_info.json "
             "preprocess dataset formatting\n")
    found = run_text(words * 3 + _UNPLACED)
    assert found[0].rule_id == "GD999"
    assert found[0].category == "dataset-or-template-error"
    assert found[0].confidence == "possible"
    assert ("Going by the paste's words alone, the failure most resembles the dataset or the chat template failing "
            "(dataset-or-template-error): a guess to check against the log.") in found[0].message
    assert "`dataset`" not in found[0].message     # the statistics' words are the tool's, not the person's


def test_a_rule_s_own_category_is_never_replaced():
    # GD101's batch arithmetic, beside the same dataset words: the rule's category stays
    text = ("dataset column 'messages' missing template apply_chat_template dataset_info.json preprocess\n" * 3 +
            "ValueError: The global train batch size (1 x 3) must be evenly divisible by the number of generations "
            "per prompt (8). Given the current train batch size, the valid values for the number of generations "
            "are: [3].\n")
    found = run_text(text)
    assert found[0].category == "batch-divisibility"
    assert "Its category is a guess" not in found[0].message


def test_words_that_do_not_choose_leave_other(monkeypatch):
    monkeypatch.setattr(category_words, "MIN_MARGIN", 1e9)
    assert closest(["KeyError: 'image' multimodal pixel_values"]) is None
    assert MIN_MARGIN < 1.0 and MIN_SCORE < 0


def test_words_unlike_every_category_leave_other(monkeypatch):
    # the best category leads, but its own decision value is below MIN_SCORE: not taken
    monkeypatch.setattr(category_words, "MIN_SCORE", 1e9)
    assert closest(["KeyError: 'image' multimodal pixel_values image_grid_thw"]) is None


@pytest.mark.parametrize("text", ["", "\n\n", "x" * 300_000, "\x00\x01 \ufffd"])
def test_hostile_or_empty_text_reads_without_error(text):
    got = scores([text])
    assert got is not None and len(got[0]) == len(_model()["classes"])


def test_every_category_is_said_in_plain_words():
    from doctor.registry import CATEGORIES, CATEGORY_WORDS
    assert set(CATEGORY_WORDS) == set(CATEGORIES)
    assert all(words and "-" not in words.split()[0] and words == words.strip() for words in CATEGORY_WORDS.values())


def test_a_category_guessed_from_the_words_gets_its_causes_and_actions_as_conditional(tmp_path) -> None:
    from doctor.analyze import analyze
    # fixtures/devlogs64/6727 (huggingface/open-r1#237): a title that names trouble, no symptom word the rules read
    (tmp_path / "log.txt").write_text("Format reward problem\nThe format reward seems to have some problems.\n")
    f = analyze([str(tmp_path / "log.txt")]).findings[0]
    assert f.rule_id == "GD328"
    from doctor.checks.hang.usual_causes import USUAL_CATEGORY
    assert f.category == "reward-zero-or-flat" and f.confidence == "possible"
    assert f"If it is: {USUAL_CATEGORY['reward-zero-or-flat']}" in f.message
    assert any(x.startswith("If it is rewards stuck at zero or equal within each group: print a few completions")
               for x in f.fix)
