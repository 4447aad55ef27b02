"""Reading a config directory (the mounted ConfigMaps and Secret): ``twp.yaml`` and parts.

File names in the config are relative to the directory. The kubelet's projected volumes
make every name a symlink into ``..data/``, which it swaps atomically; each file is read
through its name, so a read sees either the old or the new volume. A part read across a swap
fails its sha256 check and the load is retried (:class:`~titanium_gateway.twp.load.PartNotReady`).
"""

from __future__ import annotations

import os
from pathlib import Path

from titanium_gateway.twp.load import ROOT_FILE, Config, load_config


def read_file(directory: str | os.PathLike[str], name: str) -> bytes | None:
    """The bytes of ``name`` in ``directory`` (None when it does not exist)."""
    try:
        return (Path(directory) / name).read_bytes()
    except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
        return None


def load_directory(directory: str | os.PathLike[str]) -> tuple[Config, bytes]:
    """(config, root bytes) of the directory; raises ConfigError / PartNotReady, and
    FileNotFoundError when there is no ``twp.yaml``."""
    root = read_file(directory, ROOT_FILE)
    if root is None:
        raise FileNotFoundError(str(Path(directory) / ROOT_FILE))
    return load_config(root, lambda name: read_file(directory, name)), root
