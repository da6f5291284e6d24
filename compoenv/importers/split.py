"""How an imported API becomes named services: a readable namespace for the API, and its
operations grouped by tag or path prefix into services of at most ``LIMIT`` tools, none dropped.

    github (92 operations, tags repos/issues/pulls/users) -> github.repos, github.issues, ...
    azure.com / sql-managedInstanceKeys (8 operations)    -> azure.sql_managed_keys
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import urlparse

from compoenv.importers.naming import snake, unique
from compoenv.worldmodel.spec import SpecError

__all__ = ["LIMIT", "SERVICE_MAX", "TOOL_MAX", "ApiName", "Operation", "group_operations",
           "fit", "host_label", "namespaces", "NothingToImport"]

LIMIT = 50  # tools per service, at most
SERVICE_MAX = 30  # characters of a service name, and of a tool name: "<service>__<tool>"
TOOL_MAX = 32  # fits OpenAI's 64 characters
SPLIT_API_MAX = 20  # a split API's namespace leaves room for ".<group>"
_SMALL = 3  # prefix groups smaller than this gather in "other"
_GENERIC = set("api apis rest restful openapi swagger client service services the a an of for "
               "documentation docs reference spec specification http https json web public "
               "interface".split())
_HOST_NOISE = set("www api apis developer developers dev app rest management gateway service "
                  "services platform portal".split())
_SHORT = {"amazonaws": "aws", "googleapis": "google"}  # providers better known shorter
_LINKS = {"with", "from", "to", "for", "by", "in", "on", "of", "and", "as", "at"}
_TLD2 = {"co", "com", "gov", "org", "net", "ac", "edu", "ne", "or", "go", "gob", "nic"}


class NothingToImport(SpecError):
    """A well-formed document that describes no operation (only webhooks, say): skipped."""


@dataclass(frozen=True)
class Operation:
    """An operation as the splitter sees it: its path and its tags."""

    path: str
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class ApiName:
    """What an API may be named after, most specific first (all may be empty)."""

    provider: str = ""  # APIs.guru info.x-providerName ("azure.com")
    service: str = ""  # info.x-serviceName ("sql-managedInstances")
    title: str = ""  # info.title
    host: str = ""  # the first server's URL
    version: str = ""  # info.version


def fit(words: str, limit: int) -> str:
    """A snake_case name of at most ``limit`` characters that keeps the first and last words
    (``sql_managed_instance_keys`` -> ``sql_managed_keys``), since the last word usually tells
    sibling APIs apart; middle words go first, then the name is cut by whole words."""
    parts = snake(words, 200).split("_")
    while len("_".join(parts)) > limit and len(parts) > 2:
        del parts[-2]
    return snake("_".join(parts), limit)


def host_label(host: str) -> str:
    """The distinctive label of a host or provider name: ``api.github.com`` -> ``github``,
    ``management.azure.com`` -> ``azure``, ``apisetu.gov.in`` -> ``apisetu``."""
    host = urlparse(host).hostname or "" if "//" in host else host.split("/")[0]
    labels = [x for x in host.lower().split(".") if x and not x.startswith("{")]
    if len(labels) > 1:
        labels.pop()
    if len(labels) > 1 and labels[-1] in _TLD2:
        labels.pop()
    kept = [x for x in labels if x not in _HOST_NOISE]
    label = (kept or labels or [""])[-1]
    return _SHORT.get(label, label)


def _title(title: str) -> str:
    """A title's distinctive words: ``SqlManagementClient`` -> ``sql_management``."""
    text = title.lower() if re.search(r"\s", title) else title  # "GitHub API": not git_hub
    words = [w for w in snake(text, 200).split("_") if w not in _GENERIC
             and not re.fullmatch(r"v?\d+", w) and w != "x"]
    return "_".join(words)


def _service_words(provider: str, service: str) -> str:
    """A service name without what the provider already says or generic words
    (``amadeus`` / ``amadeus-flight-search`` -> ``flight_search``; may leave nothing)."""
    if re.fullmatch(r"[\w-]+(\.[\w-]+)*\.[a-z]{2,}", service.lower()):  # a host name
        service = service.rsplit(".", 1)[0]  # api.github.com: github says it already
    words = snake(service, 200).split("_") if service.strip("-_ ") else []
    return "_".join(w for w in words if w not in _GENERIC and w not in provider.split("_"))


def _base(name: ApiName, limit: int) -> str:
    """The most readable namespace of at most ``limit`` characters."""
    provider = host_label(name.provider)
    if provider:
        head = fit(provider, min(16, limit)) if len(provider) > 16 else snake(
            provider, min(16, limit), prefix="api")
        room, service = limit - len(head) - 1, _service_words(head, name.service)
        rest = fit(service, room) if service and room >= 3 else ""
        return f"{head}.{rest}" if rest else head
    words = _title(name.title) or host_label(name.host) or "imported"
    return fit(snake(words, 200, prefix="api"), limit)


