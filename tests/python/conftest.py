"""Fixtures of the Python package's tests: the source tree, the fpdp executable (the command line the package must
agree with) and small cases that run in a second or two."""
import os
import subprocess
from pathlib import Path

import pytest

SOURCE = Path(os.environ.get("FPDP_SOURCE_DIR", Path(__file__).resolve().parents[2]))
EXECUTABLE = os.environ.get("FPDP_EXECUTABLE", str(SOURCE / "build" / "app" / "fpdp"))

# Noisy GD on the quadratic loss in 1-D (a closed form exists): 40 steps, an output every 5, a checkpoint at every
# output step, the error estimate on; about a second with its companions.
QUICK_CASE = """
[case]
name = "quick"
dynamics = "noisy_gd"
[mesh]
lower = [-6.0]
upper = [6.0]
cells = [400]
[loss]
type = "quadratic"
lambda = 1.0
[data]
records = [[0.3]]
[neighbour]
index = 0
record = [0.0]
[noise]
sigma = 1.0
[initial]
mean = [0.0]
covariance = 0.5
[noisy_gd]
eta = 0.1
steps = 40
[output]
every = 5
plots = false
fields = false
checkpoint_every = 1
[divergence]
orders = [2, 10]
"""


@pytest.fixture
def source():
    return SOURCE


@pytest.fixture
def quick_case():
    return QUICK_CASE


def command_line(*args, cwd=None):
    """Runs the fpdp executable; returns (exit status, stdout, stderr)."""
    r = subprocess.run([EXECUTABLE, *map(str, args)], capture_output=True, text=True, cwd=cwd)
    return r.returncode, r.stdout, r.stderr
