"""GD606: an exception raised inside a reward function while the trainer scores completions.

Every dataset column besides ``messages`` reaches the reward function as a keyword argument (FAQ Q25),
which is why a missing column shows up as ``KeyError: 'solution'`` or ``__call__() missing 1 required
positional argument: 'solution'``.
"""
from __future__ import annotations

import re
from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import Rule
from ...signals import ExceptionInfo, Frame
from ._flags import as_list, plugin_files, reward_names

# the frames that call reward functions: ms-swift 3.x/4.x trainer, rl_core (4.5+), trl, open-r1 style
_CALL_FUNCS = {"_compute_rewards_per_func", "compute_rewards_per_func", "_calculate_rewards", "_score_completions",
               "score_completions"}
# verl's reward managers (verl/workers/reward_manager/naive.py, dapo.py) call `self.compute_score(data_source=...)`
_CALL_CODE = ("reward_func(", "reward_model_plugin(", "reward_funcs[idx](", "reward_funcs[i](", "self.compute_score(")
_REWARD_PATHS = ("swift/rewards/", "swift/plugin/orm.py", "swift/plugin/prm.py", "swift/plugin/rm_plugin.py",
                 "swift/llm/plugin/orm.py", "open_r1/rewards.py", "/rewards.py", "/reward_func", "/reward_fn",
                 "plugin/plugin.py", "/orm.py", "/reward_score/", "/reward_manager/",
                 # OpenRLHF's remote reward-model client (openrlhf/utils/remote_rm_utils.py request_api_wrapper,
                 # 0.5-0.8; kept by its forks lmm-r1, Open-Reasoner-Zero): the reward comes from an HTTP server
                 "/remote_rm_utils.py")
_NOT_OURS = ("OutOfMemoryError", "OOM", "DistBackendError", "ChildFailedError", "KeyboardInterrupt",
             "ModuleNotFoundError", "ImportError")
_COMM = lazyre.compile(r"NCCL|[Tt]imeout|[Tt]imed out|gloo|ProcessGroup|Connection|pair closure")
# torch's collectives (torch/distributed/distributed_c10d.py: all_gather, all_reduce, broadcast... and their
# work.wait()). trl's _calculate_rewards gathers every rank's rewards (accelerate's gather -> all_gather) after the
# reward functions returned, in the same frame that called them; a process-group failure raised there (gloo's
# UnboundBuffer::waitSend/waitRecv, gloo/transport/tcp/unbound_buffer.cc as vendored by torch 2.13 in
# third_party/gloo: `Timed out waiting Nms for send|recv operation to complete`, and the `Application timeout caused
# pair closure` its peers' pairs get) is a collective's timeout, not a reward function's bug
_COLLECTIVE_PATH = "torch/distributed/"


def _collective_failure(exc: ExceptionInfo) -> bool:
    """The exception came out of a torch.distributed collective (its innermost frame is in torch/distributed/) and
    names a communication failure: a process group that timed out or broke, not a reward's own error."""
    last = exc.raised_at
    return last is not None and _COLLECTIVE_PATH in last.path.replace("\\", "/") and bool(_COMM.search(exc.message))
_SIZE = lazyre.compile(r"expanded size of the tensor|must match the (?:existing )?size|shape mismatch|could not broadcast")
_MISSING_ARG = lazyre.compile(r"missing \d+ required (?:positional|keyword-only) arguments?: (?P<names>.+)$")
# CPython's TypeError for a call that does not fit the callee (Python/getargs.c, Objects/call.c): the callee's name first
_CALLEE = lazyre.compile(r"^(?:[\w.<>]+\.)?(?P<fn>\w+)\(\) (?:got an unexpected keyword argument '(?P<kw>\w+)'|"
                     r"missing \d+ required|takes \d+ positional)")
_KEYERR = lazyre.compile(r"""^['"](?P<col>[^'"]{1,80})['"]$""")


def _user_plugin_match(path: str, plugins: list[str]) -> bool:
    base = path.replace("\\", "/").rsplit("/", 1)[-1]
    for p in plugins:
        pb = p.replace("\\", "/").rsplit("/", 1)[-1]
        if pb and pb == base:
            return True
    return False


def reward_frames(exc: ExceptionInfo, plugins: list[str]) -> tuple[int | None, list[Frame]]:
    """(index of the frame that calls the reward function, the frames inside reward code)."""
    return _reward_frames(exc.frames, plugins)


def _reward_frames(frames: tuple[Frame, ...], plugins: list[str]) -> tuple[int | None, list[Frame]]:
    call_idx = None
    for i, fr in enumerate(frames):
        if fr.func in _CALL_FUNCS or any(c in fr.code for c in _CALL_CODE):
            call_idx = i
    inside: list[Frame] = []
    start = call_idx + 1 if call_idx is not None else 0
    for fr in frames[start:]:
        p = fr.path.replace("\\", "/")
        if call_idx is not None or any(m in p for m in _REWARD_PATHS) or _user_plugin_match(p, plugins):
            inside.append(fr)
    return call_idx, inside


