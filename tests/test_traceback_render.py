"""Tracebacks in renderings the plain reader does not know: a rich box pasted without its header, IPython's notebook
frames as VS Code renders them, and faulthandler's stack dump reaching the framework detection.

Each test copies real lines of a public thread inline (named in its comment); the shapes are the libraries' own (the
sources are cited in doctor/sources/rich_box.py, doctor/sources/ipython_tb.py and doctor/sources/traceback.py).
"""
from __future__ import annotations

from conftest import lines_of, run_text

from doctor.sources.paste import unwrap
from doctor.sources.traceback import TracebackTracker

# EvilPsyCHo/train_custom_LLM#8 (a LoRA SFT of baichuan-7B): the paste starts inside rich's traceback box, its header
# and the first line's left border gone, and stops after the line that ran (its right border gone too)
HEADLESS_RICH = (
    "     /Data/cj/ML/train_custom_LLM-main/train.py:105 in <module>                   │\n"
    "│                                                                              │\n"
    "│   102 │   model.save_pretrained(training_args.output_dir)                    │\n"
    "│   103                                                                        │\n"
    '│   104 if __name__ == "__main__":                                             │\n'
    "│ ❱ 105 │   main()\n")


def _tracker(text: str) -> TracebackTracker:
    tracker = TracebackTracker()
    for line in lines_of(text):
        tracker.feed(line)
    return tracker


def test_a_rich_frame_line_keeping_one_border_loses_it_in_the_paste_reader():
    assert unwrap("     /Data/cj/ML/train_custom_LLM-main/train.py:105 in <module>                   │") == \
        "/Data/cj/ML/train_custom_LLM-main/train.py:105 in <module>"
    assert unwrap("│ ❱ 105 │   main()") == "❱ 105 │   main()"
    # a bar at one end of a line that is neither a frame nor the line that ran says nothing of rich: kept
    assert unwrap("loss 0.12 │") == "loss 0.12 │"
    assert unwrap("│ 105 total") == "│ 105 total"


def test_a_rich_box_pasted_without_its_header_is_read_with_its_frame():
    tracker = _tracker(HEADLESS_RICH)
    [(last, frames)] = tracker.open_tracebacks()
    assert [(f.path, f.lineno, f.func, f.code) for f in frames] == [
        ("/Data/cj/ML/train_custom_LLM-main/train.py", 105, "<module>", "main()")]
    assert last.where.line == 1


def test_a_headless_rich_paste_gets_a_finding_naming_its_deepest_frame():
    findings = run_text(HEADLESS_RICH)
    assert findings, "silent on a cut rich traceback"
    assert "train.py:105 in <module>" in findings[0].message
    assert findings[0].evidence[0].line == 1


def test_a_bar_ended_line_that_is_no_frame_opens_no_box():
    tracker = _tracker("step 10 │\n│ 105 total │\nValueError: x\n")
    assert tracker.open_tracebacks() == []


def test_a_rich_box_pasted_from_a_code_line_keeps_the_frames_after_it():
    # bigcode-project/starcoder#77 (fixtures/logs/real-thread-deepspeed-batch-assert-rich): the paste starts at the
    # line that ran of a frame whose own line was cut; the next frame's line is folded by rich after its ":"
    text = ("│ ❱  942 │   │   self._batch_assertion()                              │\n"
            "│    943 │                                                            │\n"
            "│                                                                     │\n"
            "│ /opt/conda/lib/python3.7/site-packages/deepspeed/runtime/config.py: │\n"
            "│ 891 in _batch_assertion                                             │\n"
            "│                                                                     │\n"
            "│    890 │   │   assert train_batch == micro_batch * grad_acc * self. │\n"
            "│ ❱  891 │   │   │   f\"Check batch related parameters. train_batch_si │\n"
            "╰─────────────────────────────────────────────────────────────────────╯\n"
            "AssertionError: Check batch related parameters. train_batch_size is not\n")
    tracker = TracebackTracker()
    found = [e for e in (tracker.feed(ln) for ln in lines_of(text)) if e is not None]
    assert len(found) == 1 and found[0].type == "AssertionError"
    [frame] = found[0].frames
    assert (frame.path, frame.lineno, frame.func) == (
        "/opt/conda/lib/python3.7/site-packages/deepspeed/runtime/config.py", 891, "_batch_assertion")
    assert frame.code.startswith('f"Check batch related parameters.')


