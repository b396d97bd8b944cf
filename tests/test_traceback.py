

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
