"""Where iree-py keeps what it builds on first use: one per-user folder, never site-packages (which
may be read-only). `$IREE_PY_CACHE_DIR` if set, else `$XDG_CACHE_HOME/iree-py`, else
`~/.cache/iree-py`. Each user of it keys its own subfolder by what its contents depend on."""
from __future__ import annotations

import os
from pathlib import Path

CACHE_DIR_VARIABLE = "IREE_PY_CACHE_DIR"


def user_cache_dir() -> Path:
    explicit = os.environ.get(CACHE_DIR_VARIABLE)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "iree-py"
