"""Checkpoint facts from the files alone: names, sizes, safetensors headers, JSON side files.

Nothing here judges and nothing is loaded: ``optimizer.pt``, ``training_args.bin``, ``rng_state*.pth``,
``scheduler.pt`` and DeepSpeed shards are never unpickled. For zip-format torch files (every ``torch.save``
since 1.6) we read the first 4 and the last 22 bytes, which tell a complete file from a cut one.
"""
from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import lazyre
from .safeio import free_bytes, link_out, open_regular, read_head, walk
from .safetensors_header import LFS_MAGIC, HeaderFacts, parse_lfs_pointer, read_header

MAX_JSON = 64 * 1024 * 1024
HEAD_BYTES = 64 * 1024
LOOK_UP_BASE = True  # read the base model's config.json when the path in args.json exists here (tests turn it off)
WEIGHT_RE = lazyre.compile(r"^(model|pytorch_model|adapter_model)(-\d{5}-of-\d{5})?\.(safetensors|bin)$")
SHARD_RE = lazyre.compile(r"^(?P<stem>model|pytorch_model)-(?P<i>\d{5})-of-(?P<n>\d{5})\.(?P<ext>safetensors|bin)$")
PICKLE_SUFFIXES = (".pt", ".pth", ".bin")
CKPT_MARKERS = ("model.safetensors", "model.safetensors.index.json", "adapter_model.safetensors",
                "adapter_model.bin", "adapter_config.json", "pytorch_model.bin", "pytorch_model.bin.index.json",
                "trainer_state.json", "optimizer.pt", "latest")


@dataclass(frozen=True)
class FileFact:
    """A file of a checkpoint folder: its name and size."""
    name: str            # relative to the checkpoint directory ("global_step4/mp_rank_00_model_states.pt")
    size: int
    link: str | None = None     # symlink target, if a symlink
    dangling: bool = False      # a symlink whose target does not exist
    lfs: dict[str, str] | None = None  # the file is a git-LFS pointer
    zip_ok: bool | None = None  # torch zip file: True complete, False cut; None not a zip / not checked


@dataclass
class JsonFile:
    """A JSON file of a checkpoint: its data, or why it could not be read."""
    data: Any = None
    error: str | None = None    # "not valid JSON (...)", "empty file"...


@dataclass
class CheckpointFacts:
    """What a checkpoint folder holds, read from sizes and headers only."""
    path: str                                   # as displayed
    files: dict[str, FileFact] = field(default_factory=dict)
    headers: dict[str, HeaderFacts] = field(default_factory=dict)   # *.safetensors at the top level
    jsons: dict[str, JsonFile] = field(default_factory=dict)        # config.json, adapter_config.json, ...
    deepspeed_tags: dict[str, int] = field(default_factory=dict)   # global_stepN -> bytes
    latest: str | None = None                   # content of the DeepSpeed `latest` file
    run_dir: str | None = None
    run_args: dict[str, Any] | None = None      # the run directory's args.json
    command_text: str | None = None             # a launcher/command file or `run sh:` line found in the run dir
    command_source: str | None = None
    siblings: dict[str, int] = field(default_factory=dict)         # checkpoint-N in the run dir -> bytes
    run_links: dict[str, tuple[str, bool]] = field(default_factory=dict)  # last-checkpoint -> (target, exists)
    base_config: dict[str, Any] | None = None   # config.json of the base model (args.json `model`) when readable
    fs_free: int | None = None
    fs_mount: str | None = None
    skipped: dict[str, str] = field(default_factory=dict)  # name -> why it was not read (a link out, unreadable)

    # ------------------------------------------------------------ views (no judgement, only grouping)
    @property
    def name(self) -> str:
        return os.path.basename(self.path.rstrip("/")) or self.path

    @property
    def step(self) -> int | None:
        m = re.match(r"checkpoint-(\d+)$", self.name)
        return int(m.group(1)) if m else None

    def top(self) -> dict[str, FileFact]:
        return {n: f for n, f in self.files.items() if "/" not in n}

    def weight_files(self) -> list[str]:
        return sorted(n for n in self.top() if WEIGHT_RE.match(n) and not n.startswith("adapter_"))

    def adapter_files(self) -> list[str]:
        return sorted(n for n in self.top() if WEIGHT_RE.match(n) and n.startswith("adapter_"))

    def total_bytes(self) -> int:
        return sum(f.size for f in self.files.values() if f.link is None)

    def json(self, name: str) -> Any:
        j = self.jsons.get(name)
        return j.data if j is not None else None

    @property
    def args(self) -> dict[str, Any] | None:
        a = self.json("args.json")
        return a if isinstance(a, dict) else self.run_args