def _version(version: str) -> str:
    """``2018-11-29`` -> ``v2018_11_29``, ``v1.2`` -> ``v1_2``, ``beta`` -> ``beta``."""
    text = "_".join(re.findall(r"[a-z0-9]+", version.lower()))
    return snake(f"v{text}" if text[:1].isdigit() else text, 12) if text else ""


def namespaces(name: ApiName, split: bool) -> Iterator[str]:
    """Namespaces for an API in order of preference: the readable one, then with its version,
    then numbered; the importer takes the first that no earlier API holds."""
    limit = SPLIT_API_MAX if split else SERVICE_MAX
    yield _base(name, limit)
    if version := _version(name.version):
        yield f"{_base(name, limit - len(version) - 1)}_{version}"
    for n in range(2, 10_000):
        yield f"{_base(name, limit - len(str(n)) - 1)}_{n}"


def _segments(path: str) -> list[str]:
    return [s for s in path.split("/") if s]


def _by_prefix(ops: list[Operation], members: list[int]) -> dict[str, list[int]]:
    """Members grouped by the first distinctive, non-parameter path segment after the prefix
    all of them share (``/repos/{owner}/{repo}/issues`` -> ``issues`` within ``/repos``)."""
    paths = [_segments(ops[i].path) for i in members]
    common = 0
    while all(len(p) > common and p[common] == paths[0][common] for p in paths):
        common += 1
    out: dict[str, list[int]] = {}
    for i, segments in zip(members, paths):
        rest = [s for s in segments[common:] if not s.startswith("{")]
        key = rest[0] if rest else (segments[common - 1] if common and not segments[
            common - 1].startswith("{") else "root")
        out.setdefault(_key(key), []).append(i)
    return out


def _key(segment: str) -> str:
    """A group's name from a path segment; an RPC target (``#X-Amz-Target=Svc.ListSkills``)
    names the object it acts on: the words after the verb, up to a preposition (``skill``,
    ``internet_gateway`` from ``DescribeInternetGateways``)."""
    if "=" not in segment:
        return snake(segment.split(".")[-1], 20, prefix="g")
    words = snake(segment.split("=")[-1].split(".")[-1], 200, prefix="g").split("_")
    rest = words[1:] or words
    cut = next((i for i, w in enumerate(rest) if w in _LINKS), len(rest))
    words = rest[:max(cut, 1)][:2]
    last = words[-1]
    words[-1] = last[:-1] if last.endswith("s") and not last.endswith("ss") and len(
        last) > 3 else last
    return "_".join(words)


def _by_tag(ops: list[Operation], members: list[int]) -> dict[str, list[int]] | None:
    """Members grouped by their first tag, when tags partition the API well: every operation
    tagged, at least two tags, no tag holding nearly everything, groups not mostly tiny."""
    if not all(ops[i].tags for i in members):
        return None
    out: dict[str, list[int]] = {}
    for i in members:
        out.setdefault(snake(ops[i].tags[0], 20, prefix="g"), []).append(i)
    largest = max(len(v) for v in out.values())
    if len(out) < 2 or largest > 0.9 * len(members) or len(members) < _SMALL * len(out):
        return None
    return out


def _gather_small(groups: dict[str, list[int]]) -> dict[str, list[int]]:
    """Groups of fewer than ``_SMALL`` operations merged into one "other" group."""
    small = [k for k, v in groups.items() if len(v) < _SMALL]
    if len(small) < 2:
        return groups
    out = {k: v for k, v in groups.items() if k not in small}
    out.setdefault("other", []).extend(i for k in small for i in groups[k])
    return out


def _split(ops: list[Operation], members: list[int], name: str, limit: int,
           depth: int = 0) -> list[tuple[str, list[int]]]:
    """``members`` (a group called ``name``) in parts of at most ``limit``, by sub-prefix, and
    in numbered chunks when paths no longer tell them apart."""
    if len(members) <= limit:
        return [(name, members)]
    parts = _gather_small(_by_prefix(ops, members)) if depth < 4 else {}
    if len(parts) < 2:
        return [(name if n == 0 else f"{name}_{n // limit + 1}", members[n:n + limit])
                for n in range(0, len(members), limit)]
    return [part for key, sub in sorted(parts.items()) for part in _split(
        ops, sub, f"{name}_{key}" if name else key, limit, depth + 1)]


def group_operations(ops: list[Operation], limit: int = LIMIT) -> list[tuple[str, list[int]]]:
    """The services an API's operations make: ``[(group, indices)]``, every operation in
    exactly one group, each group at most ``limit`` operations, in a stable order; one group
    named ``""`` when the API fits in one service.

    Args:
        ops: The API's operations, in document order.
        limit: Tools per service, at most.
    """
    members = list(range(len(ops)))
    if len(ops) <= limit:
        return [("", members)]
    groups = _by_tag(ops, members) or _gather_small(_by_prefix(ops, members))
    if len(groups) < 2:
        return _split(ops, members, "part", limit)
    parts = [part for key, sub in sorted(groups.items()) for part in _split(ops, sub, key, limit)]
    taken: set[str] = set()
    return [(unique(fit(key, 20), taken, 20), sorted(sub)) for key, sub in parts]
