"""Coverage-guided fuzzing of iree-py's Python side with atheris (libFuzzer for Python).

    python3 tests/fuzz/python/fuzz.py HARNESS [CORPUS_DIR ...] [libFuzzer flags]
    python3 tests/fuzz/python/fuzz.py compile -max_total_time=3600 -artifact_prefix=/tmp/found/

HARNESS is one of harnesses.HARNESSES: `compile` (ONNX and TFLite model bytes through
iree_py.compile), `module` (module bytes through iree_py.load and a call), `npy` (an input file
through `iree-py run`). Without a corpus folder the seeds (seeds.py) go into a fresh one. A finding
is written as crash-<sha1> (libFuzzer's -artifact_prefix); copy it to
tests/fuzz/python/regressions/HARNESS/ with a name that says what it was, and the suite replays it
(test_python_fuzzers.py). Defaults: -timeout=120 (a compile over two minutes is a hang),
-rss_limit_mb=6144 (a model that makes the compiler allocate more is a finding); the module and
npy harnesses run with at most 4 GiB of address space."""
from __future__ import annotations

import hashlib
import sys
import tempfile
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

with atheris.instrument_imports(include=["iree_py"]):  # coverage of iree-py's own code guides the mutations
    import iree_py.cli.inputs  # noqa: F401
    import iree_py.cli.main  # noqa: F401
    import iree_py.compiler  # noqa: F401  (the frontends, passes, codegen and module writer)
    import iree_py.module.reader  # noqa: F401
    import iree_py.runtime.module  # noqa: F401

from tests.fuzz.python.harnesses import HARNESSES, limit_address_space  # noqa: E402
from tests.fuzz.python.seeds import SEEDS  # noqa: E402

DEFAULT_FLAGS = ["-timeout=120", "-rss_limit_mb=6144"]



def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] not in HARNESSES:
        sys.exit(f"usage: fuzz.py {{{','.join(HARNESSES)}}} [CORPUS_DIR ...] [libFuzzer flags]")
    name, rest = sys.argv[1], sys.argv[2:]
    if not any(not a.startswith("-") for a in rest):
        corpus = Path(tempfile.mkdtemp(prefix=f"iree-py-fuzz-{name}-"))
        for seed in SEEDS[name]():
            (corpus / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
        rest.append(str(corpus))
    limit_address_space(name)
    harness = HARNESSES[name]
    flags = [f for f in DEFAULT_FLAGS if f.split("=")[0] not in {a.split("=")[0] for a in rest}]
    atheris.Setup([sys.argv[0], *flags, *rest], lambda data: harness(bytes(data)))
    atheris.Fuzz()


if __name__ == "__main__":
    main()
