"""GD310: a process killed by the host (OOM killer, SIGKILL) without a Python traceback."""
from __future__ import annotations

from typing import Any

from ... import lazyre
from ...engine.state import RunState
from ...model import Evidence, Finding
from ...rules import Rule, evidence_of
from ...signals import HostTick, LogLine, RunExit
from ..fallback.exit_live import kill_facts
from . import _ray_oom as ray_oom
from ._common import _raised_on
from ._elastic import ElasticBlock

_KILLED_PATTERNS = [
    # bash's job report; on macOS the signal's description is strsignal(9), "Killed: 9"; zsh's own wording
    ("bash", lazyre.compile(r"^(?:\S*: )?(?:line \d+: )?\s*\d+ Killed(?:: 9)?\s+(?P<cmd>\S.*)$")),
    ("bash", lazyre.compile(r"^zsh: killed\s+(?P<cmd>\S.*)$")),
    ("killed", lazyre.compile(r"^\s*Killed(?:: 9)?\s*$")),
    ("dmesg", lazyre.compile(r"(?:Out of memory|Memory cgroup out of memory): Kill(?:ed)? process (?P<pid>\d+) \((?P<proc>[^)]*)\)")),
    ("dmesg", lazyre.compile(r"oom-kill:.*task=(?P<proc>[\w.\-]+),pid=(?P<pid>\d+)")),
    ("subprocess", lazyre.compile(r"died with <Signals\.SIGKILL: 9>")),
    ("dataloader", lazyre.compile(r"DataLoader worker \(pid\(?s?\)? ?(?P<pid>[\d, {}]+)\)? (?:is killed by signal: Killed|exited unexpectedly)")),
    ("oomkilled", lazyre.compile(r"\bOOMKilled\b|(?:exit(?:ed with)? code|exit status) 137\b")),
    # Ray's memory monitor (raylet, ray 2.x: "%d worker(s) were killed due to the node running low on memory",
    # "Workers (tasks / actors) killed due to memory pressure (OOM)"; ray.exceptions.OutOfMemoryError "Task was killed
    # due to the node running low on memory")
    ("ray", lazyre.compile(r"killed due to (?:the node running low on memory|memory pressure \(OOM\))")),
    # the raylet's kill message itself (node_manager.cc, ray 2.x: "Memory on the node (...) was 445.48GB / 468.75GB
    # (0.950365), which exceeds the memory usage threshold of 0.95. Ray killed this worker (ID: ...) because it was
    # the most recently scheduled task"), pasted without the summary lines around it
    ("ray", lazyre.compile(r"exceeds the memory usage threshold of [\d.]+\. Ray killed this worker\b")),
    # DeepSpeed's launcher (deepspeed/launcher/launch.py sigkill_handler, 0.9-0.16): "{cmd} exits with return code = -9";
    # people quote its tail in titles and prose ("train with return code = -9")
    ("launcher", lazyre.compile(r"\breturn code = -9\b")),
    # the launcher stopping the other children after one ended (DeepSpeed launch.py sigkill_handler: "Killing subprocess
    # {pid}"; torch elastic multiprocessing/api.py _close: "Sending process {pid} closing signal SIGTERM"): which
    # child ended, and how, is on a later line; read only when that line is not in the log (see finish)
    ("stopped", lazyre.compile(r"\bKilling subprocess \d+|\bSending process \d+ closing signal SIGTERM\b")),
]
# DeepSpeed's see_memory_usage (deepspeed/runtime/utils.py, 0.3-0.18) prints the host's memory beside the GPU's
_HOST_USAGE = lazyre.compile(r"CPU Virtual Memory:\s+used = ([\d.]+) GB, percent = ([\d.]+)%")
_HOST_FULL = 90.0  # percent used: the kernel's OOM killer is near (swap aside)
# the launcher's line that says how the child ended (a code other than SIGKILL is another rule's: a Python error)
_CHILD_ENDED = lazyre.compile(r"exits with return code = (-?\d+)|failed \(exitcode: (-?\d+)\)")


