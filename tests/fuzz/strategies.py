"""Hypothesis strategies for hostile inputs: lines built from the shapes the rules read (batch errors, metric
dicts, argv lists, `run sh:` commands, tracebacks, tqdm bars, args dumps) filled with huge numbers, NaN/inf,
control and bidi characters, markdown/HTML, invalid UTF-8; whole real logs mutated and truncated."""
from __future__ import annotations

from hypothesis import strategies as st
from props import REAL_LOGS

SPECIAL = "\x1b\x07\x00\r\t\x7f\u009b\u009c\u009d\u202e\u2066\u200f\u061c`<>[]()!*_|\\'\"{}#&~\u00a0显存"
NUMBERS = st.one_of(st.integers(-3, 70), st.integers(10 ** 15, 10 ** 30), st.integers(10 ** 300, 10 ** 420),
                    st.integers(-(10 ** 25), -1))
VALUES = st.one_of(NUMBERS.map(str), st.sampled_from(["nan", "inf", "-inf", "NaN", "Infinity", "1e309", "-1e309",
                                                      "0.0", "1e-320", "'nan'", "None", "[]", "{}"]),
                   st.floats(allow_nan=True, allow_infinity=True).map(repr))
WORDS = st.text(alphabet=st.one_of(st.sampled_from(SPECIAL), st.characters(codec="utf-8")), max_size=30)

TEMPLATES = [
    "ValueError: generation_batch_size ({n}) must be divisible by num_generations ({m}).",
    ("ValueError: The global train batch size ({n} x {m}) must be evenly divisible by the number of generations per "
     "prompt ({m}). Given the current train batch size, the valid values for the number of generations are: [{n}]."),
    ("ValueError: The global eval batch size ({n} x {m}) must be evenly divisible by the number of generations per "
     "prompt ({m})."),
    ("{{'loss': {v}, 'grad_norm': {v}, 'reward': {v}, 'rewards/accuracy/mean': {v}, 'learning_rate': {v}, "
     "'completions/mean_length': {v}, 'epoch': {v}, 'global_step/max_steps': '{n}/{m}', 'kl': {v}}}"),
    "ValueError: remaining_argv: ['--{s}', '{s}', '\\x1b[2J{s}', '{v}']",
    ("run sh: `swift rlhf --rlhf_type grpo --per_device_train_batch_size {n} --num_generations {m} "
     "--learning_rate {v} --max_length {n} --vllm_gpu_memory_utilization {v} --{s} {v}`"),
    ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate {v} GiB. GPU {n} has a total capacity of {v} GiB "
     "of which {v} MiB is free. Of the allocated memory {v} GiB is allocated by PyTorch"),
    "Traceback (most recent call last):",
    '  File "{s}", line {n}, in {s}',
    "    {s}",
    "[rank{n}]: RuntimeError: {s}",
    "{s}Error: {s}",
    "Train: {n}%|█| {n}/{m} [00:{n}<00:00, {v}it/s]{s}",
    ("[INFO:swift] args: RLHFArguments(per_device_train_batch_size={n}, num_generations={m}, learning_rate={v}, "
     "max_length={n}, output_dir='{s}')"),
    "[INFO:swift] Setting args.{s}: {v}",
    ("[rank{n}]:[E ProcessGroupNCCL.cpp:{n}] [Rank {n}] Watchdog caught collective operation timeout: "
     "WorkNCCL(SeqNum={n}, OpType=ALLREDUCE, NumelIn={n}, NumelOut={n}, Timeout(ms)={n}) ran for {n} milliseconds"),
    "```{s}",
    "{s}",
]


@st.composite
def hostile_line(draw) -> bytes:
    t = draw(st.sampled_from(TEMPLATES))
    line = t.format(n=draw(NUMBERS), m=draw(NUMBERS), v=draw(VALUES), s=draw(WORDS))
    data = line.encode("utf-8", "surrogatepass")
    if draw(st.booleans()) and data:  # invalid UTF-8 / a wrapped line cut at a random byte
        i = draw(st.integers(0, len(data)))
        data = data[:i] + draw(st.sampled_from([b"\xff", b"\xc2", b"\n", b"\r", b"\xe2\x80", b"\x00"])) + data[i:]
    return data


@st.composite
def hostile_log(draw) -> bytes:
    lines = draw(st.lists(hostile_line(), min_size=1, max_size=25))
    sep = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
    data = sep.join(lines)
    if draw(st.booleans()):
        data += sep
    return data


@st.composite
def mutated_real_log(draw) -> bytes:
    data = bytearray(draw(st.sampled_from(REAL_LOGS)).read_bytes()) if REAL_LOGS else bytearray(b"x\n")
    keep = draw(st.floats(0.02, 1.0))
    data = data[: max(1, int(len(data) * keep))]  # truncated
    for _ in range(draw(st.integers(0, 12))):
        i = draw(st.integers(0, len(data)))
        data[i:i] = draw(hostile_line()) + b"\n"
    return bytes(data)


