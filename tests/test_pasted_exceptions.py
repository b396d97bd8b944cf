"""Exceptions as people paste them: the message without its type, the type retyped with a space, a notebook's error
output as the .ipynb file stores it (nbformat v4: "ename", "evalue"). Each is read as the exception it is."""
from __future__ import annotations

import io
from pathlib import Path

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
    # a message of several lines (JSON's "\n" inside the string) reads as one line
    two = NOTEBOOK.replace('"\'prompt\'"', '"Unsloth: Your model needs to be compiled.\\nPlease update transformers"')
    assert exceptions(two) == [("KeyError", "Unsloth: Your model needs to be compiled. Please update transformers")]


def test_a_notebook_oom_output_is_judged_as_an_oom():
    text = NOTEBOOK.replace('"KeyError"', '"OutOfMemoryError"').replace(
        "\"'prompt'\"", '"CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.65 GiB"')
    found = run(text)
    assert found[0].rule_id == "GD201"


def test_a_message_cut_early_is_read_by_the_template_its_start_belongs_to():
    # trl 0.15-0.16 / ms-swift 3.1-3.3 GRPOTrainer.__init__'s batch check, cut by the paste after "the num"
    found = run("ValueError: The global train batch size (1 x 1) must be evenly divisible by the num\n")
    f = found[0]
    assert (f.rule_id, f.category, f.confidence) == ("GD999", "batch-divisibility", "likely")
    assert "read from a cut message" in f.title and "GD101" in f.message
    assert not any("per_device_train_batch_size 8" in x for x in f.fix)  # nothing computed from values behind the cut


def test_a_whole_unknown_message_or_a_short_start_is_not_read_as_cut():
    from doctor.checks.fallback.cut_wording import read_cut
    from doctor.signals import ExceptionInfo, Where
    where = Where("p.log", 1)
    assert read_cut(ExceptionInfo("ValueError", "The global train batch", (), where, None, 1, "")) is None  # too short
    unknown = ExceptionInfo("ValueError", "a message no library raises, written for this test only", (), where, None,
                            1, "")
    assert read_cut(unknown) is None


def test_an_exception_glued_to_its_source_line_is_split_before_any_rule_reads_it():
    from doctor.sources.logtext import split_segments
    assert split_segments("    assert os.path.exists(p), f'args_path: {p}'AssertionError: args_path: /c/args.json") == [
        "    assert os.path.exists(p), f'args_path: {p}'", "AssertionError: args_path: /c/args.json"]
    code, exc = split_segments("    raise InstantiationException(msg) from ehydra.errors.InstantiationException: Error")
    assert code.endswith("from e") and exc.startswith("hydra.errors.InstantiationException")
    # code that names an exception class is no glued exception
    assert split_segments("    except (ValueError, KeyError):") == ["    except (ValueError, KeyError):"]
    assert split_segments('    raise ValueError("bad")') == ['    raise ValueError("bad")']


def test_the_exception_line_inside_a_pytest_loguru_or_rich_wrapper_is_read():
    tb = ('Traceback (most recent call last):\n  File "/usr/lib/python3/site-packages/mylib/core.py", line 900, in run\n'
          "    y = compute(x)\n")
    for wrapped in ("E       ValueError: shapes do not match at all",
                    "2024-05-01 10:00:00.123 | ERROR    | __main__:main:42 - ValueError: shapes do not match at all",
                    "│ ValueError: shapes do not match at all                               │"):
        assert exceptions(tb + wrapped + "\n") == [("ValueError", "shapes do not match at all")], wrapped


def test_a_notebook_error_output_on_one_line_or_in_another_key_order():
    one_line = ('{"output_type": "error", "ename": "KeyError", "evalue": "\'prompt\'", "traceback": ["\\u001b[0;31m..."]}'
                "\n")
    assert exceptions(one_line) == [("KeyError", "'prompt'")]
    assert exceptions('"evalue": "bad value",\n"ename": "ValueError",\n') == [("ValueError", "bad value")]