def is_checkpoint_dir(d: Path) -> bool:
    try:
        names = set(os.listdir(d))
    except OSError:
        return False
    return bool(names & set(CKPT_MARKERS)) or any(WEIGHT_RE.match(n) for n in names) or \
        any(n.startswith("global_step") for n in names)


def checkpoint_dir_of(path: Path) -> Path:
    """The checkpoint directory a file belongs to (files of global_stepN/ belong to its parent)."""
    d = path if path.is_dir() else path.parent
    if d.name.startswith("global_step") and d.parent != d:
        return d.parent
    return d


def find_checkpoints(root: Path) -> list[Path]:
    """checkpoint-N/ folders anywhere under a run directory (any nesting swift produces), by path order."""
    out = []
    for dirpath, dirnames, _ in walk(root):
        keep = []
        for n in sorted(dirnames):
            if n.startswith(".") or n in ("runs", "images", "__pycache__") or n.startswith("global_step"):
                continue
            if CHECKPOINT_NAME.match(n) and not os.path.islink(os.path.join(dirpath, n)):
                out.append(Path(dirpath) / n)
                continue
            keep.append(n)
        dirnames[:] = keep
    return sorted(out, key=checkpoint_order)


CHECKPOINT_NAME = lazyre.compile(r"checkpoint-(\d+)$")


def checkpoint_order(p: Path) -> tuple[str, int]:
    """Folders in path order, the checkpoints of one folder by step."""
    m = CHECKPOINT_NAME.match(p.name)
    return str(p.parent), int(m.group(1)) if m else -1


OUT_OF_CHECKPOINT = "a symlink out of the checkpoint directory, not followed"


def _file_fact(d: Path, rel: str) -> FileFact | None:
    p = d / rel
    try:
        lst = p.lstat()
    except OSError:
        return None
    link = None
    dangling = False
    if stat.S_ISLNK(lst.st_mode):
        try:
            link = os.readlink(p)
            st = p.stat()
        except OSError:
            return FileFact(rel, 0, link, True)
        if not stat.S_ISREG(st.st_mode):
            return None
        if link_out(p, d):  # measured as a link (its size is never counted), its bytes never read
            return FileFact(rel, st.st_size, link)
        size = st.st_size
    elif stat.S_ISREG(lst.st_mode):
        size = lst.st_size
    else:
        return None
    lfs = None
    zip_ok = None
    if 0 < size < 1024:
        try:
            with open_regular(p) as f:
                head = f.read(1024)
            if head.startswith(LFS_MAGIC):
                lfs = parse_lfs_pointer(head)
        except OSError:
            pass
    if lfs is None and rel.endswith(PICKLE_SUFFIXES) and size >= 4:
        zip_ok = _zip_complete(p, size)
    return FileFact(rel, size, link, dangling, lfs, zip_ok)


def _zip_complete(p: Path, size: int) -> bool | None:
    """torch.save writes a zip: PK\\3\\4 at the start, the end-of-central-directory record at the end."""
    try:
        with open_regular(p) as f:
            if f.read(4) != b"PK\x03\x04":
                return None  # legacy pickle format: nothing we can check without unpickling
            f.seek(max(0, size - 65_557))
            tail = f.read()
    except OSError:
        return None
    return b"PK\x05\x06" in tail[-65_557:]


# what each JSON file of a checkpoint may weigh: json.loads takes ~25x the file's size in memory, and the real files
# are small (config and argument files tens of kB; a 671B model's weight index ~9 MB; a trainer_state.json of
# 10,000+ logged steps ~8 MB); larger ones are named and not read
JSON_CAPS = {"config.json": 4 << 20, "adapter_config.json": 4 << 20, "args.json": 4 << 20,
             "generation_config.json": 4 << 20, "trainer_state.json": 8 << 20}


def _read_json(p: Path, size: int, root: Path | None = None) -> JsonFile:
    if size == 0:
        return JsonFile(None, "the file is empty (0 bytes)")
    cap = JSON_CAPS.get(p.name, MAX_JSON)
    if size > cap:
        return JsonFile(None, f"{size:,} bytes, larger than the {cap >> 20} MiB such a file takes: not read")
    try:
        with open_regular(p, root=root) as f:
            raw = f.read(MAX_JSON + 1)
    except OSError as e:
        return JsonFile(None, f"cannot read it ({e.strerror})")
    if raw.startswith(LFS_MAGIC):
        return JsonFile(None, "a git-LFS pointer, not the file")
    from .jsoncost import too_costly
    costly = too_costly(raw)
    if costly is not None:
        if p.name != "trainer_state.json":
            return JsonFile(None, costly)
        # the rules read its top-level numbers only (global_step, max_steps, save_steps): stream those, drop the rest
        import io

        from .trainer_state import top_scalars
        values, why = top_scalars(io.BytesIO(raw))
        return JsonFile(values if why is None else None, why)
    try:
        return JsonFile(json.loads(raw.decode("utf-8-sig")))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        return JsonFile(None, f"not valid JSON ({str(e)[:80]}; {size:,} bytes: cut short?)")


