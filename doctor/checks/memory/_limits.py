"""What limited an out-of-memory allocation when it was not the work itself, read from torch's own message
(c10/cuda/CUDACachingAllocator.cpp, torch 2.1+): a per-process cap (``"<size> allowed; "``, printed only when
``torch.cuda.set_per_process_memory_fraction`` set one) and memory other processes hold on the same GPU
(``reportProcessMemoryInfo``: ``"Process <pid> has <size> memory in use. "`` for each other process and ``"Including
non-PyTorch memory, this process has <size> memory in use. "`` for this one; torch before that split printed every
process, this one included, as ``Process <pid>``, so other processes are named only when this process's own line is
there).

The first fix is then the limit itself: the cap, or the other processes; the work's levers come after.
"""
from __future__ import annotations

from typing import Any

from ... import lazyre
from ._facts import fmt_gib, gib

_ALLOWED = lazyre.compile(r"(?P<v>[\d.]+) (?P<u>[KMGT]i?B) allowed;")
SIGNIFICANT = 0.5   # GiB held by other processes worth naming (a CUDA context alone is ~0.3-0.6 GiB)
OUTSIDE_TORCH = 2.0  # GiB a training process holds beyond PyTorch's reserve without a pool of its own (context, NCCL)


def _own_line(procs: list, oom: dict[str, Any]) -> tuple | None:
    """Torch before the split prints this process among the others as ``Process <pid>``: it holds PyTorch's reserve
    plus its CUDA context and NCCL buffers. When exactly one listed process fits that, it is this one."""
    by_torch = oom.get("by_torch")
    if by_torch is None:
        return None
    reserved = by_torch + (oom.get("unalloc") or 0.0) if oom.get("reserved") is None else oom["reserved"]
    fits = [p for p in procs if p[1] is not None and reserved <= p[1] <= reserved + OUTSIDE_TORCH]
    return fits[0] if len(fits) == 1 else None


def read_limits(text: str, oom: dict[str, Any], own_pool: bool = False) -> dict[str, Any]:
    """``allowed`` (GiB) when a cap was printed; ``others``: [(pid, GiB)] of other processes when the message tells
    them apart from this one, or when this one is the only listed process its PyTorch numbers fit (``inferred``; not
    when ``own_pool``: a colocated vLLM engine keeps memory outside PyTorch's allocator in the same process)."""
    out: dict[str, Any] = {}
    m = _ALLOWED.search(text)
    if m:
        out["allowed"] = gib(m.group("v"), m.group("u"))
    total = oom.get("total")
    procs = [(pid, g) for pid, g in oom.get("procs") or () if g is not None and (not total or g <= total)]
    if "this process has" in text and procs:
        out["others"] = procs
    elif len(procs) > 1 and not own_pool:
        own = _own_line(procs, oom)
        if own is not None:
            out["others"] = [p for p in procs if p is not own]
            out["inferred"] = own
    return out


def limits(text: str, oom: dict[str, Any], *, server_mode: bool = False, own_pool: bool = False
           ) -> tuple[str, list[str], list[str]]:
    """(sentences for the message, fixes that come first, fixes that come last) when a cap or other processes
    limited the allocation; ("", [], []) otherwise. Other processes' memory is a first fix when freeing it makes the
    request fit or it is a tenth of the card; a last one otherwise."""
    lim = read_limits(text, oom, own_pool)
    total, free, req, gpu = oom.get("total"), oom.get("free"), oom.get("alloc"), oom.get("gpu")
    card = f"GPU {gpu}" if gpu is not None else "the GPU"
    said: list[str] = []
    fixes: list[str] = []
    later: list[str] = []
    allowed = lim.get("allowed")
    if allowed is not None:
        share = f" ({allowed / total:.0%} of the card's {fmt_gib(total)})" if total else ""
        room = free is not None and req is not None and free >= req
        said.append(f"This process is capped at {fmt_gib(allowed)}{share} by a per-process memory fraction "
                    f"(torch.cuda.set_per_process_memory_fraction, called by the code or an option that sets it)"
                    + (f", and {fmt_gib(free)} of the card were still free: the cap, not the card, is the limit."
                       if room else "; the card itself had only " + (f"{fmt_gib(free)} free." if free is not None
                                                                      else "little free.")))
        fixes.append(f"Raise or remove the per-process memory fraction (the cap is {fmt_gib(allowed)}"
                     + (f", the card has {fmt_gib(total)}" if total else "") + "): find the "
                     "torch.cuda.set_per_process_memory_fraction call, or the option of the framework that sets it.")
    others = lim.get("others") or []
    held = sum(g for _, g in others)
    if held >= SIGNIFICANT:
        named = ", ".join(f"process {pid} {fmt_gib(g)}" for pid, g in others[:6]) + (" ..." if len(others) > 6 else "")
        fit = free is not None and req is not None and free < req <= free + held
        own = lim.get("inferred")
        said.append(f"Other processes hold {fmt_gib(held)} of {card} ({named})"
                    + (f" (computed: this process is process {own[0]}, the only one whose {fmt_gib(own[1])} fits its "
                       f"PyTorch memory plus a CUDA context)" if own else "")
                    + (f": without them the {fmt_gib(req)} requested would have fit ({fmt_gib(free)} free)."
                       if fit else "."))
        pids = ", ".join(str(pid) for pid, _ in others[:6])
        weighty = fit or (total is not None and held >= 0.1 * total)
        (fixes if weighty else later).append(f"Free {card}: process{'es' if len(others) > 1 else ''} {pids} hold{'' if len(others) > 1 else 's'} "
                     f"{fmt_gib(held)} (a previous run that did not exit, a notebook, another job: `nvidia-smi "
                     f"--query-compute-apps=pid,used_memory --format=csv` lists them), or run on a GPU no other process "
                     f"uses (CUDA_VISIBLE_DEVICES)."
                     + (" If one of them is this run's vLLM rollout server, give the server and the trainer separate "
                        "GPUs." if server_mode else ""))
    return " ".join(said), fixes, later
