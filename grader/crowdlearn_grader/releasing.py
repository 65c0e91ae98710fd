"""Releasing the student versions: instructor notebook -> ``nbgrader generate_assignment``
in a temporary course directory -> ``<name>.ipynb`` (solutions stubbed, hidden tests removed)."""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import sys
import tempfile
import warnings
from pathlib import Path

from crowdlearn_grader.assignments import _select, find_assignments, read_assignment

__all__ = ["release"]


@contextlib.contextmanager
def _nbgrader_session(verbose: bool = False):
    """nbgrader's apps, quietly: its ``alembic`` on PATH, its log and warnings muted."""
    old_path = os.environ.get("PATH", "")
    bindir = str(Path(sys.executable).parent)  # nbgrader runs the `alembic` script it installed
    os.environ["PATH"] = bindir + os.pathsep + old_path
    logger = logging.getLogger("traitlets")
    handler = logging.NullHandler()  # swallows the log (with no handler, Python prints it)
    old_level, old_propagate = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    logger.propagate = verbose
    try:
        with warnings.catch_warnings():
            # SQLAlchemy's SAWarning (a RuntimeWarning) and deprecations inside nbgrader
            warnings.simplefilter("ignore")
            yield handler
    finally:
        os.environ["PATH"] = old_path
        logger.removeHandler(handler)
        logger.setLevel(old_level)
        logger.propagate = old_propagate


def _write_ipynb(nb, path: Path) -> None:
    import nbformat
    path.parent.mkdir(parents=True, exist_ok=True)
    nb = nbformat.from_dict(nb)
    nb.metadata.pop("jupytext", None)
    nbformat.write(nb, str(path))


def _generate(root: Path, names: dict, timeout: int = 60) -> None:
    """``nbgrader generate_assignment`` for every assignment (instructor md -> release/)."""
    from nbgrader.converters import GenerateAssignment
    from nbgrader.coursedir import CourseDirectory
    from traitlets.config import Config
    cfg = Config()
    cfg.CourseDirectory.root = str(root)
    cfg.CourseDirectory.db_url = f"sqlite:///{root / 'gradebook.db'}"
    cfg.Execute.timeout = int(timeout)
    cfg.Execute.kernel_name = "python3"
    for name, path in names.items():
        _write_ipynb(read_assignment(path), root / "source" / name / f"{name}.ipynb")
        coursedir = CourseDirectory(config=cfg)
        coursedir.assignment_id = name
        app = GenerateAssignment(coursedir=coursedir, config=cfg)
        app.force = True
        app.create_assignment = True
        app.start()


def release(out_dir, source=None, assignments=None, *, verbose: bool = False) -> list:
    """Write each assignment's student version to ``out_dir/<name>.ipynb``; the paths."""
    found = find_assignments(source)
    names = _select(found, assignments)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    with tempfile.TemporaryDirectory(prefix="crowdlearn-course-") as tmp, \
            _nbgrader_session(verbose):
        root = Path(tmp)
        _generate(root, names)
        for name in names:
            target = out_dir / f"{name}.ipynb"
            shutil.copyfile(root / "release" / name / f"{name}.ipynb", target)
            written.append(target)
    return written
