"""GD505: a GPU that cannot be read, uncorrectable ECC errors, retired / remapped rows."""
from __future__ import annotations

from ...model import Severity
from ._snapshot import GpuRule, row


class GpuErrors(GpuRule):
    """GD505: a GPU that cannot be read (ERR!, Unknown Error), uncorrectable ECC errors, retired/remapped rows."""

    def check(self, ctx, path, gpus, all_samples, seq):
        bad, warn = [], []
        for s in [x for x in all_samples if x.source != "csv-apps"]:
            if s.error:
                bad.append((s, f"{s.label} cannot be read by the driver ({s.error})"))
            elif s.ecc_volatile_uncorrected:
                bad.append((s, f"{s.label}: {s.ecc_volatile_uncorrected} uncorrectable ECC error(s) since boot"))
            elif s.remap_failed:
                bad.append((s, f"{s.label}: a row remapping failed"))
            elif s.retired_pending or s.remapped_pending:
                warn.append((s, f"{s.label}: " + ("retired pages" if s.retired_pending else "a row remap")
                             + " pending (applied at the next GPU reset)"
                             + (f"; {s.ecc_volatile_corrected} correctable ECC errors" if s.ecc_volatile_corrected
                                else "")))
        if not bad and not warn:
            return None
        what = "; ".join(t for _, t in (bad + warn)[:4])
        msg = what + "."
        if bad:
            msg += (" A GPU in this state fails or corrupts the job (NCCL errors, `CUDA error: unspecified launch "
                    "failure`, a rank that never answers).")
        fix = ["Take the GPU out of CUDA_VISIBLE_DEVICES and tell the machine's admin (dmesg | grep -i xid shows "
               "the Xid code).",
               "Pending retirements/remaps are applied by a GPU reset (nvidia-smi -r -i <index>, no processes "
               "running) or a reboot."]
        return self.make(message=msg, fix=fix, evidence=[self.ev(path, row(s), s.line) for s, _ in (bad + warn)[:5]],
                         seq=seq, severity=Severity.error if bad else Severity.warning)
