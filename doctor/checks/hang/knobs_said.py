"""A hang whose paste names the environment switch that causes or cures it: the switch is the mechanism.

- ``CUDA_LAUNCH_BLOCKING=1`` set in a run that hangs: each kernel launch then waits for its kernel to finish, and
  NCCL launches a collective's kernel before it hands the work to its proxy thread (the thread that drives network
  peers), so the kernel waits for a proxy that waits for the launch to return: a deadlock (NVIDIA/nccl#750, where
  NCCL's maintainer explains it from NCCL's own launch order).
- A hang that ``NCCL_P2P_DISABLE=1`` cures, or one "with P2P enabled": NCCL's peer-to-peer transport between the
  GPUs of one node does not work there: PCIe Access Control Services or an IOMMU redirect P2P traffic (NVIDIA/nccl#631,
  a maintainer: disable ACS, boot with iommu=pt), or a driver with a P2P bug (dmlc/xgboost#11242: driver 560 hangs
  with P2P, 570 does not).
Pure: the paste's lines in, the advice for the first switch they name out."""
from __future__ import annotations

from collections.abc import Iterable

from ... import lazyre
from ...signals import LogLine

_BLOCKING = lazyre.compile(r"\bCUDA_LAUNCH_BLOCKING\s*=\s*['\"]?1\b")
_WORKED = (r"(?:\bworks?|\bworked|\bworking|\bfix(?:es|ed)?|\bsolv(?:es|ed)|\bresolv(?:es|ed)|\bno (?:more )?hang|"
           r"\bruns? (?:fine|well|normally)|正常|解决|可以)")
_P2P_CURES = lazyre.compile(rf"(?i)NCCL_P2P_DISABLE\s*=\s*['\"]?1\b.{{0,100}}?{_WORKED}|{_WORKED}.{{0,100}}?"
                            r"NCCL_P2P_DISABLE\s*=\s*['\"]?1\b|\b(?:hangs?|freezes?|stuck)\b.{0,40}\bwith P2P\b|"
                            r"\bP2P (?:is )?enabled\b")

BLOCKING_FIX = ("Meanwhile: the paste names CUDA_LAUNCH_BLOCKING=1 beside the hang, and when set it can itself hang "
                "NCCL: every kernel launch then waits for its kernel to finish, and NCCL launches a collective's "
                "kernel before it hands the work to the proxy thread that drives its network peers, so each waits for "
                "the other (NVIDIA/nccl#750). "
                "Unset CUDA_LAUNCH_BLOCKING for multi-GPU runs; use it only on one GPU to locate a CUDA error.")
P2P_FIX = ("Meanwhile: the paste says the hang goes with NCCL's peer-to-peer (P2P) transport between the GPUs of a "
           "node: on that machine P2P traffic does not get through. The usual causes are PCIe Access Control Services "
           "(ACS) or an IOMMU redirecting it (disable ACS in the BIOS or with setpci, boot with iommu=pt or the IOMMU "
           "off) and a driver with a P2P bug (update the NVIDIA driver); `nvidia-smi topo -m` and CUDA's "
           "p2pBandwidthLatencyTest show it. NCCL_P2P_DISABLE=1 is the stop-gap (slower: traffic goes through host "
           "memory).")


def knob_fix(lines: Iterable[LogLine]) -> str | None:
    """The advice for the switch the paste names with its hang, or None."""
    texts = [ln.text for ln in lines]
    if any("CUDA_LAUNCH_BLOCKING" in t and _BLOCKING.search(t) for t in texts):
        return BLOCKING_FIX
    if any("P2P" in t and _P2P_CURES.search(t) for t in texts):
        return P2P_FIX
    return None


__all__ = ["BLOCKING_FIX", "P2P_FIX", "knob_fix"]