def reward_callee(exc: ExceptionInfo, names: list[str]) -> re.Match | None:
    """The TypeError of a call to a reward function whose signature does not fit the call: the callee's name says
    reward, or it is one of the run's reward functions. Raised at the call site, so no frame of the function shows."""
    if exc.short_type != "TypeError":
        return None
    m = _CALLEE.match(exc.message.strip())
    if m is None:
        return None
    fn = m.group("fn")
    return m if "reward" in fn.lower() or fn in names else None


# urllib3's retry error, logged by the client before it gives up: which server and why
_HTTP_POOL = lazyre.compile(r"HTTPS?ConnectionPool\(host='(?P<host>[^']+)', port=(?P<port>\d+)\): Max retries exceeded with "
                        r"url: (?P<url>[^\s(]+)")


def _remote_rm_server(ctx: RunState) -> str | None:
    """'http://host:port/path: Connection refused' from the client's last logged retry error, or None."""
    for tail in ctx.tails.values():
        for line in reversed(tail):
            m = _HTTP_POOL.search(line.text)
            if m:
                why = re.search(r"Connection refused|timed out|Name or service not known", line.text)
                return f"http://{m.group('host')}:{m.group('port')}{m.group('url')}" + (f": {why.group(0)}" if why else "")
    return None


def _short(path: str) -> str:
    p = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        if marker in p:
            return p.split(marker, 1)[1]
    return p


