"""The opcode tables generated from flatbuffers/isa.toml must be current."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_generated_isa_files_are_current():
    result = subprocess.run([sys.executable, "tools/gen_isa.py", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_stale_file_is_detected(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_isa
    isa = gen_isa.load_isa()
    isa["op"][0]["doc"] = "changed"
    assert gen_isa.render_c(isa) != (ROOT / "runtime_c/vm/isa_generated.h").read_text()
    assert gen_isa.render_py(isa) == (ROOT / "iree_py/vm/isa_generated.py").read_text()  # docs are not in the py table
