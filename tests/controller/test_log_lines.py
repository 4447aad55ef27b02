"""Every line the controller prints is one JSON object: no Python warning reaches stderr as raw
text, neither at import (a dependency's deprecation of something the code names) nor later (the
JSON handler takes the ``warnings`` module's output)."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
import textwrap
import warnings

from titanium_gateway.controller.logging import setup_logging

#: every module the controller and the CLI load, imported the way ``titanium-gateway`` does
ENTRY_MODULES = ("titanium_gateway.cli", "titanium_gateway.controller.main", "titanium_gateway.controller.wiring",
                 "titanium_gateway.render", "titanium_gateway.render.certificates", "titanium_gateway.offline.render_cmd")


def test_importing_the_controller_and_cli_prints_no_warning() -> None:
    code = "\n".join(f"import {m}" for m in ENTRY_MODULES)
    proc = subprocess.run([sys.executable, "-W", "always", "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == "", proc.stderr


def test_certificates_names_no_deprecated_key_class() -> None:
    """The cause of the CryptographyDeprecationWarning about DSA: naming ``dsa.DSAPrivateKey``
    at import. With a ``dsa`` module that warns on any attribute read (as newer cryptography
    releases do for DSA), importing the render must not touch it."""
    code = textwrap.dedent("""
        import sys, types, warnings
        import cryptography.hazmat.primitives.asymmetric.dsa as real
        import cryptography.hazmat.primitives.serialization.pkcs12  # (its own imports are the library's)

        class Warning_(types.ModuleType):
            def __getattribute__(self, name):
                if not name.startswith("__"):
                    warnings.warn(f"DSA is deprecated ({name})", DeprecationWarning, stacklevel=2)
                return getattr(real, name)

        sys.modules["cryptography.hazmat.primitives.asymmetric.dsa"] = Warning_("dsa")
        import cryptography.hazmat.primitives.asymmetric as pkg
        pkg.dsa = sys.modules["cryptography.hazmat.primitives.asymmetric.dsa"]
        warnings.simplefilter("error")
        import titanium_gateway.render.certificates
        import titanium_gateway.render
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr


def test_a_warning_after_logging_starts_is_a_json_line() -> None:
    buf = io.StringIO()
    handler = setup_logging(stream=buf)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            logging.captureWarnings(True)  # (pytest's catch_warnings replaced the hook setup_logging set)
            warnings.warn("something is deprecated", DeprecationWarning, stacklevel=1)
    finally:
        logging.captureWarnings(False)
        logging.getLogger().removeHandler(handler)
    (line,) = [json.loads(x) for x in buf.getvalue().splitlines()]
    assert line["level"] == "warning" and line["logger"] == "py.warnings"
    assert "something is deprecated" in line["msg"]