JSON_NAMES = ("config.json", "adapter_config.json", "args.json", "trainer_state.json", "model.safetensors.index.json",
              "pytorch_model.bin.index.json", "generation_config.json")


def read_checkpoint(d: Path, display: str | None = None, *, run_dir_facts: bool = True,
                    sizes: dict[str, Any] | None = None, library: bool = True) -> CheckpointFacts:
    """Everything the rules need about one checkpoint directory. Reads sizes, headers and small JSON files.

    ``sizes``: bytes of checkpoint directories already measured, shared by the calls for the checkpoints of one
    run (each call adds its own and its siblings'), so that N checkpoints cost N directory walks, not N^2.
    ``library``: safetensors' own parser on every weights file (False: only on one our checks found broken;
    safetensors_header.read_header)."""
    facts = CheckpointFacts(display or str(d))
    for entry in sorted(os.listdir(d)):
        p = d / entry
        if p.is_dir() and not p.is_symlink():
            if entry.startswith("global_step"):
                try:
                    subs = sorted(os.listdir(p))
                except OSError as e:  # an unreadable DeepSpeed folder: named, its size unknown
                    facts.skipped[entry] = f"cannot read it ({e.strerror})"
                    continue
                total = 0
                for sub in subs:
                    ff = _file_fact(d, f"{entry}/{sub}")
                    if ff is not None:
                        facts.files[ff.name] = ff
                        total += ff.size
                facts.deepspeed_tags[entry] = total
            continue
        ff = _file_fact(d, entry)
        if ff is None:
            continue
        facts.files[entry] = ff
    for name, ff in facts.files.items():
        if ff.link is not None and not ff.dangling and link_out(d / name, d):
            facts.skipped[name] = OUT_OF_CHECKPOINT
    for name, ff in facts.top().items():
        if ff.dangling or name in facts.skipped:  # a link out of the checkpoint: its bytes never reach the report
            continue
        if name.endswith(".safetensors"):
            facts.headers[name] = read_header(str(d / name), ff.size, library)
        elif name in JSON_NAMES:
            facts.jsons[name] = _read_json(d / name, ff.size, root=d)
    if "latest" in facts.files and 0 < facts.files["latest"].size < 4096:
        try:
            facts.latest = read_head(d / "latest", 4096, root=d).decode("utf-8", errors="replace").strip()
        except OSError:
            pass
    try:
        facts.fs_free = free_bytes(d)
        facts.fs_mount = _mount_of(d)
    except OSError:
        pass
    if run_dir_facts:
        _read_run_dir(facts, d, {} if sizes is None else sizes)
    return facts


def _mount_of(d: Path) -> str:
    p = d.resolve()
    while not os.path.ismount(p) and p.parent != p:
        p = p.parent
    return str(p)


def dir_bytes(d: Path) -> int:
    total = 0
    for dirpath, _, files in walk(d):
        for n in files:
            try:
                st = os.lstat(os.path.join(dirpath, n))
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                total += st.st_size
    return total


def _read_run_dir(facts: CheckpointFacts, d: Path, sizes: dict[str, Any]) -> None:
    run = d.parent
    if run == d:
        return
    facts.run_dir = str(Path(facts.path).parent)
    shared = _run_dir_facts(run, sizes)
    if shared is None:
        return
    links, ckpts, run_args, command = shared
    facts.run_links.update(links)
    for n in ckpts:
        key = str(run / n)
        if n == d.name:
            sizes[key] = facts.total_bytes()
        elif key not in sizes:
            sizes[key] = dir_bytes(run / n)
        facts.siblings[n] = sizes[key]
    if run_args is not None:
        facts.run_args = run_args
    facts.command_text, facts.command_source = command
    if LOOK_UP_BASE:
        _read_base_config(facts, run)


