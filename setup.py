"""Installing the package builds the C runtime for this host (shared library + runner)."""
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.develop import develop


def _build_runtime() -> None:
    root = Path(__file__).resolve().parent
    subprocess.check_call([sys.executable, "-c", "from iree_py.runtime.build import build_runtime; build_runtime('host', force=True)"],
                          cwd=root)


class BuildPyWithRuntime(build_py):
    def run(self) -> None:
        _build_runtime()
        super().run()


class DevelopWithRuntime(develop):
    def run(self) -> None:
        _build_runtime()
        super().run()


setup(cmdclass={"build_py": BuildPyWithRuntime, "develop": DevelopWithRuntime})
