"""What a paste's own sentences say about the way out: a change that solved it ("switching from IP to hostname solved it",
"transformers替换成4.30.1就正常了"), a setup in which the same run works ("it works fine on one GPU", "Works on V0
Engine"), or a time it worked ("Yesterday everything worked well"); a reply's advice and the author's reading of the
cause. outcomes_amend.py puts them on the findings. Pure: the kept lines in, sentences out.

Questions ("请问解决了吗？", "Does unsloth still work with ...?"), negations ("doesn't work with", "still not solved")
and sentences with nothing to act on ("I have fixed it, close this issue.") are not read as outcomes."""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .. import lazyre
from ..signals import LogLine
from ..sources.prose_text import LOGGED, loosely_prose

SOLVED = "solved"
WORKS = "works-elsewhere"
WORKED = "worked-before"
ADVISED = "advised"
CAUSE = "cause"

# a change that made the run go: English verbs of fixing, or Chinese "... 就可以了 / 就好了 / 正常了 / 解决了"
_SOLVED = lazyre.compile(
    r"(?i)\b(?:solved|fixed|resolved)\b(?! yet)|\b(?:actual |real |the |a |my |our )?(?:fix|solution|workaround)"
    r"(?: is| was)?\s*[:：]|解决(?:方法|办法|方案)\s*[:：是]|\bmade it work\b|\bgot it (?:to )?work(?:ing)?\b|"
    r"\b(?:works|worked|is working|runs|ran|trains) (?:fine |well |normally |correctly )?(?:now|again)\b|"
    r"\b(?:works|worked) for (?:me|us)\b|"
    # (not when the failure comes in between: "After upgrading to trl 0.15.2 this error appears, with 0.14.0 it was
    # fine" is a regression)
    r"\bafter (?:i |we )?(?:set|setting|add|adding|remov|switch|chang|updat|upgrad|downgrad|install|us)\w*\b"
    # ("After setting CUDA_VISIBLE_DEVICES=0,1,2 only one GPU works": "only" says what fails)
    r"(?:(?!\berror|\bfail|\bcrash|\bbreak|\bappear|\boccur|\bonly\b)[^.;]){0,80}"
    r"\b(?:works|worked|runs|ran|trains|is fine|was fine)\b|"
    # "Downgrading transformers to 4.45.2 works", "reverting to 0.14 fixed it"
    r"\b(?:downgrad|upgrad|revert|roll(?:ing|ed)? back|pinn)\w*\b(?:[^.;]|\.(?=\d)){0,60}\b(?:works|worked|fixe[sd]|helps|"
    r"helped)\b|"
    r"(?:回退|降级|降版本|升级)到?.{0,20}?(?:后|就|之后)?(?:可以|能)正常|"
    r"就(?:可以|好|正常|行|能跑|能训练)了|(?:问题)?(?:已经|已)?解决了|可以解决|(?:就|后|後|之后|以后)正常了|(?:就|后|後)(?:能|可以)正常|"
    # "使用--dtype fp32后推理正常": the change, then what ran normally, without 了
    r"(?:后|後|之后|以后)(?:训练|推理|运行|跑|生成|部署)(?:也|就)?(?:可以|能)?正常|"
    # "Peft版本降低至0.6.0后问题解决，但...": the change, then "问题解决" without 了
    r"(?:后|後|之后|以后)(?:问题)?(?:就|得到|已)?解决|"
    # "When I pin to transformers==4.52.4 the issue is gone", "the error went away using huggyllama/llama-7b"
    r"\b(?:issue|problem|error|bug|crash|hang)s? (?:is|are|was|were) gone\b|\b(?:went|goes) away\b|\bdisappear(?:s|ed)\b|"
    # "I just found a solution that works!", "I figured out a workaround:": the change follows, in the next sentence
    # or line
    r"\b(?:found|have|got|figured out)\s+(?:a |the |an? (?:easy |simple )?)?(?:solution|fix|workaround)\b")