# a notebook's error output with its whole IPython traceback: each entry of "traceback" is one JSON string, colours
# escaped as \u001b[...m, lines joined by \n (the shape of a trl GRPO run in Colab; frames as IPython 8 prints them)
NOTEBOOK_TB = r'''  {
   "ename": "KeyError",
   "evalue": "'solution'",
   "output_type": "error",
   "traceback": [
    "\u001b[0;31mKeyError\u001b[0m                                  Traceback (most recent call last)",
    "Cell \u001b[0;32mIn[12], line 1\u001b[0m\n\u001b[0;32m----> 1\u001b[0m trainer\u001b[38;5;241m.\u001b[39mtrain()\n",
    "File \u001b[0;32m/usr/local/lib/python3.10/dist-packages/trl/trainer/grpo_trainer.py:1050\u001b[0m, in \u001b[0;36mGRPOTrainer._calculate_rewards\u001b[0;34m(self, inputs, prompts, completions)\u001b[0m\n\u001b[1;32m   1048\u001b[0m         output_reward_func \u001b[38;5;241m=\u001b[39m reward_func(prompts\u001b[38;5;241m=\u001b[39mprompts, completions\u001b[38;5;241m=\u001b[39mcompletions, \u001b[38;5;241m*\u001b[39m\u001b[38;5;241m*\u001b[39mreward_kwargs)\n",
    "Cell \u001b[0;32mIn[8], line 5\u001b[0m, in \u001b[0;36mcorrectness_reward_func\u001b[0;34m(prompts, completions, **kwargs)\u001b[0m\n\u001b[0;32m----> 5\u001b[0m     answer \u001b[38;5;241m=\u001b[39m kwargs[\u001b[38;5;124m'\u001b[39m\u001b[38;5;124msolution\u001b[39m\u001b[38;5;124m'\u001b[39m]\n",
    "\u001b[0;31mKeyError\u001b[0m: 'solution'"
   ]
  }
'''


def test_a_notebook_traceback_stored_as_json_strings_is_read_frame_by_frame():
    first = run(NOTEBOOK_TB)[0]
    assert (first.rule_id, first.category) == ("GD606", "reward-function-error")
    # the deepest frame is the notebook cell that defined the reward ("Cell In[8], line 5, in correctness_reward_func"),
    # under trl's _calculate_rewards
    assert "'solution'" in first.message and "In[8]:5 (correctness_reward_func)" in first.message


def _rich_traceback(width: int, ascii_only: bool = False) -> str:
    """A real rich traceback (rich.traceback.Traceback, as typer and other CLIs print them), rendered to text; with
    ``ascii_only`` as rich draws it for a console whose encoding is not UTF-8 (an ASCII box of +, - and |)."""
    import io as _io

    from rich.console import Console
    from rich.traceback import Traceback

    def score(row):
        return row["solution"]

    def train():
        score({"prompt": 1})

    class _Ascii(_io.StringIO):
        encoding = "ascii"

    out = _Ascii() if ascii_only else _io.StringIO()
    try:
        train()
    except KeyError:
        Console(file=out, width=width, force_terminal=False, color_system=None).print(Traceback(width=width))
    return out.getvalue()


def test_a_rich_traceback_is_read_with_its_frames():
    # rich folds a frame's "path:N in func" at any character when the path is longer than the box: at 60 columns,
    # and at widths that cut this file's path (whose length depends on where the checkout lives) mid-name, on one
    # character of ".py", and right after its ":"
    path_len = len(__file__)
    for width in (100, 60, path_len - 6, path_len + 2, path_len + 5, path_len + 7):
        text = _rich_traceback(width)
        assert "╭" in text and "❱" in text
        tracker = TracebackTracker()
        parsed = [tracker.feed(ln) for ln in LineReader("p.log", [0]).lines(io.BytesIO(text.encode()))]
        found = [e for e in parsed if e is not None and e.type == "KeyError"]
        assert len(found) == 1 and found[0].message == "'solution'"
        frames = found[0].frames
        assert [f.func for f in frames][-2:] == ["train", "score"], [f.func for f in frames]
        assert frames[-1].path == __file__, (width, frames[-1].path)
        # rich crops a source line at the box's edge
        assert frames[-1].code.startswith("return row[") and 'return row["solution"]'.startswith(frames[-1].code)