def _run_dir_facts(run: Path, memo: dict[str, Any]) -> tuple[dict, list[str], dict | None, tuple] | None:
    """(links, checkpoint-N names, args.json, command) of a run directory, read once for all its checkpoints (each
    listing the folder again made check-ckpt of 1,000 checkpoints quadratic: 82 s); None when it cannot be listed."""
    key = "\0run " + str(run)   # beside the sizes of the checkpoints measured, in the same per-call dict
    if key in memo:
        return memo[key]
    try:
        names = sorted(os.listdir(run))
    except OSError:
        memo[key] = None
        return None
    links: dict[str, tuple[str, bool]] = {}
    ckpts: list[str] = []
    for n in names:
        p = run / n
        if p.is_symlink():
            links[n] = (os.readlink(p), p.exists())
        elif re.match(r"checkpoint-\d+$", n) and p.is_dir():
            ckpts.append(n)
    run_args = None
    if "args.json" in names:
        try:
            size = (run / "args.json").stat().st_size
        except OSError:
            size = 0
        j = _read_json(run / "args.json", size, root=run)
        if isinstance(j.data, dict):
            run_args = j.data
    memo[key] = got = (links, ckpts, run_args, _find_command(run, names))
    return got


def _read_base_config(facts: CheckpointFacts, run: Path) -> None:
    """config.json of the base model, when this machine has it (args.json: model_dir, else model)."""
    args = facts.args if isinstance(facts.args, dict) else {}
    cands = [args.get("model_dir"), args.get("model")]
    for model in cands:
        if not isinstance(model, str) or not model:
            continue
        for base in (Path(model), run / model):
            cfg = base / "config.json"
            try:
                if cfg.is_file() and cfg.stat().st_size < 1_000_000:
                    data = json.loads(read_head(cfg, 1_000_000).decode("utf-8"))
                    if isinstance(data, dict):
                        facts.base_config = data
                        return
            except (OSError, ValueError, RecursionError):
                continue


def _find_command(run: Path, names: list[str]) -> tuple[str | None, str | None]:
    """The command that started the run: command.txt / a launcher script, or the `run sh:` line that ms-swift
    prints first, in a console log saved in the run directory (only the first 64 KB are read)."""
    from .kinds import classify
    for n in names:
        low = n.lower()
        if low in ("command.txt", "cmd.txt") or low.endswith(".sh"):
            try:  # never a FIFO (it would block) nor a link out of the run directory
                return read_head(run / n, HEAD_BYTES, root=run).decode("utf-8", "replace"), str(Path(n))
            except OSError:
                continue
    for n in names:
        p = run / n
        if not p.is_file() or classify(p) != "log":
            continue
        try:
            head = read_head(p, HEAD_BYTES, root=run).decode("utf-8", "replace")
        except OSError:
            continue
        for line in head.splitlines():
            if line.startswith("run sh: "):
                return line[len("run sh: "):].strip().strip("`"), n
    return None, None


# ---------------------------------------------------------------------------------------- architecture
def expected_params(config: dict[str, Any] | None) -> int | None:
    """Parameter count of a decoder-only transformer (Llama/Qwen2/Qwen3/Mistral layout) from config.json.

    None for architectures this formula does not describe (MoE, vision towers, ...)."""
    if not isinstance(config, dict):
        return None
    cfg = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    mt = str(config.get("model_type", ""))
    if mt not in ("llama", "qwen2", "qwen3", "mistral") or cfg.get("num_experts") or cfg.get("num_local_experts"):
        return None
    try:
        v = int(cfg["vocab_size"])
        h = int(cfg["hidden_size"])
        inter = int(cfg["intermediate_size"])
        layers = int(cfg["num_hidden_layers"])
        heads = int(cfg["num_attention_heads"])
        kv = int(cfg.get("num_key_value_heads") or heads)
        hd = int(cfg.get("head_dim") or h // heads)
    except (KeyError, TypeError, ValueError):
        return None
    qkv_bias = mt == "qwen2" or bool(cfg.get("attention_bias"))
    attn = h * heads * hd + 2 * h * kv * hd + heads * hd * h
    if qkv_bias:
        attn += heads * hd + 2 * kv * hd
    if mt == "qwen3":
        attn += 2 * hd  # q_norm, k_norm
    layer = attn + 3 * h * inter + 2 * h
    total = v * h + layers * layer + h
    if not cfg.get("tie_word_embeddings", config.get("tie_word_embeddings", False)):
        total += v * h
    return total


def config_dtype(config: dict[str, Any] | None) -> str | None:
    if not isinstance(config, dict):
        return None
    v = config.get("torch_dtype") or config.get("dtype")
    if v is None and isinstance(config.get("text_config"), dict):
        v = config["text_config"].get("torch_dtype") or config["text_config"].get("dtype")
    return str(v) if v else None
