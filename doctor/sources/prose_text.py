"""Whether a line is a sentence a person wrote (English or Chinese prose between pasted log lines) or a line a program
printed. Pure: a string in, a bool out; shared by the paste readers (sources/paste.py) and the rules that read how a
log ends (checks/hang/)."""
from __future__ import annotations

from .. import lazyre

# a line written by a person: words, not a logger's record (no timestamp or level in front, no frame, no dict;
# glog's "[W526 03:50:39.899 TCPStore.cpp:340]" prints the month without its zero; c10's
# "Exception raised from throwTimeoutError at ..." heads a C++ stack)
LOGGED = lazyre.compile(r"^\s*(?:\[?\d{4}-\d\d-\d\d|\[?(?:INFO|WARNING|ERROR|DEBUG|CRITICAL)\b|[IWEF]\d{4} |\[[IWEF]\d{3,4} \d\d:\d\d|\d\d/\d\d/\d{4}|"
                    r"File \"|\{|\[rank\d|\(\w+ pid=|Traceback \(most recent call|Exception raised from \w)")
WORD = lazyre.compile(r"[A-Za-z]{2,}")
CJK = lazyre.compile(r"[\u4e00-\u9fff]")
_PLAIN_CHARS = lazyre.compile(r"[A-Za-z\u4e00-\u9fff\u3000-\u303f\uff00-\uffef\s.,'?!()-]")
_EXC_NAME = lazyre.compile(r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Warning|Interrupt|Exit)\b")


def plain_share(text: str) -> float:
    """The share of a text's characters that are letters, spaces and sentence punctuation."""
    return len(_PLAIN_CHARS.findall(text)) / len(text) if text else 0.0


# a piece of a printed mapping ("'reward': 4.0, 'reward_std': 0.0,"): keys in quotes before a colon, twice or more
_KEYED = lazyre.compile(r"""['"][\w/().\-]{1,80}['"]\s*:""")


def keyed(text: str) -> bool:
    """A piece of a printed dict or JSON object (a metric row wrapped over several lines), not a sentence."""
    return len(_KEYED.findall(text, 0, 400)) >= 2


def loosely_prose(text: str) -> bool:
    """A line that reads as a person's words but may hold code, flags and numbers ("change `vllm_maxlen: 2048` to
    1136", "已经把batch调到1了"): Chinese, or three words and mostly letters; never a logger's record."""
    t = text.strip()
    if not t or LOGGED.match(t):
        return False
    return bool(CJK.search(t)) or (len(WORD.findall(t)) >= 3 and plain_share(t) >= 0.6)


def is_prose(text: str) -> bool:
    """A sentence a person wrote (English or Chinese), not a line a program printed: words and punctuation only, no
    logger prefix, numbers, paths, brackets or an exception name."""
    t = text.strip()
    if not t or LOGGED.match(t) or _EXC_NAME.match(t) or keyed(t):
        return False
    cjk = bool(CJK.search(t))
    if not cjk and len(WORD.findall(t)) < 4:
        return False
    return plain_share(t) >= 0.9


# an issue form's own headings, prompts and check boxes ("**Describe the bug**", ms-swift's "What the bug is, and how to reproduce, better with
# screenshots(描述bug以及复现过程...)", axolotl's "- [x] I searched previous Bug Reports didn't find any similar reports",
# LLaMA-Factory's "- [X] I have read the README and searched the existing issues", "Minimal code to reproduce the error"),
# and a reply saying it is over ("Glad to hear the error is resolved!"): words about a failure that describe none
_FORM_OR_REPLY = lazyre.compile(r"(?i)\bwhat the bug is, and how to reproduce\b|描述bug以及复现过程|"
                                r"^\W*(?:🐛\s*)?describe the bug\W*$|"
                                r"^\W*-?\s*\[[x ]\]\s*I (?:have )?(?:searched|read)\b|"
                                r"^\W*minimal (?:code|example) to reproduce\b|"
                                # an issue form's section heading ("### Bug Description / Bug 描述", "### Reproduction",
                                # "### System Info"): the form's words, not the reporter's
                                r"^\s*#{1,6}\s+(?:🐛\s*)?(?:bug description|describe the bug|bug report|reproduction|how to "
                                r"reproduce|system info|environment|expected behaviou?r|additional (?:context|information)|"
                                r"information|checklist|error (?:message|log)s?|logs?)\b[^.!?。]{0,40}$|"
                                r"^\s*#{1,6}\s+(?:bug ?描述|问题描述|如何复现|复现步骤|报错信息|错误信息|环境信息)\s*$|"
                                r"\b(?:error|issue|problem|bug)s? (?:is|are|was|were|has been|have been) (?:now )?"
                                r"(?:resolved|fixed|solved)\b")


def form_or_reply(text: str) -> bool:
    """Whether a line is an issue form's prompt or check box, or a reply saying the failure is over."""
    return bool(_FORM_OR_REPLY.search(text))
