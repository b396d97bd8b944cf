"""GD327: a paste that describes its failure in words (English or Chinese prose) and shows no line that any rule
reads. The last resort before "No problem found.": the symptom the words name, at `possible`, with what to paste
so that the next reading rests on the run's own lines. Pure: the lines of the log's end in, one finding out."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import replace

from ... import lazyre
from ...engine.state import RunState
from ...model import Finding, Severity
from ...release_fill import release_said
from ...rules import Rule, evidence_of
from ...signals import LogLine
from ...sources.prose_text import CJK, LOGGED, WORD, form_or_reply, is_prose, keyed, plain_share
from ...swift.trainer_kind import UNSCORED_KINDS
from .._series import TOO_EARLY
from ._progress import VLLM_ORIGINS
from .endings import plain
from .kl_nan_said import kl_nan
from .knobs_said import knob_fix
from .paste_next import asked_rows, repetition_shown, rows_beside, still_missing
from .said_pairs import pair_symptom
from .sizes_said import FIXES as SIZE_FIXES
from .sizes_said import said_of, size_reading
from .slow_bar import PACE_FIX, PACE_FIX_UNSCORED, Pace, bar_pace, pace_sentence
from .stages_said import stages_said
from .symptom_words import (
    ADVICE,
    AFTER_SET_UP,
    BANG_OUTPUT,
    BARE_OOM,
    DENIED,
    GPU_OOM,
    GPU_WORDS,
    LOSS_ZERO,
    MEANWHILE,
    MEANWHILE_NO_TIMEOUT,
    MEANWHILE_NO_TRAINING,
    MEANWHILE_SAID,
    MEANWHILE_UNSCORED,
    MEANWHILE_VLLM_START,
    MID,
    MULTI_NODE,
    NO_ERROR,
    NO_TRAINING_SAID,
    ONE_NODE,
    PASTE_NEXT,
    PINNED,
    SCORE_ZERO,
    SET_UP_DONE,
    START,
    SYMPTOMS,
    TIMEOUT_SAID,
    TRAINING_SAID,
)
from .usual_causes import USUAL_CATEGORY, USUAL_UNSCORED, USUAL_VLLM_START, usual
from .vllm_share_said import small_share


def program_lines(lines: list[LogLine]) -> list[LogLine]:
    """The lines a program printed, up to the last one: a paste's sentences ("It worked yesterday.", "报错信息如下："),
    at its end or between its lines, are not where or how the log ends. All of them when every line is a sentence."""
    kept = [ln for ln in lines if ln.text.strip() and not _sentence(ln)]
    return kept if kept else lines


def _sentence(ln: LogLine) -> bool:
    """A line of a person's words: prose once its prefixes are off, and printed without a logger's prefix (vLLM's
    "(APIServer pid=1) DEBUG 08-09 20:55:10 [utils.py:777] Waiting for 1 local ... to start." reads as a sentence
    once the reader took its prefix off)."""
    return not ln.origin and is_prose(plain(ln.text)) and not LOGGED.match(plain(ln.raw))


# a setting of a pasted config or command on a line of its own, with at most a comment after its value
# ("freeze_vision_tower: true  # keep the ViT frozen", "--save_only_model true \\", "- gradient_checkpointing=True"): its
# words name a setting, not the failure (a title that starts with one and goes on is a sentence: "ds3_gather_for_
# generation=False, stuck in the training stage")
SETTING_LINE = lazyre.compile(r"^\s*(?:[-*]\s+)?(?:--[a-z][\w-]*|[a-z][a-z0-9]*(?:[_.][a-z0-9]+)+)(?:\s*[:=]\s*|\s+)"
                          r"[^\s#]+\s*\\?\s*(?:#.*)?$")


# a line that names an error or exception (a program's, in a form the exception parser did not take)
_ERROR_WORD = lazyre.compile(r"\b[A-Z]\w*(?:Error|Exception)\b|(?i:\berror\b\s*[:\]]|\bfatal\b|\bfailed\b\s*[:(])")
# ... printed by a program, not a person's sentence: a log record's prefix (torch's C++ "[E ProcessGroupNCCL.cpp:474]"
# too) or an exception's name at the line's start
_PROGRAM_LINE = lazyre.compile(r"^\s*(?:\[[IWEF] [\w.]+:\d+\]|\[?\d{4}-\d\d-\d\d|\[?(?:INFO|WARNING|ERROR|FATAL|CRITICAL)\b|"
                               r"[\w.]*(?:Error|Exception)\b)")


def prose_lines(lines: list[LogLine]) -> list[LogLine]:
    out = []
    for ln in lines:
        text = plain(ln.text)
        if not text or LOGGED.match(text) or keyed(text) or (SETTING_LINE.match(text) and not CJK.search(text)):
            continue
        # a sentence holds few digits and separators; a metric row or a log record that lost its prefix holds many
        # (a paste's first line may be its title, a sentence of two words: "PPO OOM")
        # (a title often names the hardware: "Train 14B with 8*H100(80GB) OOM")
        words, share = (2, 0.6) if ln.where.line == 1 else (4, 0.75)
        if CJK.search(text) or (len(WORD.findall(text)) >= words and plain_share(text) >= share):
            out.append(ln)
    return out


# the author says the run goes on: "I can GRPO Qwen3, but ...", "能跑了但是...", "it is training now"
_RUNS_ON = lazyre.compile(r"(?i)\bI (?:can|could) (?:now )?(?:train|run|GRPO|fine-?tune)\b|\b(?:it|training|the run) "
                          r"(?:is (?:now )?(?:running|training)|runs now|trains now)\b|能跑|可以跑|跑起来了|能训练|可以训练")


# a condition on the sentence: "without Ray it runs", "可以跑通 when vllm_num_engines is 0", "单机可以跑": the run goes on
# only in another setup, which places the failure instead of taking it back
_CONDITION = lazyre.compile(r"(?i)\b(?:without|when|if|only|unless|except|some(?:times)?)\b|不用|不开|关掉|去掉|设置?为\s*0|"
                            r"单机|单卡|单台|单节点|一台|如果|只有|有的|有些|部分")


def runs_on(lines: list[LogLine]) -> LogLine | None:
    """The sentence of a paste that says the run goes on (so where the excerpt stops is no stop), or None; a sentence
    that says it goes on under a condition is a contrast, not that."""
    return next((ln for ln in prose_lines(lines) if _RUNS_ON.search(plain(ln.text))
                 and not _CONDITION.search(plain(ln.text))), None)


# the author says the run failed ("ppo报错如下：", "I get this error:", "training fails"): a pasted excerpt that then
# stops is cut where its author stopped copying, before the error it announces
_ERROR_SAID = lazyre.compile(r"(?i)报错|出错|错误|\berror\b|\bfail(?:s|ed|ing|ure)?\b|\bexception\b|\bcrash(?:es|ed)?\b|"
                             # a title or sentence naming trouble without an error word: "Having issues with vLLM
                             # for GRPO", "ppo训练出现问题", an issue template's "[Bug]"
                             r"\bissues? with\b|\bproblems?\b|\bbug\b|\bdoes(?:n't| not) work|\bnot (?:to be )?working\b|"
                             # a refusal: "glm4_moe awq quantization isn't supported yet", "cannot be AWQ-quantized"
                             r"\b(?:is|are)(?:n't| not) supported\b|\bcannot be\b|"
                             # a run that ends early: "training consistently halts midway", "Stopping After 1 Epoch"
                             r"\bhalt(?:s|ed|ing)?\b|\bstop(?:s|ped|ping) after\b|"
                             r"问题|不行|跑不")


def error_said(lines: list[LogLine]) -> LogLine | None:
    """The sentence of a paste that says the run failed with an error, when no sentence says it hung or printed no
    error; else None."""
    said = prose_lines(lines)
    if hang_words(said) is not None:
        return None
    # the line as pasted: the reader takes a bracketed head ("[Bug] ...", an issue template's title) off its text
    return next((ln for ln in said if _named(_ERROR_SAID, plain(ln.raw)) and not NO_ERROR.search(plain(ln.raw))
                 and not form_or_reply(plain(ln.raw))), None)


def cut_before_error(ctx: RunState) -> bool:
    """A pasted excerpt (no launch of its own printed: a command file given beside it does not count) whose author
    says an error follows ("ppo报错如下："): it stops where its author stopped copying, not where the run stopped."""
    return not ctx.launch_in_log() and error_said(ctx.last_tail()) is not None


def _named(rx: re.Pattern, text: str) -> bool:
    """Whether ``text`` names the symptom ``rx`` matches, not only denies it ("显存并没有OOM", "no OOM") or names it as
    what to avoid ("To avoid OOM problem, ...")."""
    text = text.replace("**", "")  # markdown emphasis: "**significantly** slower than"
    return any(not DENIED.search(text[max(0, m.start() - 12):m.start()])
               and not ADVICE.search(text[max(0, m.start() - 30):m.start()]) for m in rx.finditer(text))


# the RL trainers and their words: a paste that names one is an RL run
_RL_RUN = lazyre.compile(r"(?i)(?<![a-z])(?:grpo|ppo|rloo|dapo|gspo|reinforce\+\+|rlhf|advantages?)(?![a-z])")


def symptom(lines: list[LogLine], around: list[LogLine] | None = None,
            paired: bool = False) -> tuple[str, str, LogLine] | None:
    """(category, what the words say, the line) of the first symptom named in these prose lines: the sizes of saved
    weights they state (judged by arithmetic, sizes_said.py, with the names ``around`` them), else the symptom
    words."""
    sized = size_reading(lines, around)
    if sized is not None:
        return sized.category, said_of(sized), sized.line
    # a line that asks whether something is the cause ("是否可能由于torch版本...导致loss为0？", "could it be the
    # driver?") names a guess, not the symptom: read only when no other line names one
    plain_lines = [ln for ln in lines if not _GUESS.search(ln.text)]
    # a thread's title names the failure it is about: a symptom there comes before one the body mentions in passing
    # ("Training hangs at step 120" above "earlier I had an OOM with a larger batch")
    # (the body's line still places a hang the title only names: "卡住" above "卡在5/4752")
    title = [ln for ln in plain_lines[:1] if ln.where.line == 1]
    # an RL method named anywhere in the input, its config included ("adv_estimator: grpo")
    rl_run = any(_RL_RUN.search(plain(x.text)) for x in (around or lines))
    found = _first_symptom(plain_lines, rl_run)
    titled = _first_symptom(title, rl_run) if title and found is not None else None
    if titled is not None and _family(titled[0]) != _family(found[0]):
        found = titled
    found = found if found is not None or len(plain_lines) == len(lines) else _first_symptom(lines, rl_run)
    # (``paired``: the subject-and-predicate reading too, for a pasted excerpt: a whole log's printed text, such as
    # its completions, is no person's description)
    return found if found is not None or not paired else _paired(plain_lines)


def _paired(lines: list[LogLine]) -> tuple[str, str, LogLine] | None:
    """The symptom a sentence names by a subject and a predicate (said_pairs.py), where no phrase names one."""
    for ln in lines:
        got = pair_symptom(plain(ln.text))
        if got is not None:
            category, said = got
            return (_hang_phase(lines) if category == "hang" else category), said, ln
    return None


# the end of a sentence inside a line: a full stop, question or exclamation mark before a space, or a Chinese one
_SENTENCE_END = lazyre.compile(r"[.!?;](?=\s)|[。！？；]")


def _patterns_of(said: str) -> list[re.Pattern]:
    """The symptom patterns whose words say ``said``."""
    return [rx for rx, _, s in SYMPTOMS if s == said]


def said_quote(said: str, text: str, width: int = 160) -> str:
    """What to quote of a line that names a symptom: the line when it is short, else the sentence that names it (a
    long line's first words may be about something else), cut to ``width`` characters."""
    if len(text) <= width:
        return text
    m = next((m for rx in _patterns_of(said) for m in [rx.search(text)] if m is not None), None)
    if m is None:
        return text[:width]
    start = max((e.end() for e in _SENTENCE_END.finditer(text, 0, m.start())), default=0)
    end = next((e.end() for e in _SENTENCE_END.finditer(text, m.end())), len(text))
    sentence = text[start:end].strip()
    return sentence if len(sentence) <= width else sentence[:width]


# a run that samples no completions, named in words: supervised or preference training, pre-training
_UNSCORED_SAID = lazyre.compile(r"(?i)(?<![a-z])(?:sft|dpo|kto|orpo|simpo|cpo|pre-?train\w*|continued pretraining)(?![a-z])")


def no_rollouts(ctx: RunState, lines: list[LogLine]) -> bool:
    """A run that samples no completions by what the inputs show: its trainer (SFT, DPO...), its words, or no RL
    method named anywhere and no RL trainer read."""
    kind = ctx.trainer_kind().kind
    if unscored_shown(ctx, lines):
        return True
    return kind is None and not any(_RL_RUN.search(plain(ln.text)) for ln in lines)


def unscored_shown(ctx: RunState, lines: list[LogLine]) -> bool:
    """The inputs show a run without rollouts: its trainer (SFT, DPO...) or its words name one, and no RL method."""
    return ctx.trainer_kind().kind in UNSCORED_KINDS or _unscored_said(lines)


def _unscored_said(lines: list[LogLine]) -> bool:
    """The words name a run without rollouts (SFT, DPO, pre-training) and no RL trainer."""
    texts = [plain(ln.text) for ln in lines]
    return any(_UNSCORED_SAID.search(t) for t in texts) and not any(_RL_RUN.search(t) for t in texts)


def _said_again(said: str, line: LogLine, lines: list[LogLine]) -> LogLine | None:
    """Another prose line of the paste that names the same symptom as ``line`` (in the same words' class), or None."""
    rxs = _patterns_of(said)
    return next((ln for ln in prose_lines(lines) if ln is not line and ln.where != line.where
                 and any(_named(rx, plain(ln.text)) for rx in rxs)), None)


def _family(category: str) -> str:
    return "hang" if category.startswith("hang") else category


# a question that proposes a cause
_GUESS = lazyre.compile(r"(?i)是否(?:可能|是|因为|由于)|会不会是|是不是(?:因为|由于)|难道是|\bcould (?:it|this|that) be\b|"
                        r"\b(?:is|was) (?:it|this|that) (?:possible|because|due to|caused by)\b|"
                        r"\bmight (?:it|this|that) be\b")


def _first_symptom(lines: list[LogLine], rl_run: bool) -> tuple[str, str, LogLine] | None:
    rl = None
    for rx, category, said in SYMPTOMS:
        for k, ln in enumerate(lines):
            if _named(rx, plain(ln.text)):
                if said == SCORE_ZERO and not rl_run:
                    break  # a score or accuracy is the reward only in an RL run (not a supervised run's evaluation)
                if said == LOSS_ZERO:
                    # a policy-gradient loss is 0 by construction where the group's advantages are (GRPO's mean
                    # advantage is 0): an RL run named anywhere in the paste is not a supervised loss falling to 0
                    rl = rl if rl is not None else any(_RL_RUN.search(plain(x.text)) for x in lines)
                    if rl:
                        break
                if said == GPU_OOM:
                    # whose memory: the line or the two after it (a title, then its description) name the GPU, or
                    # the words do not say ("memory oom error")
                    if not any(GPU_WORDS.search(x.text) for x in lines[k:k + 3]):
                        said = BARE_OOM
                if category == "gpu-underutilized" and _stopped_not_slow(lines):
                    # idle GPUs beside a run that stopped: the idleness of a hang
                    category, said = next((c, w) for _, c, w in SYMPTOMS if c == "hang")
                return (_hang_phase(lines) if category == "hang" else category), said, ln
    return None


# a run said to stop short without an error ("training stops at step 150 without any error", "no longer progresses",
# "the process is still alive"), and a busy CPU beside idle GPUs (work that moved to the CPU: slow, not stopped)
_STOPPED = lazyre.compile(r"(?i)\b(?:stops?|stopped|halts?|halted|freezes|froze)\b[^.;。\n]{0,20}\b(?:at|after|on) "
                          r"(?:the )?(?:step|iteration|iter|epoch)\b|\b(?:stops?|stopped)\b[^.;。\n]{0,30}\bwithout "
                          r"(?:any )?(?:errors?|exceptions?|messages?|logs?)\b|\bno longer (?:progress|updat|mov)\w*|"
                          r"\bprocess(?:es)? (?:is |are )?still (?:alive|running)\b|"
                          # ("stuck here with 7 GPU 100% usage + 1 GPU 0% usage": the idle GPU of a run that hangs)
                          r"(?<![a-z])(?:stuck|hangs|hung|froze|frozen)(?![a-z])|卡住|卡死")
_CPU_BUSY = lazyre.compile(r"(?i)\bcpu\b[^.;。\n]{0,30}(?:\bhigh\b|\b(?:9\d|100) ?%|\bbusy\b|\bmaxed\b)")


def _stopped_not_slow(lines: list[LogLine]) -> bool:
    texts = [plain(ln.text) for ln in lines]
    return any(_STOPPED.search(t) for t in texts) and not any(_CPU_BUSY.search(t) for t in texts)


def symptom_in(inputs: Iterable[Iterable[LogLine]],
               paired: bool = False) -> tuple[tuple[str, str, LogLine], list[LogLine]] | None:
    """The first symptom the prose lines of these inputs name (``symptom``), with the lines of the input it is in."""
    for lines in inputs:
        lines = list(lines)
        found = symptom(prose_lines(lines), lines, paired)
        if found is not None:
            return found, lines
    return None


def symptom_of_run(ctx: RunState) -> tuple[tuple[str, str, LogLine], list[LogLine]] | None:
    """``symptom_in`` over the run's inputs, the one that ends last first: the description may sit in another (an
    issue's text beside its script)."""
    return symptom_in([ctx.last_tail(), *ctx.tails.values()], paired=not ctx.launch_in_log())


def slow_said(ctx: RunState) -> bool:
    """The paste's words say the run is slow or leaves its GPUs idle: a run that goes on, whose log the paste cuts."""
    got = symptom_of_run(ctx)
    return got is not None and got[0][0] in ("slow-training", "gpu-underutilized")


def hang_words(lines: list[LogLine]) -> tuple[str, LogLine] | None:
    """(hang-at-start or hang-mid-training, the line) when these prose lines say the run was stuck, whatever other
    symptom they also name ("if it were out of memory..." beside "it always freezes at the same step")."""
    rx = next(rx for rx, category, _ in SYMPTOMS if category == "hang")
    line = next((ln for ln in lines if _named(rx, plain(ln.text))), None)
    return (_hang_phase(lines), line) if line is not None else None


# the author stopped the run themselves: "I can stop it and raise this exception", "after Ctrl-C", "手动中断"
_BY_HAND = lazyre.compile(r"(?i)\b(?:stop|stopped|kill|killed|interrupt(?:ed)?|terminat(?:e|ed))\s+(?:it|the (?:run|"
                          r"training|process|program|job))\b|\bctrl[- +]?c\b|\^C|手动(?:停止|中断|终止)|强制(?:停止|中断)")


def stopped_by_hand_said(lines: list[LogLine]) -> LogLine | None:
    """The sentence of a paste that says its author stopped a stuck run (so a stack below it is where the run sat,
    not a crash), when the paste also says it hung; else None."""
    said = prose_lines(lines)
    if hang_words(said) is None:
        return None
    return next((ln for ln in said if _BY_HAND.search(plain(ln.text))), None)


def of_vllm_run(category: str, ctx: RunState) -> str:
    """Out of GPU memory in a run of vLLM itself (a server, offline inference: the framework the run shows) is vLLM's
    memory category, whose fix is gpu_memory_utilization and the KV cache, not a trainer's batch."""
    if category != "cuda-oom":
        return category
    framework = ctx.framework()[0]
    # vLLM's own process prefixes (VllmWorker, EngineCore...) where no trainer is named: the frames alone say torch
    engine = framework in (None, "torch") and any(line.origin in VLLM_ORIGINS for tail in ctx.tails.values()
                                                  for line in tail)
    return "vllm-oom-or-kv-cache" if framework == "vllm" or engine else category


def bar_mid_way(lines: list[LogLine]) -> Pace | None:
    """The last paced bar of these lines when it is a long loop's, stopped part of the way: steps ran ("281/20820
    [03:48, 1.28it/s]"; a model's few checkpoint shards or a finished data map are no training progress)."""
    pace = bar_pace(lines)
    return pace if pace is not None and 0 < pace.done < pace.total and pace.total >= 50 else None


def start_said(lines: list[LogLine]) -> bool:
    """The words place a stop at start-up: they name the start, or a stop on several nodes where one node runs (when
    they do not say training had made progress: "训练了600步时突然卡死" on several nodes is a stop mid-run)."""
    texts = [plain(x.text) for x in lines]
    # the lines joined too: a sentence hard-wrapped by the paste keeps its words across the break (at a space, or
    # inside a word: "I cann" / "ot see the progress bar")
    if any(START.search(t) for t in texts) or any(START.search(sep.join(texts)) for sep in (" ", "")):
        return True
    return any(MULTI_NODE.search(t) for t in texts) and any(ONE_NODE.search(t) for t in texts) and \
        not any(MID.search(t) for t in texts)


def _hang_phase(lines: list[LogLine]) -> str:
    """The hang the words describe: at start-up when they name the start (step 0, the first step) or a stop on
    several nodes where one node runs; mid-training when they say training had made progress; else at start-up, the
    likelier of the two when nothing places it (of the hangs in the development logs' labels, about three in four
    stop before the first step: process groups, engines and servers that never come up)."""
    if start_said(lines):
        return "hang-at-start"
    if any(MID.search(plain(x.text)) for x in lines):
        return "hang-mid-training"
    return "hang-at-start"


class ProseSymptom(Rule):
    kinds: frozenset[type] = frozenset()  # reads the last lines of each log at the end (RunState.tails)

    def finish(self, ctx: RunState) -> list[Finding]:
        if ctx.exceptions or ctx.open_tracebacks:
            return []
        # (a remark on the configuration alone, with no log line behind it, is no evidence of how the run failed)
        warned = [f for f in ctx.findings if f.severity >= Severity.warning and f.evidence]
        # a guess from where an excerpt stops (the log-end rules) yields to a symptom its author names in words; any
        # other finding, or the end of a whole log, is the run's own evidence and wins
        # (a launch command given beside the paste does not make the paste a whole log: its launcher lines would)
        # (an nvidia-smi table pasted among the words, often because an issue template asks for one, shows the GPUs
        # at one moment: it yields to the failure the words name, and ranks after it)
        if warned and (ctx.run.launch_printed or any(f.rule_id not in _ENDING_GUESSES and not _pasted_gpus(f, ctx)
                                                     for f in warned)):
            return []
        got = symptom_of_run(ctx)
        if got is None:
            return []
        (category, said, line), lines = got
        if category == "hang-mid-training" and _stopped_before_training(ctx):
            category = "hang-at-start"  # the words say it stopped; the lines say where: before any step
        elif category == "hang-at-start" and not start_said(prose_lines(lines)) and (
                ctx.metrics_steps or bar_mid_way(lines) is not None):
            category = "hang-mid-training"  # the words do not place the stop; the log's rows or bar show steps ran
        else:
            category = of_vllm_run(category, ctx)
        if warned and (category.startswith("hang") or any(f.category == category for f in warned)):
            return []  # the words say what the ending already says
        ran = runs_on(lines) if category.startswith("hang") else None
        if ran is not None and hang_words([ran]) is None:
            # "stuck" in a title, "it runs now" below it: the author took it back (not "it runs on one GPU; the same
            # command on two hangs": the sentence that says it runs also says where it hangs)
            return []
        quoted = said_quote(said, plain(line.text))
        nxt = PASTE_NEXT.get(category, "the log's last 200 lines and the launch command")
        if any(NO_ERROR.search(plain(ln.text)) for ln in lines) and "traceback" in nxt.lower():
            nxt = "the log's last 100 lines (the paste says no error was printed) and the launch command"
        beside = rows_beside(category, ctx.metric_facts)
        nxt = asked_rows(still_missing(nxt, category, lines), category, beside)
        timed = stages_said(said, quoted, lines, ctx.run.args) if category == "slow-training" else None
        if timed is not None:
            found = self.make(message=timed.message, fix=timed.fix, evidence=[evidence_of(line), evidence_of(timed.line)],
                              seq=line.seq)
            return [replace(found, category=category, title=timed.title, verify=timed.verify,
                            priority=max([self.meta.priority] + [f.priority + 1 for f in warned]))]
        pace = bar_pace(lines) if category == "slow-training" else None
        if pace is not None:
            # the bar is the step timing the request would ask for: read it, ask for what it cannot show
            msg = (f"The words of the paste say {said} (`{quoted}`). {pace_sentence(pace)} The bar "
                   f"gives the pace, not where the time goes.")
            return [replace(self.make(message=msg, fix=[PACE_FIX_UNSCORED if no_rollouts(ctx, lines) else PACE_FIX],
                                      evidence=[evidence_of(line), evidence_of(pace.line)], seq=line.seq),
                            category=category, title="Training is slow by the paste's words; its progress bar shows the pace",
                            verify=f"the next run's bar shows fewer seconds a step than now ({pace.rate})",
                            priority=max([self.meta.priority] + [f.priority + 1 for f in warned]))]
        named = next((ln for ln in reversed(lines) if ln is not line and _PROGRAM_LINE.match(plain(ln.text))
                      and _ERROR_WORD.search(plain(ln.text))), None)
        # a line that names an error in a form no rule reads (no parsed exception): said as such, never "no line shows"
        looped = repetition_shown(lines) if category == "output-degenerate" else None
        # said as what the paste shows (the finding's confidence says that it rests on the words)
        head = (f"The error line here (`{plain(named.text)[:160]}`) is not a known error message; the words"
                if named is not None
                else f"The paste's own output repeats one text {looped[1]} times (`{plain(looped[0].text)[:120]}`); "
                     f"the words" if looped is not None else "The words")
        cause = usual(said)
        if cause is None and category in USUAL_UNSCORED and no_rollouts(ctx, lines):
            cause = USUAL_UNSCORED[category]  # (the category's RL causes, added with its meanwhile line, do not apply)
        msg = (f"{head} of the paste say {said} (`{quoted}`).{' ' + beside[0] if beside else ''}"
               f"{' ' + cause if cause else ''} Paste next: {nxt}.")
        # the fix is the finding's own request (not a traceback the paste says does not exist, nor one for a metric)
        fix = [f"Paste {nxt}: those lines confirm or correct this reading."]
        # a reading of the paste's own rows that stayed at info for want of steps ("too early to tell from one logged
        # step"; never an info reading for another reason, such as a loss of 0 that is expected at the start): the
        # words say it lasts, so that reading leads, quoted with its row
        shown = next((f for f in ctx.findings if f.category == category and f.severity == Severity.info and f.evidence
                      and f.fix and f.message.startswith(TOO_EARLY)), None)
        if shown is not None:
            msg = (f"The paste's metric rows show it ({shown.title}: `{shown.evidence[0].text[:160]}`), read at info "
                   f"alone for want of steps; the words of the paste say {said} (`{quoted}`), so it "
                   f"lasts beyond the rows shown.")
            fix = list(shown.fix)
        sized = size_reading(prose_lines(lines), lines)
        if sized is not None and said == said_of(sized):
            msg += f" The numbers: {sized.sentence}."
        pinned = next((m.group(0) for ln in prose_lines(lines) for m in [PINNED.search(plain(ln.text))] if m), None) \
            or release_said([plain(ln.text) for ln in prose_lines(lines)])
        if category == "import-or-dependency-error" and pinned:
            fix.append(f"Meanwhile: the description names `{pinned}`: install it (`pip install '{pinned}'`) and "
                       f"compare `pip show` of the packages around it (transformers, accelerate, trl, peft, torch, "
                       f"vllm) with the setup that failed.")
        elif sized is not None and said == said_of(sized):
            fix.append(SIZE_FIXES[sized.kind])
        elif category == "vllm-oom-or-kv-cache" and (share := small_share(lines)) is not None:
            msg = msg.replace(" Paste next:", f" {share[0]} Paste next:", 1)
            fix.insert(0, share[1])
        elif category == "cuda-oom" and (memory := _memory(ctx, lines)) is not None:
            sentence, lever = memory
            if sentence is None:
                fix.append(lever)
            else:
                msg = msg.replace(" Paste next:", f" The paste's settings: {sentence} Paste next:", 1)
                fix.insert(0, lever)
        elif (category == "loss-nan-or-inf" or said == BANG_OUTPUT) and (kl := kl_nan(
                ctx.framework()[0], [plain(x.text) for x in prose_lines(lines)], ctx.run.args,
                sampled_nan=said == BANG_OUTPUT)) is not None:
            msg = msg.replace(" Paste next:", f" {kl[0]} Paste next:", 1)
            fix.append(kl[1])
        elif said == LOSS_ZERO:
            from .loss_zero_said import loss_zero_meanwhile
            fix.append(loss_zero_meanwhile(ctx.run))
        elif said in MEANWHILE_SAID:
            fix.append(MEANWHILE_SAID[said])
        elif category in ("hang-at-start", "hang-mid-training") and (knob := knob_fix(lines)) is not None:
            fix.append(knob)
        elif category == "hang-at-start" and any(SET_UP_DONE.search(ln.text) for ln in lines):
            fix.append(AFTER_SET_UP)
        elif category in MEANWHILE_NO_TRAINING and _trains_nothing(ctx, prose_lines(lines)):
            fix.append(MEANWHILE_NO_TRAINING[category])
        elif category in MEANWHILE_NO_TIMEOUT and not any(TIMEOUT_SAID.search(ln.text) for ln in lines):
            fix.append(MEANWHILE_NO_TIMEOUT[category])
        elif category in MEANWHILE_UNSCORED and (ctx.trainer_kind().kind in UNSCORED_KINDS or _unscored_said(lines)
                                                 or (category == "output-degenerate" and no_rollouts(ctx, lines))):
            fix.append(MEANWHILE_UNSCORED[category])
        elif category == "hang-at-start" and _engine_in_training(ctx, lines):
            fix.append(MEANWHILE_VLLM_START)
            msg = msg.replace(" Paste next:", f" {USUAL_VLLM_START} Paste next:", 1)
        elif category in MEANWHILE:
            fix.append(MEANWHILE[category])
            if usual(said) is None and (cause := USUAL_CATEGORY.get(category)) is not None:
                msg = msg.replace(" Paste next:", f" {cause} Paste next:", 1)
        # the category is the symptom the words name: one rule for all of them, whose catalog category is "other"
        # the body's own line that says it again (a thread's title, then the sentence that tells it): both are the evidence
        again = _said_again(said, line, lines)
        found = replace(self.make(message=msg, fix=fix, evidence=[evidence_of(x) for x in (line, again) if x is not None],
                                  seq=line.seq),
                        category=category, priority=max([self.meta.priority] + [f.priority + 1 for f in warned]))
        if looped is not None and named is None:
            found = replace(found, evidence=(*found.evidence, evidence_of(looped[0])),
                            title="Degenerate output, told in words and shown by the paste's repeating lines")
        if named is not None:
            found = replace(found, evidence=(*found.evidence, evidence_of(named)),
                            title="The paste describes a failure in words; its error line is not a known error message")
        if shown is not None:
            found = replace(found, evidence=(*found.evidence, *shown.evidence[:2]),
                            title=f"{shown.title}; the paste's words say it lasts")
        return [found]


def meanwhile_for(ctx: RunState, category: str, said: str, lines: list[LogLine]) -> tuple[str | None, str | None]:
    """(what usually causes it, what to do meanwhile) for a symptom the words name, for a finding of another rule that
    takes the words' reading (a wrapper's notice that printed no cause): the memory levers with the run's settings,
    the narrow symptom's own line, else the category's."""
    cause = usual(said) or USUAL_CATEGORY.get(category)
    if category == "cuda-oom":
        memory = _memory(ctx, lines)
        return (memory[0] if memory is not None else None), (memory[1] if memory is not None else MEANWHILE[category])
    if said in MEANWHILE_SAID:
        return cause, MEANWHILE_SAID[said]
    return cause, MEANWHILE.get(category)


def _memory(ctx: RunState, lines: list[LogLine]) -> tuple[str | None, str] | None:
    """(the sentence, the lever) of the paste's memory reading (hang/memory_said.py): the floor of model states per GPU
    when it is more than the card the words name holds, or a setting that leaves activations unbounded; else (None,
    the generic levers with the paste's values), or None when the paste shows no settings."""
    from .memory_said import levers_left, memory_reading
    texts = [plain(ln.text) for ln in lines]
    framework = ctx.framework()[0]
    reading = memory_reading(ctx.run.args, texts, framework, ctx.run.world_size())
    if reading is not None:
        return reading.sentence, reading.fix
    left = levers_left(ctx.run.args, texts, framework)
    return (None, left) if left is not None else None


# vLLM named in the words or lines, and a rollout server named nowhere (`swift rollout`, `trl vllm-serve`, server mode)
_VLLM_WORD = lazyre.compile(r"(?i)(?<![a-z0-9_])vllm(?![a-z0-9_])|\bLLMRayActor\b|\bhybrid[_ ]engine\b")
_SERVER_WORD = lazyre.compile(r"(?i)\bvllm_mode\b\W*server\b|\bswift rollout\b|\bvllm-serve\b|\bserver mode\b|"
                              r"\bvllm_server_(?:host|port)\b|\bvllm serve\b")


def _engine_in_training(ctx: RunState, lines: list[LogLine]) -> bool:
    """The run starts a vLLM engine in its training processes: its arguments say so (use_vllm without server mode), or
    its lines name vLLM and no rollout server."""
    args = ctx.run.args
    if args.get("use_vllm") is True:
        return args.get("vllm_mode") != "server"
    texts = [ln.text for ln in lines]
    return any(_VLLM_WORD.search(t) for t in texts) and not any(_SERVER_WORD.search(t) for t in texts)


def _trains_nothing(ctx: RunState, said: list[LogLine]) -> bool:
    """The run trains nothing: a serving or inference command, or words of a merge, export or inference and none of
    training."""
    if ctx.trainer_kind().kind in ("serve", "infer") or ctx.run.command in ("export", "infer", "deploy"):
        return True
    texts = [plain(ln.text) for ln in said]
    return any(NO_TRAINING_SAID.search(t) for t in texts) and not any(TRAINING_SAID.search(t) for t in texts)


def _stopped_before_training(ctx: RunState) -> bool:
    """The log lines the paste holds stop before any training step: no metric row, and their end is a start-up
    phase (an engine starting, shards loading) or a shape that the log-end reading places before training."""
    if ctx.metrics_steps:
        return False
    from .endings import ending_of
    shown = program_lines(ctx.last_tail())
    if len(shown) < 2 or all(_sentence(ln) for ln in shown):
        return False  # only sentences (program_lines then gives them all): the words are all there is
    e = ending_of(shown, 0)
    return e is not None and e.before_training


# the last-resort readings of how an excerpt ends (doctor/checks/hang/log_end.py): where it stops, not why
_ENDING_GUESSES = frozenset({"GD323", "GD324", "GD326", "GD328", "GD329"})
_GPU_SNAPSHOT_RULES = frozenset({"GD501", "GD502", "GD503", "GD504", "GD505", "GD506"})


def _pasted_gpus(f: Finding, ctx: RunState) -> bool:
    """A GPU snapshot rule's finding read from an nvidia-smi table inside a log (sources/gpu_in_log.py)."""
    return f.rule_id in _GPU_SNAPSHOT_RULES and all(e.path in ctx.tails for e in f.evidence)


