"""The library boundary of an import or signature clash (doctor/classify/boundary.py) and the notebook frame formats
the traceback parser reads for it (doctor/sources/traceback.py): Colab's `[path](url) in func` and IPython 8's
`File path:N, in func` with their arrow lines. Inputs are written by hand from the formats of CPython and IPython."""
from __future__ import annotations

from pathlib import Path

from test_scan import _assert_same

from doctor.classify.boundary import boundary, explain, fix
from doctor.signals import ExceptionInfo, Frame, LogLine, Where
from doctor.sources.traceback import TracebackTracker

COLAB = """---------------------------------------------------------------------------
ImportError                               Traceback (most recent call last)
[/usr/local/lib/python3.10/dist-packages/transformers/trainer.py](https://localhost:8080/#) in train(self, a, b)
   1537             self._inner_training_loop, self._train_batch_size
   1538         )
-> 1539         return inner_training_loop(
   1540             args=args,

[/usr/local/lib/python3.12/dist-packages/unsloth_zoo/temporary_patches/utils.py](https://localhost:8080/#) in <module>
    106 try:
--> 107     from transformers.processing_utils import Unpack
    108     assert \\
"""


def _feed(text: str) -> TracebackTracker:
    t = TracebackTracker()
    for i, line in enumerate(text.splitlines(), 1):
        t.feed(LogLine(line, line, Where("log.txt", i), None, i))
    return t


def test_colab_frames_take_their_line_and_code_from_the_arrow_line():
    (_last, frames), = _feed(COLAB).open_tracebacks()
    assert [(f.func, f.lineno, f.code) for f in frames] == [
        ("train", 1539, "return inner_training_loop("),
        ("<module>", 107, "from transformers.processing_utils import Unpack")]


def test_ipython8_frame_code_is_the_arrow_line_not_a_context_line():
    text = ("TypeError    Traceback (most recent call last)\n"
            "File ~/env/lib/python3.11/site-packages/transformers/trainer.py:2245, in Trainer.train(self)\n"
            "   2243         hf_hub_utils.enable_progress_bars()\n"
            "-> 2245     return inner_training_loop(\n"
            "TypeError: f() takes 3 positional arguments but 4 were given\n")
    t = TracebackTracker()
    got = [t.feed(LogLine(s, s, Where("l", i), None, i)) for i, s in enumerate(text.splitlines(), 1)]
    exc = got[-1]
    assert exc is not None and exc.frames[0].code == "return inner_training_loop("


def test_scanner_and_line_path_agree_on_a_colab_traceback(tmp_path: Path):
    _assert_same(("x\n" * 50 + COLAB + "y\n" * 50).encode(), tmp_path)


def _exc(t: str, msg: str, frames=()) -> ExceptionInfo:
    return ExceptionInfo(t, msg, tuple(frames), Where("l", 1), None, 1, f"{t}: {msg}")


def test_import_boundary_names_importer_and_provider():
    fr = Frame("/v/lib/python3.11/site-packages/trl/trainer/grpo_trainer.py", 20, "<module>",
               "from transformers import is_x")
    b = boundary(_exc("ImportError", "cannot import name 'is_x' from 'transformers' (/v/x.py)"), (fr,))
    assert b is not None and (b.user, b.provider) == ("trl", "transformers")
    text = fix(b, {"transformers": "4.40.0"})
    assert "upgrade trl" in text and "installed transformers 4.40.0" in text and "pin transformers" in text


def test_signature_boundary_reads_the_callee_owner_and_a_processor_field():
    b = boundary(_exc("TypeError", "GRPOTrainer._f() got an unexpected keyword argument 'mm_token_type_ids'"), ())
    assert b is not None and (b.user, b.provider, b.keyword) == ("transformers", "trl", "mm_token_type_ids")
    assert "model-input field" in explain(b, {})
    assert "upgrade trl" in fix(b, {})


def test_no_boundary_for_a_plain_bug():
    assert boundary(_exc("TypeError", "unsupported operand type(s) for +: 'int' and 'str'"), ()) is None
    assert boundary(_exc("TypeError", "f() got an unexpected keyword argument 'x'"), ()) is None  # nothing known


def test_a_missing_top_level_module_is_an_install_not_a_pair():
    fr = Frame("/v/lib/python3.11/site-packages/trl/import_utils.py", 5, "<module>", "import vllm")
    b = boundary(_exc("ModuleNotFoundError", "No module named 'vllm'"), (fr,))
    assert b is not None and b.missing
    assert "provides `vllm` in this" in explain(b, {}) and "pip install vllm" in fix(b, {})
    dotted = boundary(_exc("ModuleNotFoundError", "No module named 'vllm.worker.worker'"), (fr,))
    assert dotted is not None and not dotted.missing and "pair" in fix(dotted, {})


def test_a_caller_frame_whose_path_the_paste_cut_is_not_your_code():
    from doctor.sources.traceback import CUT
    msg = "GRPOTrainer.compute_loss() got an unexpected keyword argument 'num_items_in_batch'"
    cut = boundary(_exc("TypeError", msg), (Frame(CUT + "trainer.py", 3600, "training_step"),))
    own = boundary(_exc("TypeError", msg), (Frame("train.py", 12, "training_step"),))
    assert cut is not None and cut.user_code == "" and "your code" not in explain(cut, {})
    assert own is not None and own.user_code == "your code at train.py:12"