def test_vllm_logger_lines_whose_closing_bracket_a_paste_escaped_keep_their_traceback():
    # fixtures/devlogs2/112: "[async_llm.py:485[]" (a markdown escape of "]"), and "\]" as typed in markdown
    for close in ("[]", "\\]"):
        text = "".join(f"(APIServer pid=1) ERROR 10-20 03:20:50 [async_llm.py:485{close} {ln}\n" for ln in (
            "Traceback (most recent call last):",
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/core_client.py", line 845, in get_output_async',
            "    raise self._format_exception(outputs) from None",
            "vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered an issue. See stack trace (above) for "
            "the root cause."))
        tracker = TracebackTracker()
        parsed = [tracker.feed(ln) for ln in LineReader("p.log", [0]).lines(io.BytesIO(text.encode()))]
        found = [e for e in parsed if e is not None]
        assert len(found) == 1 and found[0].type.endswith("EngineDeadError"), close
        assert [f.func for f in found[0].frames] == ["get_output_async"], close


def test_a_rich_traceback_in_an_ascii_box_is_read_with_its_frames():
    for width in (100, 60):
        text = _rich_traceback(width, ascii_only=True)
        assert text.lstrip().startswith("+-") and "╭" not in text
        tracker = TracebackTracker()
        parsed = [tracker.feed(ln) for ln in LineReader("p.log", [0]).lines(io.BytesIO(text.encode()))]
        found = [e for e in parsed if e is not None and e.type == "KeyError"]
        assert len(found) == 1
        frames = found[0].frames
        assert [f.func for f in frames][-2:] == ["train", "score"], (width, [f.func for f in frames])
        assert frames[-1].code.startswith("return row[")


def test_a_rich_frame_whose_file_is_not_on_disk_is_read():
    # rich prints "in func:N" instead of "path:N in func" for code compiled from a string (an exec'd reward plugin,
    # a notebook cell): rich/traceback.py _render_stack, when os.path.exists(frame.filename) is false
    import io as _io

    from rich.console import Console
    from rich.traceback import Traceback

    code = "def accuracy_reward(rows):\n    return [r['solution'] for r in rows]\naccuracy_reward([{}])\n"
    out = _io.StringIO()
    try:
        exec(compile(code, "<reward-plugin>", "exec"))
    except KeyError:
        Console(file=out, width=100, force_terminal=False, color_system=None).print(Traceback(width=100))
    text = out.getvalue()
    assert "│ in accuracy_reward:2" in text
    tracker = TracebackTracker()
    parsed = [tracker.feed(ln) for ln in LineReader("p.log", [0]).lines(io.BytesIO(text.encode()))]
    found = [e for e in parsed if e is not None]
    assert len(found) == 1 and found[0].message == "'solution'"
    funcs = [f.func for f in found[0].frames]
    assert "accuracy_reward" in funcs and funcs[-1] in ("accuracy_reward", "<listcomp>")   # 3.12 inlines listcomps
    assert found[0].frames[-1].lineno == 2


def test_an_empty_message_takes_the_indented_lines_under_it():
    # bitsandbytes 0.39-0.42 cextension.py raises RuntimeError('''\n        CUDA Setup failed ...''') (dev11 1322): CPython
    # prints "RuntimeError: " alone, the message on the indented lines below
    text = ("RuntimeError: \n"
            "        CUDA Setup failed despite GPU being available. Please run the following command to get more "
            "information:\n\n"
            "        python -m bitsandbytes\n\n"
            "Another line of the log\n")
    findings = run(text)
    assert findings[0].category == "import-or-dependency-error"
    assert "CUDA Setup failed despite GPU being available" in findings[0].message
    assert "python -m bitsandbytes" in findings[0].message and "Another line" not in findings[0].message


