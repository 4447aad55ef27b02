#!/usr/bin/env python3
"""Writes ``conformance/supported-features.txt`` from ``titanium_gateway/render/features.py``
(the one list of claimed features). ``--check`` exits 1 when the committed file differs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from titanium_gateway.render.features import FEATURES_FILE, supported_features_file  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true", help="exit 1 when the file is not current")
    args = parser.parse_args()
    path = ROOT / FEATURES_FILE
    text = supported_features_file()
    if args.check:
        if not path.exists() or path.read_text() != text:
            print(f"{FEATURES_FILE} is not current: run hack/generate-supported-features.py", file=sys.stderr)
            return 1
        return 0
    path.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
