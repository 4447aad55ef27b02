#!/usr/bin/env bash
# Regenerate the render golden files (tests/render/testdata/*/): `make golden`.
# Review the diff by eye before committing it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
make golden "$@"
git status --short -- tests/render/testdata || true