# a setup in which the same run works: "works fine on one GPU", "it works with `0.15.4`", "Works on V0 Engine",
# "the same parameter setup worked fine during the SFT phase", "单卡可以正常训练", "swift infer 可以正常跑"
_GOOD = (r"(?:fine|well|normally|perfectly|correctly|successfully|ok|without (?:any )?(?:errors?|issues?|problems?)|"
         r"no problem)")
_WORKS = lazyre.compile(
    # "works" judges by itself ("it works with `0.15.4`"); "runs" or "trained" only with a word that says it went well
    # ("Command that runs on master", "I trained on Qwen3-8b, and it always output nan" describe the failing run)
    r"(?i)\b(?:works|worked)\s+(?:fine\s+|well\s+|normally\s+|perfectly\s+|correctly\s+|ok\s+)?"
    r"(?:on|with|in|when|if|without|for|under|using|during|through|via)\b|"
    r"\b(?:works|worked|runs|ran|trains|trained|working|run|work|train|be trained|be run)\s+" + _GOOD + r"\b|"
    r"\b(?:was|were|is|are|everything was|all was) (?:fine|ok|okay|working)\s+(?:on|with|in|under|using)\b|"
    r"可以正常(?:训练|跑|运行|推理|使用)|(?:单卡|单机|单节点|一张卡)(?:\S{0,12})?(?:可以|没问题|正常)")
# a time it worked: "worked fine before updating", "Yesterday everything worked well", "前几天...还可以正常训练",
# "worked fine with March release"
_BEFORE = lazyre.compile(r"(?i)\b(?:before|yesterday|previous(?:ly)?|earlier|last (?:week|month)|used to|"
                         r"(?:a )?(?:week|month|day)s? (?:back|ago)|older|(?:january|february|march|april|may|june|july|"
                         r"august|september|october|november|december)(?: release)?)\b|之前|以前|前几天|昨天|原来|"
                         # "it broke after upgrading to 0.15.2", "fails since updating transformers": the later release
                         r"\b(?:broke|breaks|fails?|failed|stopped working|errors?)\b.{0,30}\b(?:after|since)\b.{0,12}"
                         r"\b(?:upgrad|updat|install)\w*|"
                         # "It worked in v0.14 but fails in v0.15", "fine with vllm 0.7.3; with 0.8.1 I get this error"
                         r"\b(?:works?|worked|fine|ok)\b(?:[^.]|\.(?=\d)){0,40}?\bv?\d+\.\d+(?:[^.]|\.(?=\d)){0,40}?"
                         r"(?:\bbut\b|\bwhile\b|\bwhereas\b|;)(?:[^.]|\.(?=\d)){0,60}?"
                         r"\b(?:fails?|failed|breaks?|broken|crash\w*|errors?|not work\w*)\b")
# a regression said outright: "a regression introduced in vllm 0.8.0", "Since ms-swift 3.2 the training crashes"
# "After upgrading to trl 0.15.2 this error appears"
_REGRESSION = lazyre.compile(r"(?i)\bregression\b(?:[^.]|\.(?=\d)){0,40}?\bv?\d+\.\d+|"
                             r"\b(?:since|after (?:i |we )?(?:upgrad|updat|install)\w*)\b(?:[^.]|\.(?=\d)){0,30}?\bv?\d+\.\d+"
                             r"(?:[^.]|\.(?=\d)){0,60}?\b(?:crash\w*|fails?|failed|breaks?|broke|errors?|hangs?|stuck|appears?)\b")
# the sentence denies or questions what it says: "doesn't work with", "still not solved", "请问解决了吗？"
_NEGATED = lazyre.compile(r"(?i)(?:\bnot|n't|\bnever|\bno longer|\bnothing|\bneither|\bnor|没有?|未|不(?:能|可以|行)?|无法)"
                          r"\s*(?:\w+\s+){0,2}$")
# not an outcome yet: "the ref_model should be fixed", "will be fixed in the next release", "hope to get it solved"
_UNREAL = lazyre.compile(r"(?i)\b(?:should|must|needs?|will|would|could|can|may|might|to|hope|want|trying)"
                         r"(?:\s+(?:to|be|get|it|been|not))*\s*$")
