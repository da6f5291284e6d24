"""``compoenv eval``: a model played on a task set k times, streamed to disk and summarised
(``metrics``: pass rate, pass@k, pass^k, breakdowns, noise floor)."""

from compoenv.evaluation.metrics import pass_at_k, pass_hat_k, summarize
from compoenv.evaluation.run import evaluate

__all__ = ["evaluate", "pass_at_k", "pass_hat_k", "summarize"]
