"""An imported tool's phrase starts from its operation's summary when that reads as a request."""

from __future__ import annotations

import pytest

from compoenv.importers.tools import spec_tool


def phrase(summary: str, required: bool = False, name: str = "op_name") -> str | None:
    entries = [("email", {"type": "string", "x-interface": "EmailAddress"}, True, "query")] \
        if required else []
    return spec_tool(name, summary, True, entries, {"type": "object"}, []).get("phrase")


@pytest.mark.parametrize("summary, expected", [
    ("Create Inbox Recipient", "create inbox recipient"),
    ("Lists the hooks of an organization.", "list the hooks of an organization"),
    ("Returns a list of SMS messages", "get a list of SMS messages"),
    ("List followers of the current user", "list followers of the current user"),
    ("getUser", "op name"),                                       # no sentence: the name
    ("This endpoint is deprecated, use another", "op name"),      # no request: the name
    ("Some words that run on far too long to be a request at all", "op name"),
    # the first clause of the first sentence; errors and copies are not the request
    ("Creates an attestor, and returns a copy of the new attestor. Returns NOT_FOUND if the "
     "project does not exist.", "create an attestor"),
])
def test_a_short_imperative_summary_is_the_request(summary: str, expected: str) -> None:
    assert phrase(summary) == expected


def test_a_keyed_request_names_its_value_after_the_summary_not_inside_it() -> None:
    assert phrase("Find the owner registered with an email address", True) == \
        "find the owner for {email}"
    assert phrase("Retrieve a GitHub repository by ID", True) == \
        "retrieve a GitHub repository for {email}"
    # what the split leaves hanging goes: "Creates a repo in the given project"
    assert phrase("Creates a repo in the given project with the given name.", True) == \
        "create a repo for {email}"