# a condition, not an outcome: "If it's solved, then it should be faster", "如果解决了"
_CONDITIONAL = lazyre.compile(r"(?i)(?:\bif|\bonce|\bwhen|\bunless|如果|假如|要是)\s*(?:\S+\s+){0,3}$")
# ... unless it says the change is out: "This should be fixed now - please update with ..."
# (a release named by number is out too: "should be fixed in release 4.3")
_NOW = lazyre.compile(r"(?i)\s+(?:now|already|in (?:the )?(?:latest|new|main|master|nightly)|"
                      r"in (?:the )?(?:release|version|v)\s*v?\d+\.\d+)\b")
_QUESTION = lazyre.compile(r"(?i)[?？]\s*$|吗\s*[?？。]?\s*$|呢\s*[?？。]?\s*$|^\s*(?:does|do|did|is|are|has|have|can|"
                           r"could|any(?:one)?|请问|有没有|是否)\b")
# something to act on: a flag, a setting, a version, a package pin, code, a GPU or node count, an engine, a stage
_CONCRETE = lazyre.compile(
    r"(?i)`[^`]+`|--?[a-z][\w-]{2,}|\b[a-z]+_[a-z_]+\b|\b[\w.-]+\s*[=:]=?\s*[\w.\"'-]+|\bv?\d+\.\d+(?:\.\d+)?\b|"
    r"\b(?:one|single|two|multiple|\d+)\s+(?:gpus?|nodes?|cards?|machines?)\b|\b(?:gpu|node|engine|stage|version|"
    r"release|model|dataset|driver|cuda|torch|deepspeed|vllm|transformers|trl|peft|unsloth|sglang|zero\s?\d|"
    r"eager|hostname|ip|port|docker|env(?:ironment)?|fp16|bf16|fp32|lora|full|flash|sdpa|nccl|batch|update|upgrade|"
    r"downgrade|install|setup|sft|dpo|ppo|grpo|phase|script|notebook|machine|cluster|server|colab|branch|main|"
    r"master|commit)\w*\b|"
    r"[A-Za-z][\w.-]*\s*\d|更新|升级|降级|重新安装|版本|单卡|单机|多卡|参数|环境|显卡|驱动|配置")
# an exception's line, not a sentence ("torch.distributed.DistBackendError: NCCL error ... (run with NCCL_DEBUG=INFO)")
_EXCEPTION = lazyre.compile(r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Warning)\b")
# a change a person made: what a "solved" sentence must name to be a way out ("it has been solved at [this issue]" is
# not one)
_CHANGE = lazyre.compile(
    r"(?i)\b(?:switch|chang|set|add|remov|updat|upgrad|downgrad|install|reinstall|us(?:e|ed|ing)\b|replac|pin|"
    r"disabl|enabl|lower|reduc|increas|rais|export|pass|modif|delet|rebuil|drop|mov|turn)\w*|==?|"
    r"替换|换成|改成|改为|切换|设置|设为|去掉|加上|加了|删除|删掉|安装|更新|升级|降级|修改|拉取|调整|调小|调大|关闭|关掉|开启|换|"
    # a release named by number ("fixed in release 4.3" is an upgrade to it), "降低至0.6.0", "使用"
    r"降低|降至|降到|使用|指定|回退|(?i:\b(?:release|version)\s+v?\d+\.\d+)")
