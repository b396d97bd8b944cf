"""A command text's reading is kept for the next time the same text comes (sources/command_text.py): each caller gets its
own deep copy, so what one run's configuration does with a value never reaches another's."""
from doctor.signals import LogLine, Where
from doctor.sources import command_text
from doctor.sources.swiftconfig import RunConfig

RUN_SH = ("run sh: `CUDA_VISIBLE_DEVICES=0,1 NPROC_PER_NODE=2 /venv/bin/python3 /venv/lib/python3.11/site-packages/swift/cli/"
          "rlhf.py --rlhf_type grpo --reward_funcs accuracy format --vllm_engine_kwargs '{\"a\": [1, 2]}' --model M`")
VERL = ("python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.n_gpus_per_node=8 "
        "data.train_files=\"['a', 'b']\"")


def _line(text: str, n: int) -> LogLine:
    return LogLine(text, text, Where("log", n), None, n)


def test_a_reading_is_the_callers_own():
    command_text._kept.cache_clear()
    for text in (RUN_SH[len("run sh: "):].strip("`"), VERL):
        first = command_text.read_command(text)
        assert command_text.read_command(text) == first == command_text._read(text)
        first.flags = None if first.flags is None else {k: "x" for k in first.flags}
        for launch in first.launches:
            launch.flags.clear()
            launch.env.clear()
        if first.launch is not None:
            first.launch.overrides.clear()
            first.launch.flags.clear()
        first.env.clear()
        assert command_text.read_command(text) == command_text._read(text)   # the kept reading is untouched


def test_a_repeated_launcher_line_reads_as_the_first():
    command_text._kept.cache_clear()
    once = RunConfig()
    once.feed(_line(RUN_SH, 1))
    again = RunConfig()
    again.feed(_line(RUN_SH, 1))
    again.args["reward_funcs"].append("changed")     # a reader changing what it got
    again.launches[0].flags["reward_funcs"].append("changed")
    again.feed(_line(RUN_SH, 9))                     # a second run of the same log, the same line
    assert again.args == once.args and again.cli == once.cli and again.env == once.env
    assert again.launches == once.launches and again.torchrun == once.torchrun
    assert again.args["reward_funcs"] == ["accuracy", "format"]
    assert again.args["vllm_engine_kwargs"] == {"a": [1, 2]}
    assert again.args["reward_funcs"] is not once.args["reward_funcs"]


def test_shell_variables_set_in_the_same_text_are_expanded_and_others_left_unknown():
    # dev15 1817: `nproc_per_node=8` on a line of its own, then `NPROC_PER_NODE=$nproc_per_node swift pt ...`
    text = "nproc_per_node=8\nCUDA_VISIBLE_DEVICES=0,1 \\\nNPROC_PER_NODE=$nproc_per_node \\\nswift pt --model m\n"
    read = command_text.read_command(text)
    assert ("NPROC_PER_NODE", "8") in read.env and read.launches[0].env["NPROC_PER_NODE"] == "8"
    assert command_text.expand_variables("NPROC_PER_NODE=${N} swift sft") == "NPROC_PER_NODE=${N} swift sft"  # set elsewhere


def test_a_gpu_count_from_an_unknown_variable_is_not_read_as_unset():
    from doctor.checks.args.gpu_layout import trainer_layout
    run = RunConfig()
    run.add_command("CUDA_VISIBLE_DEVICES=0,1,2,3 NPROC_PER_NODE=$N swift sft --model m")
    assert trainer_layout(run) == (None, None, True)
