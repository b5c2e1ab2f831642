"""A plain `pip install .` must ship every package, models/ and experiments/."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_package_is_listed_in_pyproject():
    cfg = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    listed = set(cfg["packages"])
    mapped = cfg["package-dir"]
    found = set()
    for init in (ROOT / "tcpsim").rglob("__init__.py"):
        found.add(".".join(init.parent.relative_to(ROOT).parts))
    for pkg, folder in mapped.items():
        if pkg:
            assert (ROOT / folder / "__init__.py").exists(), folder
            found.add(pkg)
    assert found <= listed, f"not shipped: {sorted(found - listed)}"
