"""Importers: OpenAPI documents and MCP tools/list results become valid, composable specs."""

from __future__ import annotations

import json
import re
import string
from pathlib import Path
from typing import Any

import click
import jsonschema
import pytest
from click.testing import CliRunner

from compoenv.cli.importing import import_
from compoenv.compose.render import noun
from compoenv.compose import Composer, ComposerConfig
from compoenv.registry import Registry
from compoenv.schema import inline_refs
from compoenv.world import World
from compoenv.worldmodel import SimulatedService, SpecError, service_from_spec, validate_spec
from compoenv.worldmodel.store import naming_a_record, stateful_tools
from compoenv.importers import (
    from_mcp, from_openapi, infer_interface, mcp_spec, openapi_spec, snake)

FIXTURES = Path(__file__).parent / "fixtures"
PETSTORE, TOOLS = FIXTURES / "petstore_openapi.json", FIXTURES / "mcp_tools_list.json"


def load(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def petstore() -> dict[str, Any]:
    return from_openapi(load(PETSTORE))


@pytest.fixture(scope="module")
def helpdesk() -> dict[str, Any]:  # the MCP fixture: a ticketing system
    return from_mcp(load(TOOLS), name="helpdesk", domain="support")


def tools(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The spec's tools by name, shared schemas ($defs) inlined."""
    return {t["name"]: inline_refs(t, spec.get("$defs", {})) for t in spec["tools"]}


def interfaces(schema: dict[str, Any]) -> dict[str, str]:
    return {k: v["x-interface"] for k, v in schema.get("properties", {}).items()
            if "x-interface" in v}


def named_in_phrase(tool: dict[str, Any]) -> bool:
    fields = {f for _, f, _, _ in string.Formatter().parse(tool["phrase"]) if f}
    return fields == set(tool["parameters"].get("required", ()))


def test_snake_case_names():
    assert [snake(n) for n in ("getPetById", "HTTPServerError", "assign-ticket", "2fa code")] == [
        "get_pet_by_id", "http_server_error", "assign_ticket", "x_2fa_code"]
    assert snake("a_very_long_name " * 10, 40) == "a_very_long_name_a_very_long_name_a_very"


@pytest.mark.parametrize("name, kind, fmt, hint, expected", [
    (*row.split(), None)[:5] for row in (
        "email string - - EmailAddress", "contact string email - EmailAddress",
        "ownerPhone string - - PhoneNumber", "city string - - City", "dueDate string - - Date",
        "since string date - Date", "createdAt string date-time - DateTime",
        "homepage string uri - Url", "price number - - Money", "price integer - -",
        "quantity integer - - Quantity", "quantity number - -", "name string - person PersonName",
        "name string - -", "name string - org OrganizationName",
        "company string - - OrganizationName", "email_id string - -", "updated string - -",
        "full_name string - - PersonName", "pet_name string - person")])
def test_interface_heuristics(name, kind, fmt, hint, expected):
    assert infer_interface(name, kind, None if fmt == "-" else fmt, hint.strip("-")) == expected


def test_openapi_fixture_tools_flags_and_parameters(petstore):
    assert validate_spec(petstore) == petstore and petstore["name"] == "petstore_clinic"
    found = tools(petstore)
    reads = {"list_pets", "get_pet_by_id", "find_owner_by_email", "list_owner_pets",
             "list_appointments", "list_vets", "get_clinic_hours"}  # the last: no operationId
    assert set(found) == reads | {"add_pet", "delete_pet", "upload_pet_photo", "create_owner",
                                  "update_owner_contact", "book_appointment", "pay_appointment"}
    assert {n for n, t in found.items() if t["read_only"]} == reads
    assert found["delete_pet"]["returns"] == {"type": "object"}  # 204: nothing to return
    pet = found["get_pet_by_id"]["parameters"]  # path parameter via $ref, and a header
    assert pet["additionalProperties"] is False and pet["required"] == ["pet_id"]
    assert pet["properties"]["pet_id"] == {  # a path id: the key of a pet, to join lists of pets
        "type": "integer", "minimum": 1, "description": "The pet's id.", "x-key": "pet"}
    assert "x_request_id" not in pet["properties"]  # transport noise
    assert "authorization" not in found["delete_pet"]["parameters"]["properties"]
    add = found["add_pet"]["parameters"]  # requestBody via $ref; readOnly id left out
    assert list(add["properties"]) == ["name", "species", "breed", "birth_date", "owner_id",
                                       "microchip"]
    assert add["required"] == ["name", "species"] and "enum" in add["properties"]["species"]
    book = found["book_appointment"]["parameters"]  # writeOnly callback_url: an input only
    assert book["required"] == ["owner_email", "date", "reason"] and "callback_url" in book[
        "properties"]
    assert list(found["list_pets"]["parameters"]["properties"]) == ["species", "limit"]
    assert list(found["upload_pet_photo"]["parameters"]["properties"]) == ["pet_id", "caption"]


def test_openapi_returns_interfaces_and_phrases(petstore):
    found = tools(petstore)
    owner = found["find_owner_by_email"]
    assert interfaces(owner["parameters"]) == {"email": "EmailAddress"}
    assert interfaces(owner["returns"]) == {  # allOf merged
        "name": "PersonName", "email": "EmailAddress", "phone": "PhoneNumber", "city": "City",
        "website": "Url", "memberSince": "Date"}
    assert set(owner["returns"]["required"]) == {"id", "name", "email", "phone", "city"}
    appointment = found["book_appointment"]["returns"]
    assert interfaces(appointment) == {"ownerEmail": "EmailAddress", "date": "Date",
                                       "price": "Money", "createdAt": "DateTime"}
    assert interfaces(appointment["properties"]["vet"]) == {"fullName": "PersonName",
                                                            "city": "City"}
    assert "callbackUrl" not in appointment["properties"]  # writeOnly
    pets = found["list_pets"]["returns"]
    assert pets["type"] == "array" and pets["maxItems"] == 20
    assert interfaces(pets["items"]) == {"birthDate": "Date"}  # a pet's name is no PersonName
    assert interfaces(found["pay_appointment"]["returns"]) == {
        "amount": "Money", "currency": "CurrencyCode", "paidAt": "DateTime"}
    text = json.dumps(petstore["tools"])  # constraints the offline world model cannot satisfy
    assert '"pattern"' not in text and '"format"' not in text
    assert all(named_in_phrase(t) for t in petstore["tools"])
    assert found["find_owner_by_email"]["phrase"] == "find the owner for {email}"  # summary
    assert found["get_pet_by_id"]["phrase"] == "get one pet for pet id {pet_id}"
    assert found["book_appointment"]["phrase"] == \
        "book a vet appointment for {owner_email} with date {date} and reason {reason}"
    text = "\n".join(openapi_spec(load(PETSTORE))[1])  # warnings: what was skipped
    assert "$.paths['/appointments'].post: callbacks" in text and "file upload 'file'" in text
    assert "oneOf of objects" in text and "/payment" in text


def _doc(paths: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.1.0", "info": {"title": "Tiny API", "version": "1"}, "paths": paths,
            **extra}


def test_openapi_clashes_31_types_recursion_and_max_tools():
    ref = {"$ref": "#/components/schemas/N"}
    get = {"responses": {"200": {"content": {"application/json": {"schema": ref}}}}}
    doc = _doc({"/items/{id}": {"put": {
        "parameters": [{"name": "id", "in": "path", "schema": {"type": "string"}},
                       {"name": "note", "in": "query", "schema": {"type": ["string", "null"]}}],
        "requestBody": {"required": True, "content": {"application/json": {"schema": {
            "type": "object", "required": ["id", "note"],
            "properties": {"id": {"type": "integer"}, "note": {"type": "string"},
                           "price": {"type": "number", "exclusiveMinimum": 0}}}}}}}},
                **{f"/nodes{i}": {"get": get} for i in range(4)}},
               components={"schemas": {"N": {"properties": {"kids": {"items": ref}}}}})
    spec, warnings = openapi_spec(doc, name="Tiny Shop", domain="commerce", max_tools=3)
    assert (spec["name"], spec["domain"], len(spec["tools"])) == ("tiny_shop", "commerce", 3)
    tool = spec["tools"][0]
    assert tool["name"] == "put_items_by_id" and tool["read_only"] is False
    props = tool["parameters"]["properties"]
    assert list(props) == ["id", "note", "body_id", "body_note", "price"]  # clashes prefixed
    assert props["note"] == {"type": "string"}
    assert props["price"] == {"type": "number", "minimum": 0, "x-interface": "Money",
                              "x-role": "price"}  # the role read from the name
    assert tool["parameters"]["required"] == ["id", "body_id", "body_note"]
    # a recursive schema stays shared, and is cut to a plain object where it recurs on loading
    assert spec["tools"][1]["returns"]["properties"]["kids"]["items"] == {"$ref": "#/$defs/N"}
    assert spec["$defs"] == {"N": {"type": "object", "properties": {"kids": {
        "type": "array", "items": {"$ref": "#/$defs/N"}}}}}
    returns = service_from_spec(spec, SimulatedService).tool_specs()["get_nodes0"].returns
    kids = returns["properties"]["kids"]["items"]["properties"]["kids"]
    assert kids == {"type": "array", "items": {"type": "object"}}
    assert warnings == ["5 operations; only the first 3 imported"]


def _listing(schema: dict[str, Any], **components: Any) -> dict[str, Any]:
    """A document whose one GET answers ``schema``."""
    return _doc({"/subscriptions/{subscriptionId}/vaults": {"get": {
        "operationId": "Vaults_List",
        "parameters": [{"name": "subscriptionId", "in": "path", "required": True,
                        "schema": {"type": "string"}}],
        "responses": {"200": {"content": {"application/json": {"schema": schema}}}}}}},
        components={"schemas": components})


VAULT = {"type": "object", "properties": {"id": {"type": "string"}, "name": {"type": "string"},
                                          "createdAt": {"type": "string", "format": "date-time"}}}


@pytest.mark.parametrize("envelope", [
    {"value": {"type": "array", "items": {"$ref": "#/components/schemas/Vault"}},
     "nextLink": {"type": "string"}},
    {"items": {"type": "array", "items": {"$ref": "#/components/schemas/Vault"}},
     "kind": {"type": "string"}, "nextPageToken": {"type": "string"},
     "totalCount": {"type": "integer"}},
    {"Vaults": {"type": "array", "items": {"$ref": "#/components/schemas/Vault"}},
     "NextToken": {"type": "string"}},
])
def test_a_list_in_a_paging_envelope_is_imported_as_its_list(envelope):
    doc = _listing({"$ref": "#/components/schemas/VaultList"}, Vault=VAULT,
                   VaultList={"type": "object", "description": "Vaults of a subscription.",
                              "properties": envelope})
    spec, _ = openapi_spec(doc, name="vaults")
    returns = tools(spec)["vaults_list"]["returns"]
    assert returns["type"] == "array" and set(returns["items"]["properties"]) == {
        "id", "name", "createdAt"}
    loaded = service_from_spec(spec, SimulatedService).tool_specs()["vaults_list"]
    assert any(s.path == ("*", "createdAt") for s in loaded.outputs)  # items a pick orders
    # what the result is called comes from the resource, not the operation's name
    assert returns["x-noun"] == "vault" and noun(loaded) == "vault"


@pytest.mark.parametrize("envelope", [
    # a field of its own beside the list: the response is more than its list
    {"value": {"type": "array", "items": {"$ref": "#/components/schemas/Vault"}},
     "region": {"type": "string"}},
    # two lists: which one the records are is not for the importer to guess
    {"value": {"type": "array", "items": {"$ref": "#/components/schemas/Vault"}},
     "deleted": {"type": "array", "items": {"$ref": "#/components/schemas/Vault"}}},
    # a list of plain strings holds no records
    {"names": {"type": "array", "items": {"type": "string"}}, "nextLink": {"type": "string"}},
])
def test_a_response_with_more_than_a_paged_list_is_kept_whole(envelope):
    doc = _listing({"type": "object", "properties": envelope}, Vault=VAULT)
    spec, _ = openapi_spec(doc, name="vaults")
    returns = tools(spec)["vaults_list"]["returns"]
    assert returns["type"] == "object" and set(returns["properties"]) == set(envelope)


@pytest.mark.parametrize("path, op_id, reads", [
    ("/#X-Amz-Target=Vaults.ListVaults", "ListVaults", True),
    ("/#X-Amz-Target=Vaults.DescribeVault", "DescribeVault", True),
    ("/#X-Amz-Target=Vaults.BatchGetVaults", "BatchGetVaults", True),
    ("/#X-Amz-Target=Vaults.CreateVault", "CreateVault", False),
    ("/v1/{parent}/vaults:search", "vaults.search", True),
    ("/v1/{name}:purge", "vaults.purge", False),
    ("/jobs/list", "ListJobs", True),
    ("/vaults", "ListVaults", False),  # a REST POST writes, whatever it is called
])
def test_an_rpc_style_post_named_for_reading_only_reads(path, op_id, reads):
    doc = _doc({path: {"post": {"operationId": op_id, "responses": {"200": {"content": {
        "application/json": {"schema": {"type": "object", "properties": {
            "id": {"type": "string"}}}}}}}}}})
    spec, _ = openapi_spec(doc, name="vaults")
    assert spec["tools"][0]["read_only"] is reads


def test_the_scopes_a_user_works_in_are_statable_and_stated_as_such_ids_look(tmp_path):
    """A subscription or resource group is the user's own (they say which), so a task may start
    at a tool that needs only those; an id of a thing of the API is not."""
    from compoenv.compose.values import fresh_value
    from compoenv.graph import ToolGraph
    from compoenv.interfaces import STATABLE
    import random

    doc = _doc({"/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/vaults": {
        "get": {"operationId": "Vaults_ListByResourceGroup", "parameters": [
            {"name": "subscriptionId", "in": "path", "required": True,
             "schema": {"type": "string"}},
            {"name": "resourceGroupName", "in": "path", "required": True,
             "schema": {"type": "string"}}],
            "responses": {"200": {"content": {"application/json": {"schema": {
                "type": "object", "properties": {"value": {"type": "array", "items": {
                    "$ref": "#/components/schemas/Vault"}}}}}}}}}},
        "/subscriptions/{subscriptionId}/resourceGroups/{resourceGroupName}/vaults/{vaultName}": {
            "patch": {"operationId": "Vaults_Update", "parameters": [
                {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                for name in ("subscriptionId", "resourceGroupName", "vaultName")],
                "responses": {"200": {"content": {"application/json": {
                    "schema": {"$ref": "#/components/schemas/Vault"}}}}}}}},
        components={"schemas": {"Vault": VAULT}})
    spec, _ = openapi_spec(doc, name="vaults")
    (tmp_path / "vaults.json").write_text(json.dumps(spec), encoding="utf-8")
    registry = Registry.from_paths(tmp_path)
    graph = ToolGraph(registry.signatures(), registry.related, registry.spec, registry.scope)
    listing = "vaults__vaults_list_by_resource_group"
    assert listing in graph.start_tools() and "vaults__vaults_update" not in graph.start_tools()
    info = registry.info("vaults")
    assert {"VaultsSubscriptionId", "VaultsResourceGroupId"} <= set(info.statable)
    assert "VaultsVaultId" not in STATABLE
    props = registry.spec(listing).parameters["properties"]
    rng, world = random.Random(3), World.get(0)
    subscription = fresh_value("subscription_id", props["subscription_id"], world, rng)
    group = fresh_value("resource_group_name", props["resource_group_name"], world, rng)
    assert re.fullmatch(r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", subscription)
    assert re.fullmatch(r"rg-[a-z]+-(prod|staging|dev)", group)
    # one task's user works in one subscription and one group, wherever the request says it
    assert fresh_value("subscription_id", props["subscription_id"], world,
                       random.Random(9)) == subscription
    assert fresh_value("resource_group_name", props["resource_group_name"], world,
                       random.Random(9)) == group
    # the simulated vaults of that group are named as a user names their resources
    from compoenv.session import Session

    session = Session.for_names(["vaults"], world, registry)
    found = session.call(listing, {"subscription_id": subscription,
                                   "resource_group_name": group})
    assert found["success"] and found["data"]
    assert all(re.fullmatch(r"vault-[a-z]+-\d+", v["name"]) for v in found["data"])


def _mcp(tools_list: Any, origin: str) -> dict[str, Any]:
    return from_mcp(tools_list, "broken", origin=origin)


@pytest.mark.parametrize("convert, document, message", [
    (from_openapi, {"swagger": "2.0", "paths": {}}, "not an OpenAPI 3 document (Swagger 2.0)"),
    (from_openapi, [1, 2], "not an OpenAPI 3 document (no 'openapi' field)"),
    (from_openapi, {"openapi": "3.0.0", "paths": {}}, "$.paths: no operations"),
    (from_openapi, _doc({"/pets": {"get": {"responses": {"200": {"content": {
        "application/json": {"schema": {"$ref": "#/components/schemas/Missing"}}}}}}}}),
     ("$.paths['/pets'].get.responses.200.content['application/json'].schema: cannot resolve "
      "$ref '#/components/schemas/Missing'")),
    (from_openapi, _doc({"/pets": {"get": {"parameters": [{"$ref": "other.yaml#/Limit"}]}}}),
     "$.paths['/pets'].get.parameters[0]: cannot resolve $ref 'other.yaml#/Limit'"),
    (_mcp, {"tools": []}, "not an MCP tools/list result"),
    (_mcp, [{"description": "no name"}], "$.tools[0]: a tool needs a string 'name'"),
    (_mcp, [{"name": "x", "inputSchema": {"type": "string"}}],
     "$.tools[0] (x).inputSchema: must be an object schema"),
    (_mcp, [{"name": "x", "inputSchema": {"properties": {"a": {"$ref": "#/$defs/A"}}}}],
     "$.tools[0] (x).inputSchema.properties.a: cannot resolve $ref '#/$defs/A'"),
])
def test_errors_name_the_file_and_path(convert, document, message):
    with pytest.raises(SpecError) as info:
        convert(document, origin="doc.json")
    assert str(info.value).startswith("doc.json: ") and message in str(info.value)


def test_mcp_fixture(helpdesk):
    assert validate_spec(helpdesk) == helpdesk and helpdesk["domain"] == "support"
    found = tools(helpdesk)
    assert list(found) == ["search_tickets", "get_ticket", "create_ticket", "update_ticket_status",
                           "assign_ticket", "add_comment", "list_agents", "get_customer_by_email"]
    assert {n for n, t in found.items() if t["read_only"]} == {  # annotations, else the verb
        "search_tickets", "get_ticket", "list_agents", "get_customer_by_email"}
    create = found["create_ticket"]["parameters"]
    assert create["required"] == ["subject", "requester_email", "priority"]
    assert interfaces(create) == {"requester_email": "EmailAddress", "requester_name": "PersonName",
                                  "due_date": "Date"}
    assert interfaces(create["properties"]["customer"]) == {  # $defs resolved
        "company": "OrganizationName", "city": "City", "plan_price": "Money"}
    assert list(found["get_ticket"]["parameters"]["properties"]) == ["ticket_id"]  # ticketId
    ticket = found["get_ticket"]["returns"]  # person-like objects: name -> PersonName
    assert interfaces(ticket["properties"]["requester"]) == {
        "name": "PersonName", "email": "EmailAddress", "phone": "PhoneNumber"}
    assert found["update_ticket_status"]["returns"] == {  # no outputSchema
        "type": "object", "properties": {"result": {"type": "string"}}, "required": ["result"]}
    assert all(named_in_phrase(t) for t in helpdesk["tools"])
    listed = [{"name": "getItem", "inputSchema": {"type": "object", "properties": {}}},
              {"name": "get_item", "description": "Fetch an item again."},
              {"name": "archive", "annotations": {"readOnlyHint": True}}]
    spec, warnings = mcp_spec(listed, name="Item Store")
    assert [t["name"] for t in spec["tools"]] == ["get_item", "get_item_2", "archive"]
    assert [t["read_only"] for t in spec["tools"]] == [True, True, True]
    assert spec["tools"][0]["description"] == "MCP tool getItem" and not warnings
    assert from_mcp({"jsonrpc": "2.0", "id": 1, "result": {"tools": listed}}, "item_store") == spec


def _value(name: str, schema: dict[str, Any], world: World) -> Any:
    """An argument for ``schema``: a World value for a tagged one, else a simple default."""
    who = world.people[1]
    tagged = {"PersonName": who.name, "EmailAddress": who.email, "PhoneNumber": who.phone,
              "City": world.cities[0].name, "Date": world.date(3), "DateTime": world.at(3, 10),
              "Url": "https://example.org/a", "Money": 12.5, "Quantity": 2, "CurrencyCode": "USD",
              "OrganizationName": who.employer, "CountryCode": who.country,
              "PostalCode": who.postal_code}
    if schema.get("x-interface") or "enum" in schema:
        return tagged[schema["x-interface"]] if "x-interface" in schema else schema["enum"][0]
    kind = schema.get("type")
    if kind == "object":
        return {k: _value(k, v, world) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [_value(name, schema.get("items", {}), world)]
    return {"integer": schema.get("minimum", 1), "number": 1.5, "boolean": True}.get(
        str(kind), f"{name} value")


@pytest.mark.parametrize("source", ["openapi", "mcp"])
def test_imported_services_answer_every_tool(source, petstore, helpdesk):
    spec = petstore if source == "openapi" else helpdesk
    cls = service_from_spec(spec, SimulatedService)
    service = cls(world := World(0))
    for tool in spec["tools"]:
        arguments = naming_a_record(service, tool["name"], {
            k: _value(k, v, world) for k, v in tool["parameters"]["properties"].items()})
        result = service.call(tool["name"], arguments)
        assert result["success"] is True, (tool["name"], result)
        # a world-model answer is marked; a CRUD tool's answer comes from the service's records
        assert bool(result.get("simulated")) is (tool["name"] not in stateful_tools(cls))
        jsonschema.validate(result["data"], cls.tool_specs()[tool["name"]].returns)


def test_imported_openapi_service_composes_with_builtin_services(petstore):
    imported = service_from_spec(petstore, SimulatedService)
    composer = Composer(Registry([*Registry.default(), imported]), ComposerConfig(
        services=(imported.name, "contacts", "email", "calendar"), min_services=2))
    tasks = [t for seed in (0, 1) for t in composer.generate(3, seed=seed)]
    using = [t for t in tasks if imported.name in t.services]
    assert using, f"no task used {imported.name}; rejections {dict(composer.rejections)}"
    assert all(len(t.services) >= 2 and any(c.name.startswith(imported.name + "__")
                                            for c in t.solution) for t in using)


CLI = click.Group("compoenv", commands=[import_])  # as compoenv.cli.main registers it


def invoke(*args: Any) -> Any:
    return CliRunner().invoke(CLI, ["import", *map(str, args)])


def test_cli_prints_or_writes_specs_from_json_or_yaml(tmp_path):
    result = invoke("openapi", PETSTORE, "--domain", "pets")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == from_openapi(load(PETSTORE), domain="pets")
    assert f"warning: {PETSTORE}: $.paths['/appointments'].post: callbacks" in result.stderr
    out = tmp_path / "specs" / "spec.json"
    result = invoke("mcp", TOOLS, "--name", "helpdesk", "--domain", "support", "-o", out)
    assert result.exit_code == 0 and load(out) == from_mcp(load(TOOLS), "helpdesk", "support")
    assert result.stdout == "" and "wrote helpdesk (8 tools)" in result.stderr
    assert invoke("mcp", TOOLS).exit_code == 2  # --name is required
    yaml = pytest.importorskip("yaml")
    source = tmp_path / "petstore.yaml"
    source.write_text(yaml.safe_dump(load(PETSTORE), sort_keys=False), encoding="utf-8")
    result = invoke("openapi", source, "--name", "pets", "-o", out)
    assert result.exit_code == 0 and load(out) == from_openapi(load(PETSTORE), name="pets")


def test_cli_broken_documents_fail_with_file_and_path(tmp_path):
    broken = load(PETSTORE)
    broken["paths"]["/pets"]["post"]["requestBody"]["content"]["application/json"]["schema"] = {
        "$ref": "#/components/schemas/Nope"}
    (source := tmp_path / "broken.json").write_text(json.dumps(broken), encoding="utf-8")
    result = invoke("openapi", source)
    assert result.exit_code == 1 and result.stdout == ""
    assert f"{source}: $.paths['/pets'].post.requestBody" in result.stderr
    assert "cannot resolve $ref '#/components/schemas/Nope'" in result.stderr
    (garbled := tmp_path / "garbled.json").write_text('{"openapi": "3.0.0",', encoding="utf-8")
    result = invoke("openapi", garbled)
    assert result.exit_code == 1 and f"{garbled}: invalid JSON at line 1" in result.stderr


# --- failure classes of real documents, and world models for what they import ---------------

HOTEL = FIXTURES / "importers" / "hotel_bookings_openapi.json"


@pytest.fixture(scope="module")
def hotel() -> tuple[dict[str, Any], list[str]]:
    return openapi_spec(load(HOTEL), origin=HOTEL.name)


def test_cycles_refs_into_lists_empty_alternatives_and_short_phrases_import(hotel):
    spec, warnings = hotel
    found = tools(spec)
    category = spec["$defs"]["Category"]  # Category allOf Node, Node holds Categories
    assert category["properties"]["children"]["items"] == {"$ref": "#/$defs/Category"}
    assert found["latest_booking"]["returns"]["properties"]["id"]["x-key"] == "booking"
    assert '"anyOf": []' not in json.dumps(spec) and '"oneOf"' not in json.dumps(spec)
    assert found["list_hotel_guests"]["parameters"]["properties"]["city"]["x-interface"] == \
        "City"  # a parameter by a pointer with a list index
    assert "phrase" not in found["up"] and "up: phrase 'up' too short; no phrase written" in \
        warnings  # a bad phrase is dropped, the document imports


@pytest.mark.parametrize("ref, message", [
    ("#/info/title", "cannot resolve $ref '#/info/title' (it points at a string)"),
    ("#/paths/~1a/get/parameters/7", "cannot resolve $ref '#/paths/~1a/get/parameters/7'"),
])
def test_a_reference_to_no_schema_names_what_it_found(ref, message):
    doc = _doc({"/a": {"get": {"parameters": [], "responses": {"200": {"content": {
        "application/json": {"schema": {"$ref": ref}}}}}}}})
    with pytest.raises(SpecError, match=re.escape(message)):
        openapi_spec(doc, origin="doc.json")


def test_shared_schemas_keep_a_spec_the_size_of_its_document():
    levels = 16  # each level holds two of the next: inlined, 2**16 copies of the last
    schemas = {f"L{i}": {"type": "object", "properties": {
        "a": {"$ref": f"#/components/schemas/L{i + 1}"},
        "b": {"$ref": f"#/components/schemas/L{i + 1}"}}} for i in range(levels)}
    schemas[f"L{levels}"] = {"type": "object", "properties": {"email": {"type": "string"}}}
    doc = _doc({"/tree": {"get": {"responses": {"200": {"content": {"application/json": {
        "schema": {"$ref": "#/components/schemas/L0"}}}}}}}}, components={"schemas": schemas})
    spec, _ = openapi_spec(doc)
    assert len(json.dumps(spec)) < 4 * len(json.dumps(doc))
    returns = service_from_spec(spec, SimulatedService).tool_specs()["get_tree"].returns
    assert len(json.dumps(returns)) < 1_000_000  # inlined on loading, within a bound


def test_a_document_past_the_size_bound_is_too_large_for_one_service():
    with pytest.raises(SpecError, match="too large for one service"):
        openapi_spec(load(HOTEL), origin=HOTEL.name, max_nodes=30)


def test_a_property_named_like_a_keyword_keeps_its_shared_schema():
    shared = {"$ref": "#/components/schemas/Fee"}
    doc = _doc({"/a": {"get": {"responses": {"200": {"content": {"application/json": {
        "schema": {"type": "object", "properties": {"default": shared, "enum": shared}}}}}}}}},
        components={"schemas": {"Fee": {"type": "object", "properties": {
            "amount": {"type": "number"}}}}})
    spec, _ = openapi_spec(doc)
    assert set(spec["$defs"]) == {"Fee"}
    returns = service_from_spec(spec, SimulatedService).tool_specs()["get_a"].returns
    assert returns["properties"]["default"]["properties"]["amount"]["x-interface"] == "Money"


def _returns(schemas: dict[str, Any], root: str = "Root") -> tuple[dict[str, Any], list[str]]:
    """The spec of a document whose one tool (``get_a``) returns ``schemas[root]``."""
    return openapi_spec(_doc({"/a": {"get": {"responses": {"200": {"content": {
        "application/json": {"schema": {"$ref": f"#/components/schemas/{root}"}}}}}}}},
        components={"schemas": schemas}), origin="doc.json")


def _ref(name: str, **siblings: Any) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}", **siblings}


@pytest.mark.parametrize("value", [
    # graphhopper: a described anyOf written as allOf parts (merged once, not again and again)
    {"allOf": [{"description": "The route."}, {"anyOf": [_ref("Line"), _ref("Root")]}]},
    # webflow: a list of values that may be lists of values (a nullable ref among scalars)
    _ref("List"),
    # Microsoft Graph: an entity that may hold another of its kind, or null
    {"anyOf": [_ref("Root"), {"type": "object", "nullable": True}]},
])
def test_a_schema_that_holds_itself_through_alternatives_imports(value):
    values = {"type": "array", "items": {"type": "object", "properties": {"value": {"anyOf": [
        {"type": "string"}, {"type": "number"}, _ref("List", nullable=True)]}}}}
    spec, _ = _returns({"Root": {"type": "object", "properties": {"value": value}},
                        "Line": {"type": "string"}, "List": values})
    assert service_from_spec(spec, SimulatedService).tool_specs()["get_a"].returns


def test_an_all_of_written_as_a_mapping_is_read_as_its_parts():
    # dnd5eapi: a YAML override leaves {"3": {...}} where the list of parts was
    spec, _ = _returns({"Root": {**_ref("Monster"), "allOf": {"3": {"properties": {
        "xp": {"type": "integer"}}}}}, "Monster": {"type": "object", "properties": {
            "name": {"type": "string"}}}})
    assert set(spec["tools"][0]["returns"]["properties"]) == {"name", "xp"}


def test_deep_nesting_is_cut_when_converting_and_loading():
    # Azure: every resource holds "properties" that hold resources: inline (each component used
    # once, cut while converting) and shared (each used twice, cut as the spec is loaded)
    depth, schemas = 40, {"Root": {"type": "object", "properties": {
        "inline": _ref("I0"), "shared": _ref("S0"), "again": _ref("S0")}}}
    for kind in "IS":
        schemas.update({f"{kind}{i}": {"type": "object", "properties": {"properties": {
            "type": "object", "properties": {"pools": {"type": "array", "items": {
                "type": "object", "properties": {"pool": _ref(f"{kind}{i + 1}")}}},
                "other": _ref(f"{kind}{i + 1}") if kind == "S" else {}}}}}
            for i in range(depth)})
        schemas[f"{kind}{depth}"] = {"type": "object", "properties": {"id": {"type": "string"}}}
    spec, warnings = _returns(schemas)
    assert any("nests deeper than" in w for w in warnings)
    returns = service_from_spec(spec, SimulatedService).tool_specs()["get_a"].returns
    assert returns["properties"]["shared"]["type"] == "object"


def test_described_references_stay_shared_and_long_descriptions_are_cut():
    # AWS: every field is a reference with xml and a page of description, used in two places
    note = "Set this to choose how the encoder handles the stream. " * 40
    field = {"allOf": [_ref("Codec"), {"xml": {"name": "codec"}, "description": note}]}
    spec, _ = _returns({"Root": {"type": "object", "properties": {"a": field, "b": field}},
                        "Codec": {"type": "object", "description": note, "properties": {
                            "rate": {"type": "integer", "enum": [48000, 96000]}}}})
    assert set(spec["$defs"]) == {"Codec"}
    assert spec["$defs"]["Codec"]["properties"]["rate"]["enum"] == [48000, 96000]
    assert all(len(d) <= 300 for d in re.findall(r'"description": "([^"]*)"', json.dumps(spec)))
