"""Progress of a run in Python: what the callback receives, and the line fpdp prints by default."""
import math
import sys
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    """One step of a run's phase, as the progress callback receives it. phase: "companion_2h", "companion_4h" (the
    error estimate's solves on the 2x and 4x coarser meshes, before the run) or "run"; description: the phase in
    words; step of steps; t: the time of the dynamics (noisy GD: eta k); kl: KL at the phase's last output step (nan
    before the first); elapsed and remaining: seconds of this phase's stepping, and the estimate of the rest (nan
    before the second step)."""

    phase: str
    description: str
    step: int
    steps: int
    t: float
    kl: float
    elapsed: float
    remaining: float

    @property
    def fraction(self):
        return self.step / self.steps if self.steps else 1.0


class ProgressLine:
    """The default progress display: one line, rewritten in place at most every `interval` seconds, as the command
    line's (app/run/ProgressReporter); a new line per phase."""

    def __init__(self, stream=None, interval=0.5):
        self.stream = stream or sys.stdout
        self.interval = interval
        self.last = 0.0
        self.phase = None
        self.width = 0

    def __call__(self, p):
        now = time.monotonic()
        if p.phase != self.phase:
            if self.phase is not None:
                self.stream.write("\n")
            self.phase, self.last, self.width = p.phase, 0.0, 0
        if now - self.last < self.interval and p.step != p.steps:
            return
        self.last = now
        kl = "-" if math.isnan(p.kl) else f"{p.kl:.4e}"
        remaining = "" if math.isnan(p.remaining) else f"  remaining ~{p.remaining:.1f} s"
        label = "" if p.phase == "run" else p.description + ": "
        text = f"{label}step {p.step}/{p.steps}  t = {p.t:.4g}  KL = {kl}  {p.elapsed:.1f} s{remaining}"
        self.stream.write("\r" + text + " " * max(0, self.width - len(text)))
        self.width = len(text)
        self.stream.flush()

    def close(self):
        if self.phase is not None:
            self.stream.write("\n")
            self.stream.flush()
            self.phase = None
