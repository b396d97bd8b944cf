

def test_an_exception_behind_a_host_label_on_a_one_line_paste():
    """pdsh's 'worker-7: ' (or srun --label's '3: ') before the exception where no other line lets the reader take the
    label off: the exception is read; a capitalised word before it is no label."""
    from doctor.signals import LogLine, Where
    from doctor.sources.traceback import TracebackTracker

    def one(text):
        return TracebackTracker().feed(LogLine(text, text, Where("log.txt", 1), None, 1))

    e = one("worker-7: ValueError: The model's max seq len (4096) is larger than the KV cache (3664).")
    assert e is not None and e.type == "ValueError" and e.message.startswith("The model's max seq len")
    assert one("3: RuntimeError: CUDA error: out of memory").type == "RuntimeError"
    assert one("Note: ValueError: x") is None


def test_a_frame_line_pasted_without_its_function_keeps_its_place_and_code():
    """`File "x.py", line 57` with no `, in name` (a user shortened it; devlogs38 4113): the frame is read with its
    source line, as the frame of a traceback whose exception line comes after; a frame hard-wrapped inside its line
    number still joins its remainder."""
    from doctor.signals import LogLine, Where
    from doctor.sources.traceback import NO_FUNC, TracebackTracker

    def feed(lines):
        tracker, got = TracebackTracker(), []
        for i, text in enumerate(lines, 1):
            e = tracker.feed(LogLine(text, text, Where("log.txt", i), None, i))
            if e is not None:
                got.append(e)
        return tracker, got

    tracker, got = feed(['File "/axolotl/prompt_strategies/dpo/chat_template.py", line 57',
                         '"role": role_map[m[message_property_mappings["role"]]],', "KeyError: 'tool'"])
    assert len(got) == 1 and got[0].type == "KeyError"
    (frame,) = got[0].frames
    assert (frame.path, frame.lineno, frame.func) == ("/axolotl/prompt_strategies/dpo/chat_template.py", 57, NO_FUNC)
    assert frame.code == '"role": role_map[m[message_property_mappings["role"]]],'
    # the exception above its stack: the stack stays open, for the reader that pairs them
    tracker, got = feed(["KeyError: 'tool'", 'File "/axolotl/prompt_strategies/dpo/chat_template.py", line 57',
                         '"role": role_map[m[message_property_mappings["role"]]],'])
    assert len(got) == 1 and not got[0].frames
    ((_, frames),) = tracker.open_tracebacks()
    assert frames[0].lineno == 57 and frames[0].code.startswith('"role"')
    tracker, got = feed(['  File "/x/site-packages/llamafactory/data/aligner.py", line 15',
                         "3, in convert_sharegpt", "    role = tag_mapping[message[dataset_attr.role_tag]]",
                         "KeyError: 'observation'"])
    (frame,) = got[0].frames
    assert (frame.lineno, frame.func) == (153, "convert_sharegpt") and frame.code.startswith("role = ")