def test_a_message_retyped_loosely_is_read_in_cpython_s_words():
    from doctor.checks.fallback.exceptions import retyped_message
    # devlogs32 3527's title line (a CJK word glued to the class name, quotes and "object" dropped)
    assert retyped_message("AttributeError", "提示Qwen2TokenizerFast has no attribute tokenizer") == \
        "'Qwen2TokenizerFast' object has no attribute 'tokenizer'"
    assert retyped_message("AttributeError", "module torch.library has no attribute `register_fake`") == \
        "module 'torch.library' has no attribute 'register_fake'"
    # a variable's name: CPython would name its type, which the words do not give
    assert retyped_message("AttributeError", "reward_model has no attribute 'modules'") is None
    assert retyped_message("ModuleNotFoundError", "it says No module named flash_attn.") == "No module named 'flash_attn'"
    assert retyped_message("ImportError", "cannot import name is_torch_npu_available from transformers") == \
        "cannot import name 'is_torch_npu_available' from 'transformers'"
    assert retyped_message("KeyError", "has no attribute x") is None


def test_a_notebook_header_s_message_read_from_the_title_above():
    """devlogs32 3527: the IPython header names AttributeError, the paste stops before IPython's last line, and the
    issue's sentence above gives the message."""
    import glob

    from doctor.analyze import analyze
    case = glob.glob(str(Path(__file__).resolve().parents[1] / "fixtures/devlogs32/3527-*/log.txt"))[0]
    report = analyze([case])
    top = report.findings[0]
    assert ("the words above it give it: `AttributeError: 'Qwen2TokenizerFast' object has no attribute 'tokenizer'` "
            "(line 3: `提示Qwen2TokenizerFast has no attribute tokenizer`)") in top.message
    assert [e.line for e in top.evidence][:2] == [6, 3]


def test_a_title_s_exception_no_entry_places_is_joined_to_the_cut_stack_below_it():
    """devlogs22 2707: the title retypes an AttributeError (no quotes around the class), the rank-0 stack below it is
    cut in trl's save_model; no structural entry places the exception, so the finding keeps the stage the frames show
    and says what the title names, as a reading."""
    import glob

    from doctor.analyze import analyze
    case = glob.glob(str(Path(__file__).resolve().parents[1] / "fixtures/devlogs22/2707-*/log.txt"))[0]
    top = analyze([case]).findings[0]
    assert top.rule_id == "GD999" and top.title.startswith("Saving a checkpoint failed")
    assert ("The line above the stack names an exception, `AttributeError: 'Policy' object has no attribute "
            "'zero_gather_16bit_weights_on_model_save'`, most likely the one this stack ends in") in top.message
    assert top.evidence[0].line == 1


def test_a_frameless_exception_placed_by_its_raise_site_claims_no_frame():
    """devlogs18 2230: vLLM's placeholder wording in prose, no stack: the structural entry's account of where it was
    raised speaks of the code that raises it, not of a frame the log never showed."""
    import glob

    from doctor.analyze import analyze
    case = glob.glob(str(Path(__file__).resolve().parents[1] / "fixtures/devlogs18/2230-*/log.txt"))[0]
    top = analyze([case]).findings[0]
    assert "The log shows no traceback for it" in top.message
    assert "innermost library frame" not in top.message
    assert "The code that raises it is vLLM's multimodal input processing" in top.message


def test_an_exception_named_then_quoted_in_a_sentence_is_read_as_an_exception_line():
    # rlhflow/online-rlhf#32 (fixtures/devlogs34/3705): "... I encountered a TypeError with the message: <msg>. It ..."
    from doctor.sources.logtext import split_segments
    parts = split_segments("When running the training code, I encountered a TypeError with the message: "
                           "DPOTrainer.__init__() got an unexpected keyword argument 'beta'. It seems like an issue.")
    assert "TypeError: DPOTrainer.__init__() got an unexpected keyword argument 'beta'" in parts
    # words about a message that name no exception type stay one sentence
    assert split_segments("Please see the error message: it was long.") == ["Please see the error message: it was long."]


