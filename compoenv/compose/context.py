"""The line of context a request opens with: who the user is and what they are doing.

A person writing to an assistant says what they are in the middle of ("I handle hiring at
Juniper Foods.") before the steps; the line comes from the domain of the service the request
starts in and names the user's employer from the World where the domain is work. Domains with
no line here (a user's own productivity tools) open with the request itself. Scenarios may
bring their own lines later; this table is the fallback every task has.
"""

from __future__ import annotations

import random

from compoenv.compose.labels import with_employer
from compoenv.world import Person

__all__ = ["CONTEXTS", "context_line"]

# domain -> lines; "{employer}" is the user's employer
CONTEXTS: dict[str, tuple[str, ...]] = {
    "hr": ("I handle hiring and payroll at {employer}.",
           "I'm sorting out some people matters at {employer} this week."),
    "business": ("I look after our customers at {employer}.",
                 "I'm catching up on accounts and sales at {employer} today."),
    "finance": ("I'm going through my finances this week.",
                "I'm sorting out some money matters today."),
    "travel": ("I'm planning a trip.", "I'm sorting out some travel plans."),
    "food": ("I'm planning a meal out.", "I'm looking for somewhere to eat."),
    "health": ("I'm taking care of some health errands this week.",),
    "marketing": ("I run marketing campaigns at {employer}.",
                  "I'm reviewing our marketing at {employer} this week."),
    "engineering": ("I'm catching up on code reviews at {employer}.",),
    "research": ("I'm doing some research.", "I'm reading up on a few things."),
    "housing": ("I'm looking at places to live.",),
    "commerce": ("I'm doing some shopping.",),
    "entertainment": ("I'm planning an evening out.",),
}


def context_line(domain: str, user: Person, seed: int) -> str | None:
    """The context line for a request starting in ``domain`` (None: the request alone reads
    well). Drawn from its own stream, so the walk's choices do not depend on it."""
    lines = CONTEXTS.get(domain)
    if not lines:
        return None
    line = random.Random(f"context:{seed}").choice(lines)
    return with_employer(line, user.employer)