class RewardFunctionRaised(Rule):
    """An exception raised while a reward function scored completions (GD606)."""

    kinds = frozenset({ExceptionInfo})

    def __init__(self, meta):
        super().__init__(meta)
        self.hits: list[ExceptionInfo] = []

    def feed(self, signal: Any) -> None:
        if not isinstance(signal, ExceptionInfo) or len(self.hits) > 50:
            return
        exc: ExceptionInfo = signal
        if any(n in exc.type for n in _NOT_OURS) or "out of memory" in exc.message.lower():
            return
        if "math_verify" in exc.message:
            return  # a missing dependency, not a reward bug
        self.hits.append(exc)

    def finish(self, ctx: RunState) -> list[Finding]:
        plugins = plugin_files(ctx.run)
        chosen = None
        names = reward_names(ctx.run)
        for exc in sorted(self.hits, key=lambda e: e.seq):
            if _collective_failure(exc):
                continue
            call_idx, inside = reward_frames(exc, plugins)
            direct = call_idx is not None and call_idx == len(exc.frames) - 1 and not _COMM.search(exc.message)
            callee = reward_callee(exc, names)
            if inside or direct or callee:
                chosen = (exc, call_idx, inside, callee)
                break
        if chosen is None:
            return self._cut(ctx, plugins)
        exc, call_idx, inside, callee = chosen
        same = [e for e in self.hits if e.type == exc.type and e.message == exc.message]
        ranks = tuple(sorted({e.rank for e in same if e.rank is not None}))
        text = f"{exc.type}: {exc.message}" if exc.message else exc.type
        if not exc.frames:  # the exception line alone: the call to a reward function named in the message
            where = top = Frame("", 0, "")
            msg = f"A call to a reward function failed while scoring completions: `{text}`."
        else:
            where = inside[-1] if inside else exc.frames[-1]
            own = [f for f in inside if "site-packages" not in f.path and "dist-packages" not in f.path]
            top = own[0] if own else (inside[0] if inside else where)
            fn = top.func if top.func not in ("<module>",) else "?"
            msg = (f"A reward function raised `{text}` while scoring completions, in {_short(top.path)}:{top.lineno} "
                   f"({fn})")
            msg += f"; raised at {_short(where.path)}:{where.lineno} in {where.func}." if where is not top else "."
        at = f" at {_short(where.path)}:{where.lineno}" if where.path else ""
        fix: list[str] = []
        col = None
        if exc.short_type == "KeyError":
            m = _KEYERR.match(exc.message.strip())
            col = m.group("col") if m else None
        m2 = _MISSING_ARG.search(exc.message)
        if m2:
            cols = re.findall(r"'([^']+)'", m2.group("names"))
            col = ", ".join(cols) if cols else None
        fw = ctx.framework()[0]
        trl_like = fw in ("trl", "unsloth", "verifiers")
        if callee and callee.group("kw"):
            fn, kw = callee.group("fn"), callee.group("kw")
            msg += (f" The trainer calls every reward function with keyword arguments: the completions and every "
                    f"other column of the dataset's rows (trl's GRPOTrainer also passes prompts and completion_ids), "
                    f"so {fn}() was handed '{kw}', which its signature does not name.")
            fix.append(f"Let {fn} take what it does not use: `def {fn}(completions, **kwargs)` (or add '{kw}' as a "
                       f"parameter), then read the columns it needs from kwargs.")
        elif col:
            who = "trl's GRPOTrainer passes" if trl_like else "ms-swift passes" if fw == "ms-swift" else "the trainer passes"
            msg += (f" The reward reads the dataset column '{col}', which the rows that reached it do not have: "
                    f"{who} every extra dataset column to reward functions as keyword arguments.")
            ds = as_list(ctx.run.args.get("dataset"))
            if trl_like:
                fix.append(f"Give the train dataset a '{col}' column (dataset.map(lambda x: {{'{col}': x['answer']}}) "
                           f"or rename_column), and check that the dataset the script loads is the one you expect "
                           f"(a config or split without '{col}').")
            elif fw != "ms-swift" and not ds:  # no framework told: no flag of any one framework
                fix.append(f"Give every row of the training dataset a '{col}' field, or rename the column that holds "
                           f"it to '{col}'.")
            else:
                target = f"every row of {', '.join(ds)}" if ds else "every row of --dataset"
                fix.append(f"Add a '{col}' field to {target} (e.g. {{\"messages\": [...], \"{col}\": "
                           f"\"...\"}}), or map an existing column onto it with --columns '{{\"answer\": \"{col}\"}}'.")
            in_orm = any("orm.py" in f.path for f in inside)
            if col == "solution" and (in_orm or "accuracy" in reward_names(ctx.run)):
                fix.append("The built-in accuracy reward (MathAccuracy) compares each completion with the 'solution' "
                           "column (FAQ: math accuracy needs a solution field).")
            fix.append(f"In a custom reward read it defensively: `kwargs.get('{col}')` and return None for rows "
                       f"without it (None rewards are ignored).")
        elif any("remote_rm_utils.py" in f.path for f in inside):
            server = _remote_rm_server(ctx)
            msg += (" It is OpenRLHF's remote reward-model client: it posts the completions to the reward server "
                    "(--remote_rm_url) and gave up after its retries, so the server did not answer"
                    + (f" ({server}, read from the log)." if server else "."))
            fix.append("Start the reward server before training and check it answers from the training nodes (curl "
                       "the URL given to --remote_rm_url); a server on 127.0.0.1 is reachable only from its own "
                       "node, so Ray workers on other nodes need its real address.")
        elif not inside and _SIZE.search(exc.message):
            msg += (" It was raised where the trainer stores the reward outputs: a reward function returned a list "
                    "whose length differs from the number of completions it was given.")
            fix.append("Return exactly one float (or None) per completion, in order: len(output) == len(completions).")
        else:
            if fw == "verl":  # verl scores one sample per call (workers/reward_manager/naive.py)
                fix.append(f"Fix the reward code{at}: call it offline with a few "
                           f"logged responses and their ground truth to reproduce the error before restarting.")
                fix.append("verl calls compute_score(data_source, solution_str, ground_truth, extra_info) once per "
                           "sample and expects a float (or a dict with a 'score' key): catch parse errors of a "
                           "malformed response inside it and return 0.0.")
            else:
                fix.append(f"Fix the reward code{at}: call it offline on a few "
                           f"completions and the dataset columns (kwargs) to reproduce the error before restarting.")
                fix.append("A reward must return one float (or None) per completion: `def __call__(self, completions, "
                           "**kwargs) -> List[float]`; every extra dataset column arrives in kwargs.")
        if plugins:
            fix.append(f"Reward plugin file of this run: {', '.join(plugins)}.")
        if ranks:
            fix.append(f"Raised on rank(s) {', '.join(map(str, ranks))}: every rank scores its own completions, so "
                       f"the same bad rows fail everywhere.")
        return [self.make(message=msg, fix=fix, evidence=[Evidence(exc.where.path, exc.where.line, exc.raw)],
                          count=len(same), ranks=ranks, seq=exc.seq)]

    def _cut(self, ctx: RunState, plugins: list[str]) -> list[Finding]:
        """The log ends inside a traceback, before its exception line, whose innermost frames are a reward function
        the trainer called: the failure was raised in (or below) that reward, the exception is not in the excerpt."""
        if ctx.exceptions or not ctx.open_tracebacks:
            return []
        line, frames = max(ctx.open_tracebacks, key=lambda t: (t[0].seq, len(t[1])))
        call_idx, inside = _reward_frames(frames, plugins)
        if call_idx is None or not inside:
            return []
        caller, last = frames[call_idx], frames[-1]
        own = [f for f in inside if "site-packages" not in f.path and "dist-packages" not in f.path]
        top = own[0] if own else inside[0]
        code = f", at `{last.code.strip()[:120]}`" if last.code else ""
        deepest = ("where the stack stops" if last is top else
                   f"the innermost frame is {_short(last.path)}:{last.lineno} in {last.func}")
        msg = (f"The log ends inside a traceback, before its exception line (the paste or the file was cut). Its "
               f"frames run from the trainer's reward call ({caller.func}) into the reward function {top.func} "
               f"({_short(top.path)}:{top.lineno}), {deepest}{code}. So the failure was raised while that reward "
               f"scored completions; which exception it was is not in the excerpt.")
        fix = ["Find the exception line after this traceback in the full log (the `SomeError: message` line): it "
               "says what the reward tripped on.",
               f"Reproduce it offline: call {top.func} on a few logged completions with the dataset's columns as "
               f"keyword arguments; a reward must return one float (or None) per completion."]
        if plugins:
            fix.append(f"Reward plugin file of this run: {', '.join(plugins)}.")
        return [self.make(message=msg, fix=fix, evidence=[Evidence(line.where.path, line.where.line, line.raw)],
                          seq=line.seq, confidence="likely")]
