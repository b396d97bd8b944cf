"""Issue 17 point 14: every rule cites public URLs (ms-swift / trl / vLLM docs or source at a tag or commit, issue
threads, vendor docs), and no user-facing text of a rule (title, why, message, fix, versions, references, and so
`explain`) mentions documents users do not have (internal notes, seed articles, corpus case numbers)."""
from __future__ import annotations

import re

import pytest

from doctor.catalog_view import explain_text
from doctor.registry import load_catalog

INTERNAL = re.compile(r"swift-notes|notes\.md|(?<![-\w])seeds?\b|dev-?logs?\b|real-swift|gpu-samples|corpus|DESIGN\.md|§|"
                      r"shared/|heldout|real runs? [a-z0-9]+_[a-z0-9_]+|\bfixtures?/", re.IGNORECASE)
URL = re.compile(r"https://[^\s()<>\"']+")
GITHUB_BLOB = re.compile(r"https://github\.com/[^/]+/[^/]+/blob/([^/]+)/")
CATALOG = load_catalog()


def test_internal_pattern_catches_what_the_issue_found():
    for text in ("swift-notes.md §1.1", "seed guides recommend 4", "seeds/03-grpo.md", "dev-log 024",
                 "real run probe_no_template", "gpu-samples table-01", "No real log of this is in the corpus"):
        assert INTERNAL.search(text), text
    # '--seed' is a real flag and "a real run" plain words: they stay allowed
    assert not INTERNAL.search("the memory(GiB) a real run logged; --seed 42, --data_seed")


@pytest.mark.parametrize("meta", CATALOG, ids=[m.id for m in CATALOG])
def test_rule_cites_only_public_urls(meta):
    assert meta.references, f"{meta.id}: no references"
    for ref in meta.references:
        assert URL.fullmatch(ref), f"{meta.id}: not a bare public URL: {ref!r}"
        m = GITHUB_BLOB.match(ref)
        if m:  # source and docs at a tag or a commit, so that line anchors stay true
            assert m.group(1) not in ("main", "master", "HEAD"), ref


@pytest.mark.parametrize("meta", CATALOG, ids=[m.id for m in CATALOG])
def test_no_internal_document_in_user_facing_text(meta):
    texts = [meta.title, meta.why, meta.message, meta.versions, *meta.fix, *meta.references, explain_text(meta)]
    for t in texts:
        hit = INTERNAL.search(t or "")
        assert not hit, f"{meta.id} ({meta.path}): {hit.group()!r} in {t[:120]!r}"
