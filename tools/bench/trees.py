"""A git revision of this repository as a source tree to measure, its C extensions built.

``git archive`` gives the sources only; a revision run from them would decode and call the store
through its pure-Python fallbacks, while this checkout (installed with ``pip install -e``) runs its
extensions.  :func:`export` builds the revision's optional extensions in place (those its
``pyproject.toml`` lists) with this interpreter's setuptools, as an install would.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from bench.timing import log

ROOT = Path(__file__).resolve().parent.parent.parent

BUILD = """
import tomllib
from setuptools import Distribution, Extension

with open("pyproject.toml", "rb") as file:
    modules = tomllib.load(file).get("tool", {}).get("setuptools", {}).get("ext-modules", [])
if modules:
    extensions = [Extension(m["name"], m["sources"], optional=m.get("optional", False)) for m in modules]
    dist = Distribution({"ext_modules": extensions})
    build = dist.get_command_obj("build_ext")
    build.inplace = True
    dist.run_command("build_ext")
    print(" ".join(m["name"] for m in modules))
"""


def export(revision: str, into: Path) -> None:
    """``revision``'s files into the directory ``into``, with its extensions built in place."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", revision], check=True, capture_output=True
    )
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive.stdout, check=True)
    built = subprocess.run([sys.executable, "-c", BUILD], cwd=into, capture_output=True, text=True)
    if built.returncode:
        log(f"warning: {revision}'s C extensions did not build; it runs without them:\n{built.stderr[-1500:]}")
    elif built.stdout.strip():
        log(f"{revision}: built {built.stdout.strip().splitlines()[-1]}")
