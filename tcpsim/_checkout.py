"""Running from a source checkout: find the native engine a plain `pip install .` built.

`tcpsim._native` (native/, Rust) is built by pip. An editable install (`pip install -e .`)
puts it in tcpsim/ of the checkout; a plain `pip install .` puts it in site-packages, where
the checkout's own tcpsim/ (first on sys.path for `python3 -m pytest` from the root)
shadows it. So that the README's `pip install '.[test]' && pytest` tests the extension it
just built, load that one -- but only if it was installed from this very checkout (pip's
direct_url.json names the source folder), never a copy built from some other revision.
"""

from __future__ import annotations

import json
import sys
from importlib.machinery import EXTENSION_SUFFIXES
from importlib.metadata import distributions
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path
from urllib.parse import unquote, urlparse


def installed_native(root: Path) -> Path | None:
    """The _native extension of the tcpsim distribution installed from checkout `root`, or
    None (not installed, installed from elsewhere, or built without it)."""
    for dist in distributions(name="tcpsim"):
        try:
            url = urlparse(json.loads(dist.read_text("direct_url.json") or "{}").get("url", ""))
        except ValueError:
            continue
        if url.scheme != "file" or Path(unquote(url.path)).resolve() != root.resolve():
            continue
        pkg = Path(str(dist.locate_file("tcpsim")))
        for suffix in EXTENSION_SUFFIXES:
            so = pkg / f"_native{suffix}"
            if so.is_file():
                return so
    return None


def load_installed_native(root: Path) -> None:
    """Make `import tcpsim._native` find the extension installed from `root`, if any."""
    so = installed_native(root)
    if so is None:
        return
    spec = spec_from_file_location("tcpsim._native", so)
    if spec is None or spec.loader is None:
        return
    module = module_from_spec(spec)
    sys.modules["tcpsim._native"] = module
    spec.loader.exec_module(module)
    setattr(sys.modules["tcpsim"], "_native", module)
