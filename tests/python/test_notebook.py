"""examples/fpdp-in-python.ipynb executed headless (nbclient, Debian's ipykernel): every cell must run, and every cell
tagged "figure" must show a figure (image/png)."""
import shutil
from pathlib import Path

import nbclient
import nbformat

from conftest import SOURCE


def test_the_notebook_runs_and_draws_its_figures(tmp_path):
    notebook = SOURCE / "examples" / "fpdp-in-python.ipynb"
    shutil.copy(notebook, tmp_path / notebook.name)
    nb = nbformat.read(tmp_path / notebook.name, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=900, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError naming the cell that failed
    figures = [c for c in nb.cells if "figure" in c.get("metadata", {}).get("tags", [])]
    assert len(figures) == 2
    for cell in figures:
        images = [o for o in cell.get("outputs", []) if "image/png" in o.get("data", {})]
        assert images, f"no figure from the cell:\n{cell.source}"
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert (tmp_path / "fpdp-notebook-output" / "figure1-lambda4-output" / "epsilon.csv").is_file()