# ray's raylet (node_manager.cc): "To see more information about the Workers killed on this node, use `ray logs
# raylet.out -ip 10.0.0.1`"
_RAY_LOGS = lazyre.compile(r"ray logs raylet\.out -ip ([\w.:\-]+)")
# what lowers a Ray node's host memory, for a kill whose message lists no memory users. CPU offload keeps the fp32
# master weights and Adam's two moments in host RAM (DeepSpeed's ZeRO-Offload: ~12-16 bytes a parameter); Ray's
# memory monitor (ray docs, "Out-Of-Memory Prevention") kills at RAY_memory_usage_threshold so that the kernel's OOM
# killer does not, so raising it moves the kill rather than removing it
RAY_LEVERS = ("Then make the node's workers hold less host memory, or give the node more: CPU offload of optimizer "
              "states or parameters keeps them in host RAM, about 12-16 bytes a parameter for the fp32 weights and "
              "Adam's moments (DeepSpeed offload_optimizer / offload_param; OpenRLHF --adam_offload; verl "
              "actor_rollout_ref.actor.fsdp_config.optimizer_offload / param_offload): turn it off where GPU memory "
              "allows, or spread the model over more nodes; fewer workers per node and smaller rollout or generation "
              "batches lower what each worker holds. Raising RAY_memory_usage_threshold only hands the kill to the "
              "kernel's OOM killer.")
_TRAIN_BAR = lazyre.compile(r"^\s*Train:\s*\d+%\|[^|]*\|\s*(\d+)/\d+")
# vLLM V1 engine/core_client.py sigusr1_handler: logs this, then kill_process_tree(os.getpid())
_VLLM_FATAL = "Got fatal signal from worker processes"
# macOS: bash there words SIGKILL with strsignal(9) as "Killed: 9"; its paths (home folders under /Users, Homebrew's
# /opt/homebrew, python.org's framework build) say the same. macOS has no Linux OOM killer and no `dmesg -T` log of it
_MACOS = lazyre.compile(r"\bKilled: 9\b|(?:^|[\s\"'(=])/(?:Users|opt/homebrew|Library/Frameworks/Python\.framework)/")


def _words_say_otherwise(ctx: RunState) -> bool:
    """The paste's sentences name another failure than a kill or a stop ("CUDA out of memory, but ..." in its title):
    that reading (GD327) is the one to give, not a kill inferred from lines an excerpt does not hold."""
    from ..hang.prose import symptom_of_run
    got = symptom_of_run(ctx)
    return got is not None and not got[0][0].startswith("hang") and got[0][0] != "host-oom-killed"


