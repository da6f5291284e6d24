"""Write an accepted service beside a record of where it came from."""

from __future__ import annotations

import hashlib
import json
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from compoenv.synthesis.loop import Synthesis

__all__ = ["provenance", "write_accepted"]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _compoenv_version() -> str:
    try:
        return version("compoenv")
    except PackageNotFoundError:
        return "unknown"


def provenance(synthesis: Synthesis) -> dict[str, Any]:
    """Who wrote the service and how it was verified: model, endpoint, rounds, timestamps,
    the spec's and the code's sha256, and the final verify report."""
    last = synthesis.rounds[-1] if synthesis.rounds else None
    result = last.result if last else None
    return {
        "service": synthesis.service,
        "spec": {"path": synthesis.spec_path,
                 "sha256": _sha256(Path(synthesis.spec_path).read_bytes())},
        "model": synthesis.model,
        "base_url": synthesis.base_url,
        "rounds": len(synthesis.rounds),
        "started": synthesis.started,
        "finished": synthesis.finished,
        "accepted": synthesis.accepted,
        "code_sha256": _sha256(synthesis.code.encode("utf-8")) if synthesis.code else None,
        "verify": result.report if result else None,
        "history": [{"round": r.number, "seconds": round(r.seconds, 2),
                     "reasons": r.reasons} for r in synthesis.rounds],
        "compoenv": _compoenv_version(),
    }


def write_accepted(synthesis: Synthesis, out_dir: str | Path) -> tuple[Path, Path]:
    """Write ``<out>/<service>.py`` and ``<out>/<service>.provenance.json``.

    Raises:
        ValueError: the synthesis was not accepted (nothing is written).
    """
    if not synthesis.accepted:
        raise ValueError(f"{synthesis.service}: not accepted, nothing to write")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    code_path = out / f"{synthesis.service}.py"
    record_path = out / f"{synthesis.service}.provenance.json"
    code_path.write_text(synthesis.code, encoding="utf-8")
    record_path.write_text(json.dumps(provenance(synthesis), indent=2) + "\n", encoding="utf-8")
    return code_path, record_path
