"""Exceptions as people paste them: the message without its type, the type retyped with a space, a notebook's error
output as the .ipynb file stores it (nbformat v4: "ename", "evalue"). Each is read as the exception it is."""
from __future__ import annotations

import io

from doctor.engine import Session
from doctor.registry import load_catalog
from doctor.sources.logtext import LineReader
from doctor.sources.traceback import TracebackTracker


def run(text: str):
    s = Session(load_catalog())
    for line in LineReader("p.log", [0]).lines(io.BytesIO(text.encode())):
        s.feed_line(line)
    return s.finish()


def exceptions(text: str):
    tracker = TracebackTracker()
    out = []
    for line in LineReader("p.log", [0]).lines(io.BytesIO(text.encode())):
        exc = tracker.feed(line)
        if exc is not None:
            out.append((exc.type, exc.message))
    return out


def test_typeless_and_spaced_messages_get_the_type_torch_gives_them():
    assert exceptions("CUDA out of memory. Tried to allocate 20.00 MiB\n") == [
        ("torch.OutOfMemoryError", "CUDA out of memory. Tried to allocate 20.00 MiB")]
    assert exceptions("Value Error: too many values\n") == [("ValueError", "too many values")]
    # prose that mentions the words mid-line is no exception
    assert exceptions("I got CUDA out of memory. Tried to allocate less, same thing\n") == []


NOTEBOOK = '''  {
   "outputs": [
    {
     "ename": "KeyError",
     "evalue": "'prompt'",
     "output_type": "error",
     "traceback": [
      "\\u001b[0;31mKeyError\\u001b[0m                          Traceback (most recent call last)"
     ]
    }
   ]
  }
'''


def test_a_notebook_error_output_is_its_exception():
    assert exceptions(NOTEBOOK) == [("KeyError", "'prompt'")]
    # an "evalue" without its "ename" (a cut paste) names nothing
    assert exceptions('"evalue": "x"\n') == []


def test_a_notebook_oom_output_is_judged_as_an_oom():
    text = NOTEBOOK.replace('"KeyError"', '"OutOfMemoryError"').replace(
        "\"'prompt'\"", '"CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB"')
    found = run(text)
    assert found[0].rule_id == "GD201"
