"""The two build steps setuptools has no declarative form for (everything else is in pyproject.toml):

- build_py: a wheel carries the data iree-py needs at run time, copied from the top-level folders of
  the checkout (or sdist) into iree_py/_data/ (iree_py/resources.py: targets/*.toml, the runtime
  sources), and the host runtime (library + runner) built now, so `iree-py run` works on a machine
  without a C compiler. An editable install only builds the host runtime in the checkout's
  build/runtime/host/, where the checkout's iree_py finds it.
- the wheel is platform-specific: that runtime is native code, though no Python extension. The
  distribution says it has native code (so the wheel is not "pure" and installs into platlib), and
  bdist_wheel tags it py3-none-<platform>: any Python 3, this OS and CPU.
"""
import sys
from pathlib import Path

from setuptools import Distribution, setup
from setuptools.command.bdist_wheel import bdist_wheel
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildPyWithData(build_py):
    def run(self) -> None:
        super().run()
        sys.path.insert(0, str(ROOT))  # the iree_py being built: its resources and build modules
        from iree_py import resources
        from iree_py.runtime.build import build_host_runtime_into, build_runtime
        if self.editable_mode:
            build_runtime("host", force=True)
            return
        data = resources.stage_package_data(ROOT, Path(self.build_lib) / "iree_py")
        build_host_runtime_into(data / resources.RUNTIME_SOURCES, data / resources.PREBUILT_HOST_RUNTIME)


class NativeCodeDistribution(Distribution):
    def has_ext_modules(self) -> bool:
        return True


class PlatformWheel(bdist_wheel):
    def get_tag(self) -> tuple[str, str, str]:
        _, _, platform = super().get_tag()
        return "py3", "none", platform


setup(distclass=NativeCodeDistribution, cmdclass={"build_py": BuildPyWithData, "bdist_wheel": PlatformWheel})
