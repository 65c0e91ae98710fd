"""A student without the repository: install from the release folder with the one documented
command, then run every released notebook. Only the unanswered tasks may fail."""

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from crowdlearn_grader.kit import INSTRUCTOR_ONLY, build_student_kit
from support import released_assignments

ROOT = Path(__file__).resolve().parents[2]


RUN_ALL = """
import sys
import nbformat
from nbclient import NotebookClient
nbs = [nbformat.read(path, as_version=4) for path in sys.argv[1:]]
client = NotebookClient(nbs[0], timeout=600, kernel_name="python3", allow_errors=True)
reset = nbformat.v4.new_code_cell("get_ipython().run_line_magic('reset', '-f')")
with client.setup_kernel():
    for k, nb in enumerate(nbs):
        client.nb = nb
        if k:
            client.execute_cell(reset, 0)
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                client.execute_cell(cell, index)
for path, nb in zip(sys.argv[1:], nbs):
    nbformat.write(nb, path)
"""


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    out = tmp_path_factory.mktemp("released")
    notebooks = released_assignments(out, tmp_path_factory)  # classroom.release, once a run
    files = build_student_kit(out)
    return out, notebooks, files


def test_kit_contents(kit):
    out, notebooks, files = kit
    assert notebooks and all(p.parent == out for p in notebooks)
    assert files["wheel"].name.startswith("crowdlearn-") and files["wheel"].is_file()
    req = files["requirements"].read_text()
    assert f"./{files['wheel'].name}" in req and "-c constraints-student.txt" in req
    checks = files["wheels"][1]  # what the checks import; no grader
    assert checks.name.startswith("crowdlearn_checks-") and f"./{checks.name}" in req
    assert "grader" not in req
    for tool in INSTRUCTOR_ONLY:
        assert tool not in req.lower()
        assert f"\n{tool}==" not in files["constraints"].read_text().lower()
    install = files["install"].read_text()
    assert "python3 -m pip install -r requirements-student.txt" in install
    # the notebooks' MyST renders in the student's JupyterLab, at the version the book pins
    assert "jupyterlab-myst" in req.split() and "jupyterlab-myst" in install
    assert "\njupyterlab_myst==" in files["constraints"].read_text()


def test_a_student_installs_with_one_command_and_runs_every_notebook(kit, tmp_path):
    out, notebooks, _ = kit
    env_dir = tmp_path / "student-venv"
    venv.create(env_dir, with_pip=True)
    py = env_dir / "bin" / "python"
    clean = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # the documented command, run in the release folder, as INSTALL.md says (pip told not to
    # byte-compile every module it installs, as PIP_COMPILE=0 does: the same files, and
    # Python compiles what the notebooks import as they import it)
    proc = subprocess.run([str(py), "-m", "pip", "install", "-q", "-r",
                           "requirements-student.txt"], cwd=out,
                          env={**clean, "PIP_COMPILE": "0"},
                          capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    # the package comes from the wheel, not from this checkout; no instructor tools
    work = tmp_path / "elsewhere"
    work.mkdir()
    where = subprocess.run([str(py), "-c", "import crowdlearn; print(crowdlearn.__file__)"],
                           cwd=work, env=clean, capture_output=True, text=True, check=True)
    assert str(env_dir) in where.stdout and str(ROOT) not in where.stdout
    for tool in ("nbgrader", "jupyter_book", "pytest", "crowdlearn_grader"):
        probe = subprocess.run([str(py), "-c", f"import {tool}"], cwd=work, env=clean,
                               capture_output=True, text=True)
        assert probe.returncode != 0, f"{tool} is installed in the student environment"
    # JupyterLab renders the notebooks' MyST: jupyterlab-myst is installed and enabled
    listed = subprocess.run([str(env_dir / "bin" / "jupyter"), "labextension", "list"],
                            cwd=work, env=clean, capture_output=True, text=True)
    line = [x for x in (listed.stdout + listed.stderr).splitlines()
            if x.strip().startswith("jupyterlab-myst ")]
    assert line and "enabled" in line[0], listed.stdout + listed.stderr
    # every released notebook runs, by the student's nbclient, all in one kernel whose
    # namespace is reset before each (one start, one import of the packages); the only
    # errors are the unanswered tasks and what follows
    copies = [work / nb_path.name for nb_path in notebooks]
    for nb_path, copy in zip(notebooks, copies):
        copy.write_bytes(nb_path.read_bytes())
    run = subprocess.run([str(py), "-c", RUN_ALL, *map(str, copies)], cwd=work, env=clean,
                         capture_output=True, text=True, timeout=1200 * len(copies))
    assert run.returncode == 0, run.stderr[-3000:]
    for nb_path, copy in zip(notebooks, copies):
        cells = [c for c in json.loads(copy.read_text())["cells"] if c["cell_type"] == "code"]
        errors = [(i, o["ename"]) for i, c in enumerate(cells) for o in c.get("outputs", [])
                  if o.get("output_type") == "error"]
        names = {e for _, e in errors}
        assert "ModuleNotFoundError" not in names and "ImportError" not in names, errors
        assert errors, f"{nb_path.name}: the unanswered tasks should raise"
        first = min(i for i, _ in errors)
        assert cells[first]["outputs"][-1]["ename"] == "NotImplementedError", errors
        assert all(i > 0 for i, _ in errors), f"{nb_path.name}: the setup cell failed"