class HostOomKilled(Rule):
    """A process killed with SIGKILL and no Python traceback: in practice the host's OOM killer."""

    kinds = frozenset({LogLine, RunExit, HostTick})
    literals = ElasticBlock.LITERALS + ("Killed", "SIGKILL", "Out of memory", "out of memory: Kill", "oom-kill",
                                        "DataLoader worker", "OOMKilled", "code 137", "status 137", "Train:",
                                        "killed due to", "Ray killed this worker", "return code = -9", "zsh: killed", "Killing subprocess",
                                        "closing signal SIGTERM", "return code = ", "failed (exitc", "CPU Virtual Memory",
                                        _VLLM_FATAL) + ray_oom.LITERALS

    def __init__(self, meta):
        super().__init__(meta)
        self.block = ElasticBlock()
        self.hits: list[tuple[str, LogLine, dict[str, str]]] = []
        self.training = 0  # last training step seen on a Train bar before the kill
        self.ray = ray_oom.RayMemory()
        self.exit: RunExit | None = None  # watch saw its command end by SIGKILL it did not send
        self.host: list[HostTick] = []
        self.child_codes: set[int] = set()  # how the launcher says its children ended
        self.vllm_fatal: LogLine | None = None  # vLLM's client killing its own process tree (core_client.py)
        self.host_usage: tuple[LogLine, str, float] | None = None  # DeepSpeed's last report of host memory in use

    def feed(self, signal: Any) -> None:
        if isinstance(signal, RunExit):
            if signal.code == -9:
                self.exit = signal
            return
        if isinstance(signal, HostTick):
            self.host = (self.host + [signal])[-3:]
            return
        line: LogLine = signal
        if "%|" in line.text and "Train" in line.text:
            m = _TRAIN_BAR.match(line.text)
            if m and int(m.group(1)) > 0:
                self.training = int(m.group(1))
            return
        self.block.feed(line)
        self.ray.feed(line)
        text = line.text
        if _VLLM_FATAL in text:
            self.vllm_fatal = line
            return
        if "CPU Virtual Memory" in text:
            usage = _HOST_USAGE.search(text)
            if usage is not None:
                self.host_usage = (line, usage.group(1), float(usage.group(2)))
            return
        ended = _CHILD_ENDED.search(text) if "exit" in text else None
        if ended is not None:
            self.child_codes.add(int(ended.group(1) or ended.group(2)))
        if len(self.hits) > 1000:
            return
        for name, rx in _KILLED_PATTERNS:
            if name == "dataloader" and "DataLoader worker" not in text:
                continue
            m = rx.search(text)
            if m:
                if name == "dataloader" and "exited unexpectedly" in text and "Killed" not in text:
                    continue
                self.hits.append((name, line, {k: v for k, v in m.groupdict().items() if v}))
                return

    def finish(self, ctx: RunState) -> list[Finding]:
        if any(n == "stopped" for n, _, _ in self.hits) and (self.child_codes - {-9} or ctx.exceptions
                                                              or ctx.open_tracebacks):
            # the child's end is told (a Python error, another signal) or its traceback is in the log: not a kill
            self.hits = [h for h in self.hits if h[0] != "stopped"]
        if self.vllm_fatal is not None:
            # vLLM's engine client, told by a worker that it failed, kills its own process tree (SIGKILL): the shell's
            # "Killed" after it is that kill, and the worker's exception above it is the failure
            fatal = self.vllm_fatal.seq
            self.hits = [h for h in self.hits if not (h[0] in ("killed", "bash") and fatal < h[1].seq <= fatal + 5)]
        root = self.block.root
        elastic_kill = root is not None and root.exitcode == -9
        if elastic_kill and _raised_on(ctx.exceptions, root.rank) is not None:
            # a Python error was printed (by that rank, or by a process without a rank prefix): the -9 came later
            elastic_kill = False
        watched_kill = self.exit is not None and not ctx.exceptions
        if not elastic_kill and not self.hits and not watched_kill:
            return []
        kinds = [n for n, _, _ in self.hits]
        if not elastic_kill and not watched_kill and set(kinds) == {"stopped"} and _words_say_otherwise(ctx):
            return []  # the launcher's stopping says only that a child ended; the paste's own words say how
        run = ctx.run
        ev: list[Evidence] = []
        seqs = [l.seq for _, l, _ in self.hits] + ([root.lines[0].seq] if elastic_kill and root.lines else [])
        first_seq = min(seqs) if seqs else 0
        for _, l, _ in self.hits[:3]:
            ev.append(evidence_of(l))
        if watched_kill and self.exit is not None and not self.hits and not elastic_kill:
            # what watch saw (the exit status), then the output's last lines: where the run was when the signal came
            ev.append(Evidence("<watch>", 0, f"the command was killed by signal 9 (SIGKILL) after {self.exit.t:.0f} s"))
            for lines in ctx.tails.values():
                ev.extend(evidence_of(ln) for ln in list(lines)[-3:])
        if elastic_kill:
            ev.extend(evidence_of(a[3]) for a in self.block.agent[:1])
            ev.extend(evidence_of(l) for l in root.lines[:3])
            ev = list(dict.fromkeys(ev))  # the agent's line is the root's when no summary block was printed
        dataloader_only = kinds and all(k == "dataloader" for k in kinds) and not elastic_kill
        # ray/_private/memory_monitor.py: the raylet kills a worker when the node's memory use passes
        # RAY_memory_usage_threshold (0.95 by default): the kill is Ray's, not the kernel's
        ray_only = set(kinds) == {"ray"}
        macos = any(_MACOS.search(l.text) or _MACOS.search(l.raw) for _, l, _ in self.hits) or any(
            _MACOS.search(t.raw) for lines in ctx.tails.values() for t in list(lines)[-200:])
        proven = bool({"dmesg", "oomkilled", "ray"} & set(kinds)) or bool(watched_kill and self.exit
                                                                           and self.exit.kernel_lines)
        if dataloader_only:
            msg = ("A DataLoader worker process was killed by the operating system (signal: Killed): the host ran "
                   "out of RAM (or /dev/shm) while the workers held their batches.")
        else:
            who = ""
            if elastic_kill:
                who = (f"torchrun's first failure is rank {root.rank} with exit code -9 (SIGKILL) and no Python "
                       "traceback from that rank. " if root.rank is not None else
                       "torchrun's first failure has exit code -9 (SIGKILL) and no Python traceback. ")
            elif "dmesg" in kinds:
                d = next(g for n, _, g in self.hits if n == "dmesg")
                who = f"The kernel's OOM killer killed process {d.get('pid', '?')} ({d.get('proc', '?')}). "
            elif "bash" in kinds or "killed" in kinds:
                who = "The shell reports the process as 'Killed' (signal 9, SIGKILL). "
            elif "subprocess" in kinds:
                who = "The training process died with SIGKILL (signal 9). "
            elif "oomkilled" in kinds:
                who = "The container was OOM-killed (exit code 137). "
            elif "ray" in kinds:
                who = ("Ray's memory monitor killed a worker because the node ran low on host memory (it kills "
                       "before the kernel's OOM killer would). ")
            elif "launcher" in kinds:
                who = "DeepSpeed's launcher reports a process ended by signal 9 (return code -9, SIGKILL). "
            elif "stopped" in kinds:
                who = ("The launcher stopped the other training processes (`Killing subprocess` / `closing signal "
                       "SIGTERM`) after one of them ended, and the log holds no Python traceback from it; the line "
                       "that says how it ended (`exits with return code = N` / `failed (exitcode: N)`: -9 is SIGKILL, "
                       "1 a Python error) is not in the log. ")
            elif watched_kill and self.exit is not None:
                who = (f"watch saw the command killed by signal 9 (SIGKILL) after {self.exit.t:.0f} s, a signal "
                       "grpo-doctor did not send. ")
            if watched_kill and self.exit is not None and not self.hits:
                msg = who + ("A process killed this way leaves no error of its own." if proven else
                             "A process killed this way leaves no error of its own: most often the Linux OOM killer "
                             "(host RAM, not GPU memory) or a job scheduler's memory limit; a scheduler's time limit "
                             "or someone's `kill -9` send the same signal.")
                msg += kill_facts(self.exit, self.host)
            elif ray_only:
                msg = (who + "The killed worker leaves no error of its own: the node's host RAM (not GPU memory) passed "
                       "Ray's threshold (RAY_memory_usage_threshold, 0.95 of the node's memory by default).")
            elif set(kinds) == {"stopped"}:
                msg = (who + "A training process that ends without a Python traceback was most often killed from "
                       "outside: the Linux OOM killer (host RAM, not GPU memory) or a job scheduler's memory limit; a "
                       "native crash (SIGSEGV) leaves none either.")
            elif macos:
                msg = (who + "A process killed this way leaves no error of its own. The paths or the shell's wording "
                       "say this ran on macOS, which has no Linux OOM killer: a process killed there while it trains "
                       "is most often ended by the system when memory (RAM and swap) runs out, or by someone's "
                       "`kill -9`.")
            else:
                msg = (who + "A process killed this way leaves no error of its own: on a training node it is almost "
                       "always the Linux OOM killer (host RAM, not GPU memory) or a job scheduler's memory limit.")
        if self.host_usage is not None and self.host_usage[2] >= _HOST_FULL and not dataloader_only:
            line, used, percent = self.host_usage
            msg += (f" DeepSpeed's last memory report in the log shows the host's memory {percent:g}% used "
                    f"({used} GB; read from its see_memory_usage line).")
            ev.append(evidence_of(line))
        if ray_only:
            ray_text = " ".join(l.text for n, l, _ in self.hits if n == "ray")
            ip = _RAY_LOGS.search(ray_text)
            where = f"`ray logs raylet.out -ip {ip.group(1)}` (named in Ray's message)" if ip else \
                "`ray logs raylet.out -ip <node ip>`"
            listed = "it lists" if "memory users" in ray_text else "Ray's OutOfMemoryError, where it is raised, lists"
            fix = [f"Find what filled the node's memory: {where} shows each kill, and {listed} the top memory users "
                   "(often the rollout or actor workers holding batches, or a reward worker); `ray memory` and "
                   "`free -g` during the run show the trend."]
            read = self.ray.summary()
            if read is not None:
                msg += " " + read[0]
                if read[1]:
                    fix = [read[1]]
            if read is None or not read[1]:
                fix.append(RAY_LEVERS)
        elif macos:
            fix = ["Watch Activity Monitor's Memory tab (memory pressure, swap used) while it runs, or `sudo log show "
                   "--last 1h | grep -iE 'jetsam|memorystatus'` after a kill; use a smaller model, batch or sequence "
                   "length, or a machine with more memory."]
        else:
            fix = ["Confirm it: `dmesg -T | grep -iE 'killed process|out of memory'` on the node (or the scheduler's "
                   "job log: OOMKilled / exceeded memory limit), and watch `free -g` during the run."]
        world = run.world_size()
        workers = run.int_arg("dataloader_num_workers")
        if workers is not None and workers > 0:
            per = f" x {world} ranks = {workers * world} worker processes" if world and world > 1 else ""
            fix.append(f"--dataloader_num_workers {workers}{per}, each holding batches (images/videos for VL "
                       f"models) in host RAM: try --dataloader_num_workers {max(workers // 4, 0) if workers > 1 else 0}.")
        elif dataloader_only:
            fix.append("Lower --dataloader_num_workers (0 loads data in the training process) and give the "
                       "container more /dev/shm (docker --shm-size=16g).")
        offl = [k for k in ("offload_optimizer", "offload_model") if run.args.get(k) is True]
        ds = str(run.args.get("deepspeed") or "")
        if offl or "offload" in ds:
            what = ", ".join(f"--{k} true" for k in offl) + ((", " if offl else "") + f"--deepspeed {ds}" if "offload" in ds else "")
            fix.append(f"{what}: CPU offload keeps model/optimizer states in host RAM on every rank (roughly the "
                       "model's full-precision size plus Adam states of about 12 bytes per trainable parameter). "
                       "Turn offload off or use a config without CPU offload if GPU memory allows, or train on "
                       "fewer ranks per node.")
        if self.training:
            fix.append(f"It died during training (after step {self.training}): host RAM grew while training, so look "
                       "at what accumulates per step: dataloader workers, CPU offload buffers, a reward function or "
                       "plugin that caches completions; `free -g` every few minutes shows the trend.")
        elif world and world > 1:
            fix.append(f"{world} processes per node each load the model on CPU before moving it to GPU: peak host RAM "
                       f"is about {world} x the checkpoint size during loading; lower NPROC_PER_NODE or use "
                       "--deepspeed zero3 (loads shards) if RAM is short.")
        if run.args.get("lazy_tokenize") is False or run.get("dataset_num_proc", 1) > 1:
            fix.append("Large datasets: --lazy_tokenize true encodes samples on the fly instead of holding the whole "
                       "encoded dataset in RAM" + (f"; --dataset_num_proc {run.get('dataset_num_proc')} also multiplies "
                                                   "memory during preprocessing." if run.get("dataset_num_proc", 1) > 1 else "."))
        fw = ctx.framework()[0]
        if not run.args and fw in ("trl", "unsloth", "verifiers"):
            fix.append("Host-RAM levers in trl's GRPOConfig: a smaller model or per_device_train_batch_size, "
                       "shorter max_completion_length and num_generations, dataloader_num_workers=0; a CPU-only "
                       "run holds the model, its reference copy and every rollout in host RAM: more RAM or a GPU.")
        elif not run.args and fw == "ms-swift":
            fix.append("Host-RAM levers in ms-swift: --dataloader_num_workers, --offload_optimizer / "
                       "--offload_model (push states to CPU), --lazy_tokenize true, fewer processes per node "
                       "(NPROC_PER_NODE).")
        elif len(fix) == 1 and not ray_only and not macos:
            # the confirmation alone changes nothing: what removes the kill, in no framework's flag names (the
            # framework is not told, or none of its levers is set in this run)
            fix.append("Then give the job more host RAM (the node, or the container's or scheduler's memory limit), "
                       "or make each process hold less: fewer processes per node, fewer data-loading workers (0-2), "
                       "no CPU offload of optimizer or model states, and a smaller batch or sequence length.")
        # the kernel's, the container runtime's or Ray's own word proves an OOM kill; a bare SIGKILL only points at it
        level = None if proven else "possible" if set(kinds) == {"stopped"} else "likely"
        return [self.make(message=msg, fix=fix, evidence=ev[:6], count=max(len(self.hits), 1),
                          ranks=(root.rank,) if elastic_kill and root.rank is not None else (), seq=first_seq,
                          confidence=level,
                          title="Process killed (SIGKILL) on macOS, most often for memory" if macos else None,
                          verify=("the next run is not `Killed: 9` and the memory pressure stays out of the red while "
                                  "it trains" if macos else
                                  # Ray's memory monitor kills before the kernel's OOM killer: dmesg never shows it
                                  "no worker is killed by Ray's memory monitor (no `killed due to memory pressure` / "
                                  "OutOfMemoryError line from the raylet) through the run" if ray_only else None))]

