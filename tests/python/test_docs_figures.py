"""The numbers the documentation quotes from runs (scripts/docs-figures: the Poisson DP-SGD case and CYS Figure 1 in
docs/dpsgd.md, the default case in the README, the sweep cap in docs/sweeps.md) agree with what the code computes."""
import subprocess
import sys

from conftest import SOURCE


def test_the_documents_quote_what_the_code_computes():
    r = subprocess.run([sys.executable, str(SOURCE / "scripts" / "docs-figures")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.count(" agrees ") == 4, r.stdout
