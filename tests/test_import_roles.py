"""Roles and joins of imported tools: resource ids join the tools of one API, transport noise is
left out, generic or wrong tags are not given, and the joins bench scores the importer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.joins import predict, score
from compoenv.graph import ToolGraph
from compoenv.importers import openapi_spec
from compoenv.importers.infer import infer_interface, is_noise, tag_field
from compoenv.importers.resources import Resources, path_key, record_field, resource_of
from compoenv.roles import AGNOSTIC
from compoenv.schema import Slot, key_slots
from compoenv.signature import ToolSignature
from compoenv.worldmodel import SimulatedService, service_from_spec

ROOT = Path(__file__).parent.parent
HOTEL = Path(__file__).parent / "fixtures" / "importers" / "hotel_bookings_openapi.json"


def hotel(**fields: Any) -> dict[str, Any]:
    spec, _ = openapi_spec(json.loads(HOTEL.read_text(encoding="utf-8")), origin=HOTEL.name)
    return {**spec, **fields}


def specs(spec: dict[str, Any]) -> dict[str, Any]:
    return service_from_spec(spec, SimulatedService).tool_specs()


@pytest.mark.parametrize("path, param, operation, expected", [
    ("/repos/{repo_id}", "repo_id", "", "repo"),
    ("/repos/{id}/issues", "id", "", "repo"),
    ("/repos/{owner}/{repo}", "repo", "", "repo"),
    ("/repos/{owner}/{repo}", "owner", "", "owner"),
    ("/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}", "resourceGroupName",
     "", "resource_group"),
    ("/storageAccounts/{accountName}/shares/{shareName}", "shareName", "", "share"),
    ("/locations/{loc}/capacityPools/{poolName}", "poolName", "", "capacity_pool"),
    ("/v1/Services/{ServiceSid}/Channels", "ServiceSid", "", "service"),
    ("/v1/{name}", "name", "firebaseml.projects.models.delete", "model"),
    ("/v2/tier1/{shortName}/photos", "shortName", "", None),  # a short name: of what?
    ("/reports/{year}", "year", "", None),
    ("/V1.0/ChecklistLibraries/{parentId}/ChecklistItems", "parentId", "", "checklist_library"),
    ("/v1/travelreimbursements/{guid}/pdf", "guid", "Pdf_GetTravelReimbursementPdf",
     "travel_reimbursement"),  # one word in the path, two in the operation id
    ("/v1/travelreimbursements/{guid}", "guid", "", "travelreimbursement"),
])
def test_a_path_parameter_holds_the_id_of_the_collection_before_it(path, param, operation,
                                                                   expected):
    assert path_key(path, param, operation) == expected


def test_a_parameter_that_names_no_collection_of_the_api_picks_one_of_the_path():
    assert path_key("/elements/{webId}", "webId", "", frozenset({"element"})) == "element"
    assert path_key("/elements/{teamId}", "teamId", "", frozenset({"element", "team"})) == "team"
    assert path_key("/activate/{sellerId}/{skuId}", "sellerId", "", frozenset({"activate"})) \
        == "seller"  # not the last parameter: no record of /activate it picks


def test_a_record_is_keyed_by_the_field_named_like_the_parameter_that_picks_it():
    assert record_field(["WebId", "Id", "Name"], "element", "web_id") == "WebId"
    assert record_field(["id", "name"], "repo", "repo") == "name"  # GitHub's {repo}: a name
    assert record_field(["id", "name"], "pet", "pet_id") == "id"


def test_an_operation_addresses_a_collection():
    assert resource_of("/repos/{owner}/{repo}/issues") == "issue"
    assert resource_of("/v1/policies/{policy_id}") == "policy"
    assert resource_of("/#X-Amz-Target=IoTFleetWise.GetCampaign", "GetCampaign") == "campaign"
    assert resource_of("/v3/{parent}/instances:list") == "instance"
    found = Resources.of({"/teams": {"get": {}}, "/teams/{slug}": {"get": {}}})
    assert found.collections == {"team"} and found.items == {"team": "slug"}  # by name
    assert found.key("home_team_id") == "team" and found.key("consent_id") is None


@pytest.mark.parametrize("name, place, description, noise", [
    ("X-Amz-Date", "header", "", True), ("x-ms-client-request-id", "header", "", True),
    ("Authorization", "header", "", True), ("page_token", "query", "", True),
    ("cursor", "query", "", True), ("api-version", "query", "", True),
    ("key", "query", "API key. Your API key identifies your project.", True),
    ("prettyPrint", "query", "", True), ("txnId", "body", "Used for tracking the request.", True),
    ("next_page_token", "response", "", True), ("limit", "response", "", True),
    ("limit", "query", "How many results", False), ("city", "query", "", False),
    ("limit", "response", "", True), ("total", "response", "", False),
    ("id", "response", "", False),
])
def test_transport_noise(name, place, description, noise):
    assert is_noise(name, place, description, ("meta",) if name == "limit" else ()) is noise


@pytest.mark.parametrize("parents, noise", [
    (("consentArtifact", "consent"), True), (("consent",), True), (("credentials",), True),
    (("signature",), True), (("order",), False), (("event", "schedule"), False),
])
def test_fields_of_a_request_s_authorisation_objects_are_noise(parents, noise):
    assert is_noise("timestamp", "body", "", parents) is noise
    assert is_noise("timestamp", "response", "", parents) is False  # a reply's record says it


@pytest.mark.parametrize("name, kind, fmt", [
    ("currency", "string", None), ("currencyCode", "string", None), ("url", "string", "uri"),
    ("link", "string", None), ("image_url", "string", "uri"), ("self", "string", "uri"),
    ("date", "string", "date"), ("timestamp", "string", "date-time"), ("city", "string", None),
    ("country", "string", None), ("email", "string", None), ("phone", "string", None),
])
def test_generic_slots_get_no_role_beyond_their_kind(name, kind, fmt):
    """A bare currency, link, date or city says nothing of what it is in the API: it gets no
    role, or only the role any value of its kind fills (any day, any city)."""
    tags = tag_field(name, kind, fmt)
    assert "x-interface" in tags
    assert tags.get("x-role") is None or tags["x-role"] in AGNOSTIC, tags


@pytest.mark.parametrize("name, kind, fmt, description, expected", [
    ("x_amz_date", "string", None, "", {}),  # a signing header, no Date a user means
    ("contact_list_name", "string", None, "", {}),  # a list's name, no PersonName
    ("customer_name", "string", None, "", {"x-interface": "PersonName", "x-role": "customer"}),
    ("DOB", "string", None, "", {"x-interface": "Date", "x-role": "birthday"}),
    ("hotel_name", "string", None, "", {"x-interface": "OrganizationName", "x-role": "hotel"}),
    ("createdAt", "string", None, "", {"x-interface": "DateTime", "x-role": "created",
                                       "x-label": "creation time"}),
    ("cc", "string", None, "A 2-character country code.", {"x-interface": "CountryCode"}),
    ("calling_country_code", "string", None, "", {}),
    ("tax_rate", "number", None, "", {}), ("addressLine1", "string", None, "",
                                          {"x-interface": "StreetAddress"}),
    ("project_id", "string", None, "", {"x-key": "project"}),
])
def test_fields_get_specific_tags_or_none(name, kind, fmt, description, expected):
    assert tag_field(name, kind, fmt, "", description) == expected


def test_interfaces_need_the_person_word_next_to_name():
    assert infer_interface("owner_name", "string") == "PersonName"
    assert infer_interface("owner_team_name", "string") == "OrganizationName"
    assert infer_interface("owner_list_name", "string") is None


def test_imported_ids_are_keyed_and_noise_left_out():
    tools = {t["name"]: t for t in hotel()["tools"]}
    assert list(tools["list_customers"]["parameters"]["properties"]) == ["city"]  # no token
    book = tools["book_stay"]["parameters"]["properties"]
    assert book["customer_id"] == {"type": "string", "x-key": "customer"}
    assert "x_amz_date" not in book and "idempotency_key" not in book
    search = tools["search_bookings"]["parameters"]["properties"]
    assert list(search) == ["customer_id", "check_in", "max_total"]  # no api-version, cursor
    assert search["customer_id"]["x-key"] == "customer"
    customer = hotel()["$defs"]["Customer"]["properties"]  # a record of GET /customers
    assert customer["id"] == {"type": "string", "x-key": "customer"}
    assert customer["name"]["x-role"] == "customer"  # a Customer's name is a customer's
    assert "x-interface" not in customer["contact_list_name"]


def test_keys_join_the_tools_of_one_api_and_never_two_apis():
    one = specs(hotel())
    producer = {s.interface for s in one["list_customers"].outputs}
    consumer = {s.interface for s in one["get_customer"].inputs}
    assert consumer == {"HotelBookingsApiCustomerId"} and consumer <= producer
    other = specs(hotel(name="other_hotels"))
    assert not consumer & {s.interface for s in other["list_customers"].outputs}
    split = specs(hotel(name="hotels.customers", api="hotels"))  # services split from one API
    assert {s.interface for s in split["get_customer"].inputs} == {"HotelsCustomerId"}
    graph = ToolGraph([ToolSignature.of(s) for s in one.values()])
    assert any(e.target.endswith("__get_customer") for e in graph.out_edges(
        one["list_customers"].qualified_name))


def test_key_slots_honour_x_key_by_api_and_keep_the_name_rule():
    schema = {"type": "object", "properties": {
        "repo": {"type": "integer", "x-key": "repo"}, "event_id": {"type": "string"}},
        "required": ["repo"]}
    assert key_slots(schema, "github_repos", api="github") == [
        Slot("GithubRepoId", ("repo",), True, "integer"),
        Slot("GithubReposEventId", ("event_id",), False, "string")]
    assert key_slots(schema, "github_repos")[0].interface == "GithubReposRepoId"


def test_joins_bench_scores_the_importer_against_labels():
    row = {"id": 0, "split": "dev", "api": "x", "method": "get", "path": "/repos/{repo_id}",
           "operation": "", "location": "path", "field": "repo_id", "field_path": ["repo_id"],
           "parent": "", "type": "string", "format": None, "enum": None, "description": "",
           "collections": ["repo"], "items": {},
           "label": {"interface": None, "role": None, "key": "repo", "noise": False}}
    assert predict(row) == {"interface": None, "role": None, "key": "repo", "noise": False}
    wrong = {**row, "label": {**row["label"], "key": "issue"}}
    result = score([row, wrong])
    assert (result["precision"], result["recall"]) == (0.5, 0.5)
    assert result["wrong"] == [{"id": 0, "field": "repo_id", "key": "repo", "label": "issue"}]
    proc = subprocess.run([sys.executable, "-m", "bench.joins", "--rows", "12"], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["rows"] == 12 and 0 <= out["precision"] <= 1
    assert set(out["per_kind"]) == {"interface", "role", "key", "noise"}


def test_joins_bench_leaves_untagged_what_the_importer_does_not_convert():
    """A request's read-only field (a record's own url) is not an input of the tool."""
    row = {"id": 1, "split": "dev", "api": "x", "method": "patch", "path": "/roles/",
           "operation": "", "location": "body", "field": "url", "field_path": ["url"],
           "parent": "Role", "type": "string", "format": "uri", "enum": None,
           "description": "", "collections": ["role"], "items": {}, "left_out": False}
    assert predict(row)["interface"] == "Url"
    assert predict({**row, "left_out": True}) == {"interface": None, "role": None, "key": None,
                                                  "noise": False}


@pytest.mark.parametrize("name, parents, noise", [
    ("nextPageLink", (), True), ("selfLink", ("metadata",), True), ("prev_url", (), True),
    ("next", ("_metadata",), True), ("first_page_href", (), True),
    ("url", (), False), ("website_url", (), False), ("link", ("item",), False),
    ("next_step_url", (), False),
])
def test_a_response_s_links_to_its_own_pages_are_paging_not_links(name, parents, noise):
    assert is_noise(name, "response", "", parents) is noise