def deep(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


JSON_VALUES = st.one_of(VALUES, WORDS.map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'),
                        st.integers(1, 5000).map(deep))


@st.composite
def run_dir_files(draw) -> dict[str, bytes]:
    keys = ["per_device_train_batch_size", "num_generations", "learning_rate", "max_length", "gradient_accumulation_steps",
            "steps_per_generation", "generation_batch_size", "vllm_gpu_memory_utilization", "temperature",
            "model", "rlhf_type", "num_train_epochs", "max_steps", "world_size", "save_steps"]
    obj = ", ".join(f'"{k}": {draw(JSON_VALUES)}' for k in draw(st.lists(st.sampled_from(keys), max_size=10)))
    rows = [("{" + f'"loss": {draw(VALUES)}, "grad_norm": {draw(VALUES)}, "reward": {draw(VALUES)}, '
             f'"global_step/max_steps": "{draw(NUMBERS)}/{draw(NUMBERS)}", "rewards/acc/mean": {draw(VALUES)}' + "}")
            for _ in range(draw(st.integers(0, 6)))]
    cmd = (f"swift rlhf --rlhf_type grpo --per_device_train_batch_size {draw(VALUES)} --num_generations "
           f"{draw(VALUES)} --learning_rate {draw(VALUES)} --{draw(WORDS)} {draw(VALUES)}")
    return {"args.json": ("{" + obj + "}").encode("utf-8", "surrogatepass"),
            "logging.jsonl": "\n".join(rows).encode("utf-8", "surrogatepass"),
            "command.txt": cmd.encode("utf-8", "surrogatepass"),
            "train.log": draw(hostile_log())}


# ------------------------------------------------------------------------------ configuration files (issue 30)
TOML_VALUES = st.one_of(
    st.sampled_from(['"json"', '"text"', '"never"', '"warning"', '"ALL"', '["GD1", "cuda-oom"]', '["GD999X"]', "80",
                     "0", "-1", "nan", "inf", "-inf", "1e400", "true", "[]", "{}", '{a = 1}', "[[1], [2]]",
                     "1979-05-27T07:32:00Z", '"\\u202e"', "'''\n'''", "[" * 50 + "]" * 50]),
    st.integers(-(10 ** 30), 10 ** 30).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(lambda f: repr(f).replace("nan", "nan").replace("inf", "inf")),
    WORDS.map(lambda s: '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'),
)
TOML_KEYS = st.one_of(st.sampled_from(["select", "ignore", "fail-on", "fail_on", "gpu-mem", "format", "formt", "tool"]),
                      st.from_regex(r"[A-Za-z][A-Za-z0-9_-]{0,12}", fullmatch=True))


@st.composite
def config_text(draw) -> tuple[bytes, bool]:
    """(the bytes of a configuration file, whether it is a pyproject.toml): [tool.grpo-doctor] tables, top-level
    keys, odd shapes of `tool`, invalid TOML and bytes cut anywhere."""
    body = "\n".join(f"{draw(TOML_KEYS)} = {draw(TOML_VALUES)}" for _ in range(draw(st.integers(0, 6))))
    head = draw(st.sampled_from(["[tool.grpo-doctor]\n", "", "[project]\nname = 'x'\n[tool.grpo-doctor]\n",
                                 "tool = 1\n", "[tool]\ngrpo-doctor = [1]\n", "[[tool.grpo-doctor]]\n",
                                 "[tool.grpo-doctor]\n[tool.grpo-doctor]\n"]))
    data = (head + body + "\n").encode("utf-8", "surrogatepass")
    if draw(st.booleans()) and data:
        i = draw(st.integers(0, len(data)))
        data = data[:i] + draw(st.sampled_from([b"\xff", b"\x00", b"=", b"[", b'"', b"\n[tool.grpo-doctor]\n"])) + data[i:]
    return data, draw(st.booleans())


# --------------------------------------------------------------------- checkpoint side files (issue 30)
def _json_text(draw, keys: list[str]) -> str:
    return "{" + ", ".join(f'"{k}": {draw(JSON_VALUES)}' for k in draw(st.lists(st.sampled_from(keys), max_size=8))) + "}"


HEADER_NUMBERS = st.one_of(st.integers(-5, 70).map(str), st.sampled_from(["1e999", "-1e999", str(10 ** 400), "2.5",
                                                                         '"4"', "null", str(1 << 64), "NaN"]))


@st.composite
def safetensors_header(draw) -> str:
    """A JSON header with one to three tensors whose numbers may overflow (10**400, 1e999), be negative or no ints."""
    tensors = []
    for i in range(draw(st.integers(1, 3))):
        shape = ", ".join(draw(st.lists(HEADER_NUMBERS, max_size=4)))
        lo, hi = draw(HEADER_NUMBERS), draw(HEADER_NUMBERS)
        dtype = draw(st.sampled_from(["F16", "BF16", "F4", "F6_E2M3", "I64", "X9", "BOOL"]))
        tensors.append(f'"w{i}": {{"dtype": "{dtype}", "shape": [{shape}], "data_offsets": [{lo}, {hi}]}}')
    meta = draw(st.sampled_from(['', '"__metadata__": {"format": "pt"}, ', '"__metadata__": [1], ']))
    return "{" + meta + ", ".join(tensors) + "}"


@st.composite
def checkpoint_files(draw) -> dict[str, bytes]:
    """A checkpoint-N/ folder's JSON side files and safetensors shards, hostile in their numbers and shapes."""
    shard = "model-00001-of-00002.safetensors"
    wm = draw(st.sampled_from(['{"w0": "%s"}' % shard, '["a"]', '{"w0": ["x"], "w1": 1}', "null", '{"w0": "x/../../y"}']))
    ts = draw(st.sampled_from(["1e999", str(10 ** 400), "-1", "8", '"8"', "NaN"]))
    files = {
        "args.json": _json_text(draw, ["model", "train_type", "tuner_type", "num_generations", "save_steps",
                                       "per_device_train_batch_size", "model_type", "torch_dtype"]),
        "trainer_state.json": ('{"global_step": %s, "log_history": [%s]}' % (
            draw(JSON_VALUES), ", ".join(_json_text(draw, ["loss", "reward", "grad_norm", "step", "epoch", "kl"])
                                         for _ in range(draw(st.integers(0, 4)))))),
        "config.json": _json_text(draw, ["model_type", "vocab_size", "hidden_size", "intermediate_size",
                                         "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "head_dim",
                                         "torch_dtype", "tie_word_embeddings"]),
        "adapter_config.json": _json_text(draw, ["r", "lora_alpha", "peft_type", "target_modules", "rank_pattern"]),
        "model.safetensors.index.json": '{"metadata": {"total_size": %s}, "weight_map": %s}' % (ts, wm),
    }
    keep = draw(st.lists(st.sampled_from(sorted(files)), unique=True, min_size=1))
    out = {k: files[k].encode("utf-8", "surrogatepass") for k in keep}
    for name in draw(st.sampled_from([[shard], [shard, "model-00002-of-00002.safetensors"], ["model.safetensors"],
                                      ["adapter_model.safetensors"]])):
        out[name] = draw(safetensors_header()).encode("utf-8", "surrogatepass")  # the header; props packs it
    return out


# ------------------------------------------------------------------------------ watch's live inputs (issue 30)
BAR = "Train: {k:>3}%|{bar}| {k}/{m} [00:{k:02d}<00:00, 1.00it/s]"


@st.composite
def child_piece(draw) -> bytes:
    """What a training process writes: log lines, arbitrary bytes (NUL, invalid UTF-8), tqdm's CR-only redraws, a
    lone CR or newline, a line longer than the tee holds (1 MiB) or than a read (1 MiB)."""
    kind = draw(st.sampled_from(["line", "line", "bytes", "redraw", "sep", "huge"]))
    if kind == "line":
        return draw(hostile_line()) + draw(st.sampled_from([b"\n", b"\r\n", b"", b"\r"]))
    if kind == "bytes":
        return draw(st.binary(max_size=300))
    if kind == "redraw":
        m = draw(st.integers(1, 30))
        return b"".join(("\r" + BAR.format(k=k, m=m, bar="#" * (k * 10 // m))).encode() for k in range(m + 1))
    if kind == "sep":
        return draw(st.sampled_from([b"\r", b"\n", b"\r\n", b"\x00", b"\xff\xfe", b"\x1b[2K\r", b"\n" * 50]))
    n = draw(st.sampled_from([(1 << 16) + 1, (1 << 20) + 1, 3 << 20]))
    return draw(st.sampled_from([b"x", b"\xff", b"word ", b"\x00"])) * (n // 4) + draw(hostile_line())


def _cut(draw, data: bytes, most: int) -> list[bytes]:
    """``data`` in pieces cut anywhere (mid-line, mid-character), as reads of a pipe return it."""
    if not data:
        return []
    cuts = sorted(set(draw(st.lists(st.integers(1, max(1, len(data) - 1)), max_size=most))))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)]) if b > a]


@st.composite
def watch_inputs(draw) -> tuple[list[tuple[int, bytes]], list[tuple[str, bool, bytes]], int]:
    """(the child's output as (stream, chunk), the run folder's writes as (name, append, bytes), the analyser's
    backlog limit: tiny, so that it skips, or watch's own)."""
    chunks = []
    for stream, piece in draw(st.lists(st.tuples(st.integers(0, 1), child_piece()), max_size=20)):
        chunks += [(stream, c) for c in _cut(draw, piece, 3)]
    rd = draw(run_dir_files())
    jsonl = rd["logging.jsonl"] + draw(st.sampled_from([b"", b"\n", b'\n{"loss": 1', b"\n\xff\x00"]))
    files = [("logging.jsonl", draw(st.booleans()) or i > 0, part) for i, part in enumerate(_cut(draw, jsonl, 4))]
    args = _cut(draw, rd["args.json"], 2)
    at = draw(st.integers(0, len(files)))
    files[at:at] = [("args.json", i > 0, part) for i, part in enumerate(args)]
    if draw(st.booleans()) and files:   # rewritten from the start (a relaunch into the same folder)
        files.append(("logging.jsonl", False, rd["logging.jsonl"][: len(rd["logging.jsonl"]) // 2]))
    return chunks, files, draw(st.sampled_from([4096, 16 << 20]))
