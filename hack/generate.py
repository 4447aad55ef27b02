#!/usr/bin/env python3
"""Writes the files made from the code (``make generate``):

* ``titanium_gateway/twp/schema.json`` - the whole schema, from the model's declarations
  (``titanium_gateway/twp/schema.py``);
* ``conformance/supported-features.txt`` - from ``titanium_gateway/render/features.py``.

``--check`` writes nothing and exits 1 naming the files that are not current (the tests run it).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from titanium_gateway.render.features import FEATURES_FILE, supported_features_file  # noqa: E402
from titanium_gateway.twp.schema import SCHEMA_FILE, generated_text  # noqa: E402

#: each generated file -> what makes its text
FILES: dict[Path, Callable[[], str]] = {
    SCHEMA_FILE: generated_text,
    ROOT / FEATURES_FILE: supported_features_file,
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when a file is not current")
    args = parser.parse_args(argv)
    stale = []
    for path, make in FILES.items():
        text = make()
        if path.exists() and path.read_text() == text:
            continue
        if args.check:
            stale.append(path.relative_to(ROOT))
        else:
            path.write_text(text)
    for path in stale:
        print(f"{path} is not current: run `make generate` (hack/generate.py)", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())