# fixtures/devlogs57 6011 (a LLaMA-Factory issue): the title is safetensors' message, cut by the title's length, above
# the pasted launch command; the log holds no other failure line
_TIED_MESSAGE = ("Some tensors share memory, this will lead to duplicate memory on disk and potential differences when "
           "loading them again: [{'pretrained_model.base_model.model.lm_head.weight', 'pretrained_mo")
_LAUNCH = ("deepspeed --num_gpus 2 --master_port=9527 src/train_bash.py \\\n    --stage rm \\\n    --do_train \\\n"
           "    --model_name_or_path chatglm3-6b \\\n    --finetuning_type lora \\\n    --output_dir out\n")


def test_a_title_that_is_a_librarys_message_cut_is_read_above_a_pasted_command(tmp_path):
    from doctor.analyze import analyze
    log = tmp_path / "log.txt"
    log.write_text(_TIED_MESSAGE + "\n" + _LAUNCH, encoding="utf-8")
    first = analyze([str(log)]).findings[0]
    assert first.rule_id == "GD999" and first.evidence[0].line == 1
    assert "RuntimeError: Some tensors share memory" in first.message and "The wording is safetensors' (" in first.message
    # the same words on a later line of a launched program's log are not its error: a program prints the type
    log.write_text(_LAUNCH + "note: " + _TIED_MESSAGE[:20] + "\n" + _TIED_MESSAGE + "\n", encoding="utf-8")
    assert not any(f.rule_id == "GD999" for f in analyze([str(log)]).findings)
    # a line shorter than 60 characters of the message's fixed text is not taken for it
    log.write_text(_TIED_MESSAGE[:50] + "\n" + _LAUNCH, encoding="utf-8")
    assert not any(f.rule_id == "GD999" for f in analyze([str(log)]).findings)


def test_a_type_glued_to_the_chinese_words_of_a_title_is_read_from_its_own_capital():
    # fixtures/devlogs58/6114: the words before the type are the title's, not part of the type
    assert exceptions("swift3.8.0dev版本GRPO训练报错TypeError: Qwen2_5_VLModel.forward() got an unexpected keyword "
                      "argument 'pixel_values'\n") == [
        ("TypeError", "Qwen2_5_VLModel.forward() got an unexpected keyword argument 'pixel_values'")]
    # an ASCII line keeps its whole dotted type
    assert exceptions("torch.OutOfMemoryError: CUDA out of memory.\n") == [("torch.OutOfMemoryError", "CUDA out of memory.")]
    # a glued type without its message names no exception of its own: the stack pasted below decides
    # (fixtures/devlogs34/3723: "[Bug]: 使用trl进行GRPO训练出现RuntimeError" over a cut stack)
    assert exceptions("[Bug]: 使用trl进行GRPO训练出现RuntimeError\n") == []
    assert exceptions("GRPO训练DeepSpeed中报AssertionError\n") == []


def test_a_message_quoted_in_a_sentence_is_read_as_the_exception_it_quotes(tmp_path):
    """fixtures/devlogs59 6202 (huggingface/trl, an SFTTrainer run): the error is a markdown link inside a code span
    in the author's sentence, with typographic quotes; transformers' BatchEncoding refusal is a ValueError."""
    from doctor.analyze import analyze
    log = tmp_path / "log.txt"
    log.write_text("When I set `packing=False` in the SFTTrainer, I get an error which says `[Unable to create tensor, "
                   "you should probably activate truncation and/or padding with \u2018padding=True\u2019 "
                   "\u2018truncation=True\u2019](https://discuss.huggingface.co/t/x/98833)`.\n", encoding="utf-8")
    first = analyze([str(log)]).findings[0]
    assert first.category == "dataset-or-template-error" and first.confidence == "possible"
    assert "`ValueError: Unable to create tensor, you should probably activate truncation and/or padding with " \
           "'padding=True' 'truncation=True'`" in first.message
    # a quotation that is no library's message is no exception
    log.write_text("I get an error which says `the tensors could not be created for this batch at all`.\n",
                   encoding="utf-8")
    assert not any("ValueError" in f.message for f in analyze([str(log)]).findings)