# Jaykef/ai-algorithms#4 (a from-scratch GRPO trainer run in a VS Code notebook): IPython's frames as VS Code's
# notebook renderer links them, copied as markdown; the paste stops before the second frame's arrow line
VSCODE_CELLS = (
    "---------------------------------------------------------------------------\n"
    "ValueError                                Traceback (most recent call last)\n"
    "Cell In[6], [line 592](vscode-notebook-cell:?execution_count=6&line=592)\n"
    "    [590](vscode-notebook-cell:?execution_count=6&line=590) reward_functions = [xmlcount_reward, "
    "soft_format_reward, strict_format_reward, int_reward, accuracy_reward, sequence_similarity_reward]\n"
    "    [591](vscode-notebook-cell:?execution_count=6&line=591) trainer = GRPOTrainer(model, tokenizer, "
    "reward_functions, config, dataset, processor)\n"
    "--> [592](vscode-notebook-cell:?execution_count=6&line=592) trainer.train()\n"
    "    [594](vscode-notebook-cell:?execution_count=6&line=594) # -------------------------------\n"
    "    [595](vscode-notebook-cell:?execution_count=6&line=595) # Sample from final\n"
    "\n"
    "Cell In[6], [line 463](vscode-notebook-cell:?execution_count=6&line=463)\n"
    "    [461](vscode-notebook-cell:?execution_count=6&line=461) self.clear_memory_cache()\n"
    "    [462](vscode-notebook-cell:?execution_count=6&line=462) if self.scaler is not None:\n")


def test_notebook_cell_frames_as_vscode_links_them_are_read():
    [(last, frames)] = _tracker(VSCODE_CELLS).open_tracebacks()
    # VS Code's renderer drops what follows "line N" (the function): the cell stands for it
    assert [(f.path, f.lineno, f.func, f.code) for f in frames] == [
        ("In[6]", 592, "<cell 6>", "trainer.train()"),
        # cut before the arrow line: the nearest source line shown, just above the one that ran
        ("In[6]", 463, "<cell 6>", "if self.scaler is not None:")]
    assert last.where.line == 10  # the frame line


def test_a_cut_vscode_notebook_traceback_names_its_cell_and_code():
    findings = run_text(VSCODE_CELLS)
    assert "In[6]:463" in findings[0].message and "if self.scaler is not None:" in findings[0].message
    assert "no stack frames" not in findings[0].message


def test_file_frames_with_vscode_links_are_read():
    # ROCm/ROCm#3132 (a comment of 2024-06-04: bitsandbytes' 8-bit Adam in a VS Code notebook): the file frames'
    # places and every source line's number are links
    url = "https://file+.vscode-resource.vscode-cdn.net/home/USER/Documents/temp/~/.conda/envs/bits-env/lib/python3.12"
    text = (
        "NameError                                 Traceback (most recent call last)\n"
        "Cell In[2], [line 21](vscode-notebook-cell:?execution_count=2&line=21)\n"
        "     [20](vscode-notebook-cell:?execution_count=2&line=20) loss.backward()\n"
        "---> [21](vscode-notebook-cell:?execution_count=2&line=21) optimizer.step()\n"
        "\n"
        f"File [~/.conda/envs/bits-env/lib/python3.12/site-packages/torch/optim/optimizer.py:391]({url}/site-packages/"
        "torch/optim/optimizer.py:391), in Optimizer.profile_hook_step.<locals>.wrapper(*args, **kwargs)\n"
        f"    [389]({url}/site-packages/torch/optim/optimizer.py:389)             )\n"
        f"--> [391]({url}/site-packages/torch/optim/optimizer.py:391) out = func(*args, **kwargs)\n"
        f"    [392]({url}/site-packages/torch/optim/optimizer.py:392) self._optimizer_step_code()\n"
        "\n"
        "NameError: name 'str2optimizer32bit' is not defined\n")
    tracker = TracebackTracker()
    found = [e for e in (tracker.feed(ln) for ln in lines_of(text)) if e is not None]
    assert [e.type for e in found] == ["NameError"]
    assert [(f.path, f.lineno, f.func, f.code) for f in found[0].frames] == [
        ("In[2]", 21, "<cell 2>", "optimizer.step()"),
        ("~/.conda/envs/bits-env/lib/python3.12/site-packages/torch/optim/optimizer.py", 391, "wrapper",
         "out = func(*args, **kwargs)")]


def test_faulthandler_frames_reach_the_framework_detection():
    # vllm-project/vllm#6252 (a vLLM OpenAI server running Gemma-2 on flashinfer): the crash's faulthandler stack, cut
    # after two frames; no traceback, no vLLM logger line: its frames alone say vLLM ran
    from doctor.engine import Session
    from doctor.registry import load_catalog

    text = ("Fatal Python error: Segmentation fault\n"
            "\n"
            "Current thread 0x00007fcf597eb640 (most recent call first):\n"
            '  File "/usr/local/lib/python3.10/dist-packages/flashinfer/decode.py", line 514 in begin_forward\n'
            '  File "/usr/local/lib/python3.10/dist-packages/vllm/attention/backends/flashinfer.py", line 149 in '
            "begin_forward\n")
    s = Session(load_catalog())
    for line in lines_of(text):
        s.feed_line(line)
    findings = s.finish()
    assert [(ln.where.line, f.func) for ln, f in s.state.dumped_frames] == [(4, "begin_forward"), (5, "begin_forward")]
    assert s.state.framework()[0::3] == ("vllm", "runtime")
    assert findings[0].rule_id == "GD998" and findings[0].category == "vllm-engine-error"
