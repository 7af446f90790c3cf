"""Stand-in package indexes for the installer's test (tests/harness/test_installer.py): tiny
wheels named and shaped like PyPI's Linux torch (the CUDA build: it requires nvidia-* wheels)
and PyTorch's CPU build (`+cpu`), in PEP 503 `simple/` trees that pip reads over file://."""
from __future__ import annotations

import base64
import hashlib
import urllib.parse
import zipfile
from pathlib import Path


def wheel(folder: Path, name: str, version: str, requires: tuple[str, ...] = ()) -> Path:
    """A pure-Python wheel `name==version` whose metadata lists `requires`."""
    dist = name.replace("-", "_")
    info = f"{dist}-{version}.dist-info"
    files = {
        f"{dist}/__init__.py": f"__version__ = {version!r}\n",
        f"{info}/METADATA": "".join([f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
                                     *(f"Requires-Dist: {r}\n" for r in requires)]),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: p2p-tests\nRoot-Is-Purelib: true\n"
                         "Tag: py3-none-any\n",
    }
    record = [f"{path},sha256={_digest(text.encode())},{len(text.encode())}"
              for path, text in files.items()]
    files[f"{info}/RECORD"] = "\n".join(record + [f"{info}/RECORD,,"]) + "\n"
    path = folder / f"{dist}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for member, text in files.items():
            zf.writestr(member, text)
    return path


def simple_index(root: Path, wheels: list[Path]) -> str:
    """A PEP 503 index under root/simple serving `wheels` (moved to root/files); its file:// URL."""
    (root / "files").mkdir(parents=True, exist_ok=True)
    projects: dict[str, list[str]] = {}
    for whl in wheels:
        target = whl.rename(root / "files" / whl.name)
        project = whl.name.split("-")[0].replace("_", "-").lower()
        # '+' quoted as download.pytorch.org does (torch-2.13.0%2Bcpu-...)
        projects.setdefault(project, []).append(
            f'<a href="../../files/{urllib.parse.quote(target.name)}">{target.name}</a>')
    for project, links in projects.items():
        page = root / "simple" / project
        page.mkdir(parents=True, exist_ok=True)
        (page / "index.html").write_text("<!DOCTYPE html><html><body>\n"
                                         + "\n".join(links) + "\n</body></html>\n")
    return (root / "simple").as_uri()


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