_MAX_QUOTE = 240
# a setting changed: a flag, a key with its value, an environment variable
SETTING_CHANGE = lazyre.compile(r"--[a-z][\w-]{2,}|`?\b[a-z]+_[a-z_]+\b`?\s*[:=]\s*\S|\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")
# a change of a package's release: "transformers替换成4.30.1", "use ms-swift 3.8.3", "try use transformers==4.57.1",
# "pip install --upgrade unsloth", "Update your PEFT"
PACKAGE_CHANGE = lazyre.compile(
    r"(?i)[\w.-]+\s*==\s*v?\d|\bpip install\b|\b(?:upgrad|updat|downgrad|reinstall)\w*\b.{0,40}\b(?:torch|transformers|"
    r"trl|peft|vllm|deepspeed|accelerate|unsloth\w*|ms-swift|swift|flash[-_]attn|datasets|bitsandbytes|xformers|"
    r"llama-?factory|verl|openrlhf|cuda|nccl|driver)\b|\b(?:use|install|try)\b.{0,20}\b(?:torch|transformers|trl|peft|"
    r"vllm|deepspeed|accelerate|unsloth|ms-swift|swift|datasets)\b\s*v?\d+\.\d+|"
    r"(?:torch|transformers|trl|peft|vllm|deepspeed|accelerate|unsloth|datasets)\s*(?:替换成|换成|升级到|降级到|降到|改为)\s*v?\d")
# a reply's instruction in the paste: "change `vllm_maxlen: 2048` to `vllm_maxlen: 1136`", "You should place
# NPROC_PER_NODE before `swift sft`", "Please update with `pip install --upgrade unsloth`", "try --enforce-eager"
# the author's own reading of the cause: "I think the problem is ...", "It seems ... because ...", "原因是...", "应该是..."
_CAUSE = lazyre.compile(r"(?i)\b(?:i think (?:it|the|this)|i suspect|the (?:root )?(?:reason|cause) (?:is|was|might be|may be)|"
                        # "the problem is that ...", "This is because ...", "The error occurs because ..."
                        r"the (?:problem|issue|bug) (?:is|was|seems to be|must be) (?!(?:gone|fixed|solved|resolved|still|now|"
                        r"not|the same|also|here)\b)(?:that )?|"
                        r"(?:this|it|which) (?:is|was|happens|happened|occurs) (?:because|due to)|"
                        r"(?:occurs|happens|arises|fails|failed|crashes) because|"
                        r"(?:is|was|are|were) caused by|found (?:it|that it) (?:was )?caused by)\b|原因是|原因可能是|"
                        r"怀疑是|我猜测?是|是因为|是由于|"
                        # a limitation stated: "zero.Init is only applicable to ZeRO-3", "max_memory 这个参数只对infer_backend
                        # pt生效", "Original consolidated weights are no longer in the HF repo"
                        r"\bonly (?:applicable|applies|works|supported|effective) (?:to|with|for|on|in|when)\b|"
                        r"\b(?:is|are) no longer (?:in|available|supported|provided|shipped)\b|只对.{1,40}?(?:生效|有效)|只支持|仅支持")
_ADVICE = lazyre.compile(r"(?i)^(?:@[\w-]+\s+)*(?:(?:please|maybe|just|so|you (?:should|can|need to|have to|may)|"
                         r"try(?: to)?)\s+)*(?:change|set|use|add|remove|upgrade|downgrade|install|pass|switch|lower|"
                         r"reduce|increase|disable|enable|place|put|move|pin|replace|update|delete|drop)\b|"
                         # a reply's advice in Chinese, after the subject it is about: "vllm请使用tensor_parallel_size"
                         r"^\S{0,20}?(?:请使用|请用|建议使用|建议用|请改用|可以改用|请设置|请升级|请更新)")
# a program's own advice inside its warning or error ("FutureWarning: ... Use the PyTorch implementation
# torch.optim.AdamW instead", Ray's "You can use `ray_task_error.cause`"), or a tried change that did not help
_NOT_ADVICE = lazyre.compile(r"(?i)\w+(?:Warning|Error|Exception)\b|warnings\.warn|\.py:\d+|\binstead\b|https?://|"
                             r"\bcause\b|\bstill\b|\bbut\b|\bsame error\b|\bwithout error\b|还是|仍然")
# a program's own words, or a cause that did not hold ("but", "still"): not the author's reading (the word "cause" is its
# point here)
_NOT_CAUSE = lazyre.compile(r"(?i)\w+(?:Warning|Error|Exception)\b|warnings\.warn|\.py:\d+|https?://|\bstill\b|"
                            r"还是|仍然|\bnot (?:the|a) (?:cause|problem|issue)\b")
