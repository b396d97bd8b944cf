"""GD506: thermal or hardware slowdown, or a GPU at 85 C or more."""
from __future__ import annotations

from ._snapshot import HOT_C, SLOWDOWN, GpuRule, row


class GpuThrottled(GpuRule):
    """GD506: thermal or hardware slowdown (clock event reasons), or a GPU at 85 C or more."""

    def check(self, ctx, path, gpus, all_samples, seq):
        hits = []
        for s in gpus:
            rs = [r for r in (s.throttle_reasons or ()) if r in SLOWDOWN]
            hot = s.temp_c is not None and s.temp_c >= HOT_C
            if rs or hot:
                hits.append((s, rs, hot))
        if not hits:
            return None
        parts = []
        for s, rs, hot in hits[:4]:
            why = ", ".join(rs) if rs else ""
            if hot:
                why = (why + ", " if why else "") + f"{s.temp_c:.0f} C"
            parts.append(f"{s.label}: {why}")
        msg = ("GPU clocks are being cut: " + "; ".join(parts) + ". Steps take longer on these GPUs and every other "
               "rank waits for them at each collective.")
        fix = ["Check cooling and airflow (fans, inlet temperature) and the power supply; nvidia-smi -q -d "
               "PERFORMANCE,TEMPERATURE shows the active reasons.",
               "SW Power Cap alone at full load is normal and is not reported here."]
        return self.make(message=msg, fix=fix, evidence=[self.ev(path, row(s), s.line) for s, _, _ in hits[:5]], seq=seq)
