"""compoenv agent for OpenRLHF: pass this file as ``--train.agent_func_path rl/openrlhf_agent.py``.

OpenRLHF loads it with ``importlib.util.spec_from_file_location`` on every vLLM engine and calls
``AgentExecutor()``; settings come from COMPOENV_* environment variables (see
``compoenv.integrations.openrlhf``), so compoenv must be installed where the engines run.
"""

from __future__ import annotations

from compoenv.integrations.openrlhf import AgentExecutor, AgentInstance

__all__ = ["AgentExecutor", "AgentInstance"]
