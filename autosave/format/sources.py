"""What the C loops are built from, as one digest: the build records it in the
extension (setup.py), and the import compares it with the checkout's sources when the
extension was built in place (format/kernels.py), so an edited kernel is never run by
a stale build.

No autosave imports: setup.py runs this file on its own, before autosave is built.
"""

import hashlib
from pathlib import Path

KERNEL_TABLE = "autosave/format/kernels.def"


def source_files(root: Path) -> list[Path]:
    """The files the extension is compiled from, in a fixed order."""
    csrc = root / "csrc"
    return sorted([*csrc.glob("*.c"), *csrc.glob("*.h")]) + [root / KERNEL_TABLE]


def sources_digest(root: "Path | str") -> str:
    root = Path(root)
    digest = hashlib.sha256()
    for path in source_files(root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()
