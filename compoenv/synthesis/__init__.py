"""Services from specs: a coding model writes them, the sandbox verifies them, feedback repairs.

    from compoenv.llm import ChatClient, EndpointConfig
    from compoenv.synthesis import synthesize, write_accepted
    result = synthesize("specs/crm.json", ChatClient(EndpointConfig(base_url, model)))
    if result.accepted:
        write_accepted(result, "my_library/")
"""

from __future__ import annotations

from compoenv.synthesis.loop import Round, Synthesis, SynthesisError, extract_code, synthesize
from compoenv.synthesis.provenance import provenance, write_accepted
from compoenv.synthesis.sandbox import Limits, SandboxResult, SandboxUnavailable, verify_sandboxed

__all__ = ["synthesize", "Synthesis", "Round", "SynthesisError", "extract_code",
           "write_accepted", "provenance", "Limits", "SandboxResult", "SandboxUnavailable",
           "verify_sandboxed"]
