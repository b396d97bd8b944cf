"""The message words (doctor/data/message_words.txt.gz) that tell a wrap between two words from one inside a word."""
from __future__ import annotations

import gzip

from doctor.classify import raise_store
from doctor.classify.raise_sites import DATA
from doctor.sources.message_words import WORDS_FILE, between_words, words, words_of_index


def test_the_shipped_words_are_the_shipped_index_words():
    rows = raise_store.Store.open(DATA).rows()
    assert WORDS_FILE.read_bytes() == words_of_index(r[6] for r in rows)
    assert {"generations", "prompt", "unexpected", "keyword", "argument"} <= words()
    assert not any(w != w.lower() or len(w) < 2 for w in words())


def test_a_cut_is_between_words_only_when_both_pieces_are_words_and_the_whole_is_not():
    assert between_words(b"number of generations per", b"prompt (8).")
    assert between_words(b"got an unexpected", b"keyword argument 'x'")
    assert not between_words(b"number of gener", b"ations per prompt")   # inside a word
    assert not between_words(b"the model's out", b"put is")              # "output" is one word
    assert not between_words(b"size (12", b"7.0.0.1)")                   # no letters at the cut
    assert not between_words(b"reward func xqzv", b"prompt")             # not a message word


def test_templates_give_their_words_without_holes():
    got = words_of_index(["Expected {int} got {name} for Foo", "a b"])
    assert gzip.decompress(got).decode().split("\n") == ["expected", "foo", "for", "got"]
