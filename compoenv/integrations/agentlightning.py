"""Agent Lightning: a LitAgent that plays a compoenv episode with the trainer's LLM resource and
emits the rubric score as the rollout's reward event.

    import agentlightning as agl
    from compoenv.integrations.agentlightning import CompoenvAgent, task_rows

    trainer = agl.Trainer(algorithm=agl.VERL(config), n_runners=8)
    trainer.fit(CompoenvAgent(), train_dataset=task_rows(tasks))

Each dataset item is ``{"task": <task JSON>}`` (``task_rows``). The agent reads the LLM
resource (``main_llm`` by default; a ``ProxyLLM`` gives each attempt its own URL, so the
trainer's proxy records the tokens), plays the episode through compoenv's async runner, emits
the rubric score with ``agl.emit_reward`` (``rubric_score`` the primary key, with ``passed`` and
``net_score``) and returns None: the reward span is the rollout's reward.
"""

from __future__ import annotations

from typing import Literal

try:
    import agentlightning as agl
except ImportError as exc:  # an optional extra: name it
    raise ImportError("compoenv.integrations.agentlightning needs Agent Lightning: "
                      "pip install 'compoenv[agentlightning]'") from exc

from compoenv.integrations.episodes import play_task, row_task, task_rows

__all__ = ["CompoenvAgent", "task_rows"]


class CompoenvAgent(agl.LitAgent[dict]):
    """Plays the item's compoenv task with the LLM resource; its reward is the rubric score.

    Args:
        llm: The name of the LLM resource to use.
        mode: ``direct`` (the task's tools) or ``gateway`` (four meta-tools).
        max_steps: Replies before the episode is cut off.
        tool_format: ``native`` tool calls, or ``hermes`` / ``qwen3_coder`` text calls.
    """

    def __init__(self, *, llm: str = "main_llm", mode: Literal["direct", "gateway"] = "direct",
                 max_steps: int = 30,
                 tool_format: Literal["native", "hermes", "qwen3_coder"] = "native") -> None:
        super().__init__()
        self.llm, self.mode, self.max_steps, self.tool_format = llm, mode, max_steps, tool_format

    def _resource(self, resources: agl.NamedResources, rollout: agl.Rollout) -> agl.LLM:
        resource = resources.get(self.llm)
        if not isinstance(resource, agl.LLM):
            raise ValueError(f"no LLM resource named {self.llm!r} (resources: "
                             f"{sorted(resources)}); pass CompoenvAgent(llm=<name>)")
        if isinstance(resource, agl.ProxyLLM) and isinstance(rollout, agl.AttemptedRollout):
            return resource.with_attempted_rollout(rollout)  # this attempt's own URL
        return resource

    async def rollout_async(self, task: dict, resources: agl.NamedResources,
                            rollout: agl.Rollout) -> None:
        """One episode of ``task["task"]``; emits its reward span."""
        item = row_task(task, "compoenv.integrations.agentlightning.task_rows(tasks)")
        llm = self._resource(resources, rollout)
        record = await play_task(item, llm.get_base_url(), llm.model,
                                 api_key=llm.api_key or "EMPTY", mode=self.mode,
                                 max_steps=self.max_steps, tool_format=self.tool_format,
                                 sampling=llm.sampling_parameters, source="agentlightning")
        meta = record["meta"]
        agl.emit_reward({"rubric_score": float(meta["rubric_score"]),
                         "passed": float(meta["score"]), "net_score": float(meta["net_score"])},
                        primary_key="rubric_score")
        return None
