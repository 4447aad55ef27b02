"""Images as local programs.

There is no container runtime: an image is a local program, named in the runner's image map
(YAML)::

    variables: {bin: .cache/conformance/bin}        # more come from --var NAME=VALUE
    images:
      - match: "registry.k8s.io/gateway-api/echo-basic:*"      # fnmatch on the pod's image
        entrypoint: ["{bin}/echo-basic"]             # the image's ENTRYPOINT
        cmd: []                                      # its CMD
        path:                                        # executables on the image's PATH
          titanium-gateway: ["{python}", "-m", "titanium_gateway"]
        env: {PYTHONPATH: "{root}"}                  # the image's ENV (the pod's env wins)
        network: own                                 # own (a netns per pod) | shared
        listens: [3000]                              # started once these TCP ports accept

The argv is Docker's: the pod's ``command`` replaces the entrypoint, its ``args`` replace the
CMD (a ``command`` alone drops the CMD). Its first word must be the entrypoint's own program,
a name in ``path`` (replaced by that prefix) or an absolute path the map lists; anything else is
"not found in the image" (the container cannot start), so a pod never runs a host program the
map did not name. ``{python}`` is this interpreter, ``{root}`` the repository root.
"""

from __future__ import annotations

import fnmatch
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ImageError(Exception):
    """The image cannot run (not mapped, or its command is not part of it)."""


def _subst(value: str, variables: Mapping[str, str]) -> str:
    try:
        return value.format_map(dict(variables))
    except KeyError as e:
        raise ValueError(f"image map: unknown variable {e} in {value!r}") from e


@dataclass
class Image:
    match: str
    entrypoint: list[str] = field(default_factory=list)
    cmd: list[str] = field(default_factory=list)
    path: dict[str, list[str]] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    network: str = "own"
    listens: list[int] = field(default_factory=list)

    def argv(self, container: Mapping[str, Any]) -> list[str]:
        command = list(container.get("command") or [])
        args = list(container.get("args") or [])
        if command:
            argv = command + args
        else:
            argv = list(self.entrypoint) + (args if args else list(self.cmd))
        if not argv:
            raise ImageError(f"image {container.get('image')!r}: no command to run")
        head = argv[0]
        if head in self.path:
            return list(self.path[head]) + argv[1:]
        if self.entrypoint and head == self.entrypoint[0]:
            return argv
        raise ImageError(f'exec: "{head}": executable file not found in the image {container.get("image")!r}')


class ImageMap:
    def __init__(self, images: list[Image]) -> None:
        self.images = images

    @classmethod
    def load(cls, path: str, variables: Mapping[str, str] | None = None) -> ImageMap:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh) or {}
        return cls.from_dict(doc, variables, base=os.path.dirname(os.path.abspath(path)))

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], variables: Mapping[str, str] | None = None,
                  base: str = ROOT) -> ImageMap:
        vs: dict[str, str] = {"python": sys.executable, "root": ROOT}
        for k, v in (doc.get("variables") or {}).items():
            vs[k] = _subst(str(v), vs)
            if not os.path.isabs(vs[k]) and ("/" in vs[k] or vs[k].startswith(".")):
                vs[k] = os.path.normpath(os.path.join(ROOT, vs[k]))
        vs.update(variables or {})
        images = []
        for raw in doc.get("images") or []:
            network = raw.get("network", "own")
            if network not in ("own", "shared"):
                raise ValueError(f"image map: network must be own or shared, not {network!r}")
            images.append(Image(
                match=str(raw["match"]),
                entrypoint=[_subst(str(a), vs) for a in raw.get("entrypoint") or []],
                cmd=[_subst(str(a), vs) for a in raw.get("cmd") or []],
                path={str(k): [_subst(str(a), vs) for a in v] for k, v in (raw.get("path") or {}).items()},
                env={str(k): _subst(str(v), vs) for k, v in (raw.get("env") or {}).items()},
                network=network,
                listens=[int(p) for p in raw.get("listens") or []],
            ))
        return cls(images)

    def find(self, image: str) -> Image:
        for candidate in self.images:
            if fnmatch.fnmatchcase(image, candidate.match):
                return candidate
        raise ImageError(f"no program for image {image!r} (the pod runner's image map does not list it)")