# ... naming what to change: a flag, a setting, code, a version
# (ASCII edges: a CJK character before "tensor_parallel_size" is a word character to `re`; a dotted name such as
# zero.Init or torch.compile)
_SPECIFIC = lazyre.compile(r"`[^`]+`|--?[a-z][\w-]{2,}|(?<![A-Za-z0-9_])[a-z]+_[a-z_]+(?![A-Za-z0-9_])|==|\bv?\d+\.\d+|"
                           r"(?<![A-Za-z0-9_.])[A-Za-z_][A-Za-z0-9_]+\.[A-Za-z_][A-Za-z0-9_]+(?![A-Za-z0-9_])|"
                           r"(?i:\bZeRO-?\d\b|\bstage\s*\d\b)")
# a sentence about releases: "worked fine with March release", "before updating", "3.13.0dev还可以正常训练"
RELEASE = lazyre.compile(r"(?i)\brelease|\bversion|\bupdat|\bupgrad|\bv?\d+\.\d+|版本|更新|升级|dev\b")
# where one sentence of a line ends: Chinese and English end marks (". " only before a capital, code or a mention: not
# inside "v0.14.0" or "e.g. this")
_SENTENCE_END = lazyre.compile(r"(?<=[。！？!?；;])(?![。！？!?；;])\s*|(?<=[\w)\]`\"'][.])\s+(?=[A-Z@`*(\[])")


@dataclass(frozen=True, slots=True)
class Said:
    kind: str        # SOLVED | WORKS | WORKED
    text: str        # the sentence, as the paste has it (cut at _MAX_QUOTE)
    line: LogLine


def _sentence(text: str) -> bool:
    t = text.strip()
    if _EXCEPTION.match(t) or t.startswith(("File ", "at ", "{", "[", "|", "$", "+", "#!")):
        return False
    return loosely_prose(t)


def _person_line(ln: LogLine) -> str | None:
    """A person's line, its quote marks off, or None for a program's record or a line that is no sentence."""
    whole = ln.text.strip().lstrip(">").strip()
    # a program's record whose prefix the reader took off ("INFO 11-01 ... [gpu_worker.py:391] Free memory ...
    # Replace gpu_memory_utilization config with ..."): its words are the program's, not a person's
    if ln.origin or LOGGED.match(ln.raw.strip().lstrip(">").strip()) or not _sentence(whole):
        return None
    return whole


# a statement cut short by a question after a comma: "改成 min(...) 之后能正常运行了，请问这样改对吗": the clause before the
# question still states what was done
_QUESTION_CLAUSE = lazyre.compile(r"[，,]\s*(?:请问|想问|是否|为什么|为何|怎么|如何|能否|不知道|但是?不知)")


# a sentence that announces the change on the lines after it: "I just found a solution that works!"
_ANNOUNCED = lazyre.compile(r"(?i)\b(?:found|have|got|figured out)\s+(?:a |the |an? (?:easy |simple )?)?"
                            r"(?:solution|fix|workaround)\b")


# a line that only sets something: `key.path=value \`, `--flag value`, `export NAME=value`, `pip install ...`
_SETTING_LINE = lazyre.compile(r"^\s*(?:[\w.-]+=\S+|--[\w-]+(?:[= ]\S+)?|export\s+\w+=\S*|pip3? install\s+\S.*)\s*\\?\s*$")
# a sentence that goes on on the next line: it ends in a colon, an exclamation or a word that needs what follows ("I have
# solved the issue of llamafactory train by" / "1. install transformers==4.44.2")
_GOES_ON = lazyre.compile(r"(?i)(?:[:：!！]|\b(?:by|with|via|using|to|as))\s*$")


def _sentences(lines: Iterable[LogLine]) -> Iterable[tuple[LogLine, str]]:
    """(line, sentence) for each sentence of a person's line that may state an outcome: not a question, and naming
    something to act on."""
    lines = list(lines)
    for k, ln in enumerate(lines):
        whole = _person_line(ln)
        if whole is None:
            continue
        parts = [p.strip() for p in _SENTENCE_END.split(whole) if p.strip()]
        for i, text in enumerate(parts):
            if _QUESTION.search(text):
                m = _QUESTION_CLAUSE.search(text)
                if m is None or m.start() == 0:
                    continue
                text = text[:m.start()]
            if not _CHANGE.search(text) and _SOLVED.search(text):
                # "Fixed!! Much apologies on the delay. Please update Unsloth via ...": the change is in one of the
                # next two sentences, or ("I just found a solution that works!" / "I set the env variable as `export
                # NCCL_P2P_DISABLE=1`") on the next line
                after = next((j for j in range(i + 1, min(i + 3, len(parts))) if _CHANGE.search(parts[j])), None)
                if after is not None:
                    text = " ".join(parts[i:after + 1])
                elif i == len(parts) - 1 and (_ANNOUNCED.search(text) or _GOES_ON.search(text)):
                    nxt = next((_person_line(n) or n.text.strip() for n in lines[k + 1:k + 2] if n.text.strip()), "")
                    if nxt and _CHANGE.search(nxt) and not _QUESTION.search(nxt):
                        text = f"{text} {nxt}"
            if i == len(parts) - 1 and text.rstrip().endswith((":", "：")):
                # "...切换到v0 engine就可以了：" and the settings on the lines after it: they are what was done
                settings = []
                for n in lines[k + 1:k + 4]:
                    if not _SETTING_LINE.match(n.text):
                        break
                    settings.append(n.text.strip().rstrip("\\").strip())
                rest = lines[k + 1 + len(settings):k + 2 + len(settings)]
                if settings and lines[k + len(settings)].text.rstrip().endswith("\\") and rest and \
                        rest[0].text.strip() and _person_line(rest[0]) is None:
                    settings = []   # the environment of a command that goes on ("CUDA_VISIBLE_DEVICES=1,2 \" / "swift infer")
                if settings:
                    text = f"{text} {' '.join(settings)}"
            if _CONCRETE.search(text):
                yield ln, text


def _affirmed(rx, text: str, done: bool = False) -> bool:
    """A match of ``rx`` in ``text`` that no negation just before it takes back (and, for a change said ``done``, no
    modal: "should be fixed" is a wish)."""
    return any(not _NEGATED.search(text[max(0, m.start() - 24):m.start()])
               and not _CONDITIONAL.search(text[max(0, m.start() - 24):m.start()])
               and not (done and _UNREAL.search(text[max(0, m.start() - 24):m.start()])
                        and not _NOW.match(text, m.end())) for m in rx.finditer(text))


def read(lines: Iterable[LogLine]) -> list[Said]:
    """The outcome sentences of these lines, in order; at most one of each kind (the first)."""
    out: dict[str, Said] = {}
    for ln, text in _sentences(lines):
        if SOLVED not in out and _affirmed(_SOLVED, text, done=True) and _CHANGE.search(text):
            kind = SOLVED
        elif (regression := _REGRESSION.search(text)) or _affirmed(_WORKS, text):
            kind = WORKED if regression or _BEFORE.search(text) else WORKS
            if kind in out:
                continue
        elif ADVISED not in out and _ADVICE.match(text) and _SPECIFIC.search(text) and \
                not _NOT_ADVICE.search(ln.text):
            kind = ADVISED
        elif CAUSE not in out and _affirmed(_CAUSE, text) and _SPECIFIC.search(text) and \
                not _NOT_CAUSE.search(ln.text):
            kind = CAUSE
        else:
            continue
        out[kind] = Said(kind, text if len(text) <= _MAX_QUOTE else text[:_MAX_QUOTE - 1] + "…", ln)
    return sorted(out.values(), key=lambda s: s.line.seq)


__all__ = ["ADVISED", "CAUSE", "PACKAGE_CHANGE", "RELEASE", "SETTING_CHANGE", "SOLVED", "WORKED", "WORKS", "Said", "read"]
