"""Tests for compoenv.service: @tool, ToolSpec from type hints, validation, envelopes, copy-on-write."""

from __future__ import annotations

import json
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from compoenv import Service, State, ToolError, ToolSpec, World, tool
from compoenv.crud import get_or_404, next_id
from compoenv.interfaces import Contact, EmailAddress, PersonName
from compoenv.registry import Registry
from compoenv.service import ToolMeta, did_you_mean, error, ok, qualified_name, split_qualified


# --- tiny services --------------------------------------------------------------------------

class Note(BaseModel):
    id: str
    title: str
    body: str = ""
    tags: list[str] = []


class Notes(Service):
    """Tiny notebook for SDK tests.

    This second paragraph is not part of the service description.
    """

    name = "notes"
    domain = "testing"

    class State(State):
        notes: dict[str, Note] = {}

    def seed(self, world: World) -> Notes.State:
        return self.State(notes={"N-0001": Note(id="N-0001", title="Groceries", body="milk")})

    @tool(read_only=True, phrase="read note {note_id}")
    def get_note(self, note_id: str) -> Note:
        """Get a note by id.

        Longer explanation that is not the summary.

        Args:
            note_id: The note's id, like N-0001.
        """
        return get_or_404(self.state.notes, note_id, "note id")

    @tool
    def add_note(self, title: Annotated[str, Field(min_length=1, max_length=50)], body: str = "",
                 owner: EmailAddress | None = None, tags: list[str] = []) -> Note:
        """Add a note to the notebook.

        Args:
            title: Short title of the note,
                shown in listings.
            body: Free text.
            owner: Who owns the note.
            tags: Labels.
        """
        if any(n.title == title for n in self.state.notes.values()):
            raise ToolError(409, f"A note titled {title!r} already exists")
        note = Note(id=next_id("N-", self.state.notes), title=title, body=body, tags=tags)
        self.state.notes[note.id] = note
        return note

    @tool
    def retitle(self, note_id: str, title: str) -> Note:
        """Change the title of a note in place."""
        note = get_or_404(self.state.notes, note_id, "note id")
        note.title = title
        return note


class Faulty(Service):
    """Tools that fail in every way a tool can fail."""

    name = "faulty"

    @tool(read_only=True)
    def crash(self, kind: str = "value") -> str:
        """Raise an unexpected exception."""
        errors = {"value": ValueError("bad value"), "key": KeyError("missing"),
                  "zero": ZeroDivisionError("division by zero"), "type": TypeError("oops")}
        raise errors[kind]

    @tool(read_only=True)
    def conflict(self) -> str:
        """Raise a 409."""
        raise ToolError(409, "calendar slot already taken")

    @tool(read_only=True)
    def unfinished(self) -> str:
        """Not implemented yet."""
        raise NotImplementedError("needs a payment gateway")

    @tool(read_only=True)
    def unfinished_quietly(self) -> str:
        raise NotImplementedError

    @tool(name="renamed_tool", read_only=True)
    def _impl(self, x: int) -> int:
        """A tool whose name differs from its method."""
        return x * 2


class People(Service):
    """Semantic-typed parameters and entity return values."""

    name = "people"

    @tool(read_only=True)
    def lookup(self, name: PersonName,
               email: Annotated[EmailAddress, Field(description="Work email")]) -> list[Contact]:
        """Look a person up.

        Args:
            name: Full name.
        """
        return []

    @tool(read_only=True)
    def best(self, contact: Contact) -> Contact | None:
        """Echo a contact."""
        return contact


class SeedCounter(Service):
    """Counts how often it is seeded."""

    name = "seed_counter"
    seeds = 0

    class State(State):
        value: int = 0

    def seed(self, world: World) -> SeedCounter.State:
        type(self).seeds += 1
        return self.State(value=world.seed)

    @tool(read_only=True)
    def read(self) -> int:
        """Read the value."""
        return self.state.value


@pytest.fixture
def world() -> World:
    return World(0)


@pytest.fixture
def notes(world: World) -> Notes:
    return Notes(world)


def walk_keys(node: Any, in_properties: bool = False) -> set[str]:
    """Every schema keyword in ``node`` (property names are not keywords)."""
    keys: set[str] = set()
    if isinstance(node, dict):
        for key, value in node.items():
            if not in_properties:
                keys.add(key)
            keys |= walk_keys(value, in_properties=(key == "properties" and not in_properties))
    elif isinstance(node, list):
        for item in node:
            keys |= walk_keys(item)
    return keys


# --- @tool ----------------------------------------------------------------------------------

def test_tool_without_arguments_returns_the_function_unchanged_with_default_meta():
    def fn(self) -> int:
        return 1

    marked = tool(fn)
    assert marked is fn
    assert fn.__compoenv_tool__ == ToolMeta()
    assert fn.__compoenv_tool__.read_only is False and fn.__compoenv_tool__.name is None


def test_tool_with_arguments_returns_the_function_unchanged_with_those_options():
    def fn(self) -> int:
        return 1

    marked = tool(read_only=True, simulated=True, name="other", phrase="do {x}")(fn)
    assert marked is fn
    assert fn.__compoenv_tool__ == ToolMeta(read_only=True, simulated=True, name="other",
                                            phrase="do {x}")


def test_tool_meta_is_frozen():
    with pytest.raises(AttributeError):
        ToolMeta().read_only = True  # type: ignore[misc]


def test_tool_rejects_unknown_options():
    with pytest.raises(TypeError):
        tool(readonly=True)


def test_decorated_method_stays_a_plain_method(notes: Notes):
    note = notes.get_note("N-0001")
    assert isinstance(note, Note) and note.title == "Groceries"
    with pytest.raises(ToolError) as exc:
        notes.get_note("N-9999")
    assert exc.value.code == 404


# --- ToolSpec -------------------------------------------------------------------------------

def test_tool_specs_lists_every_tool_by_unqualified_name():
    assert set(Notes.tool_specs()) == {"get_note", "add_note", "retitle"}
    assert all(isinstance(s, ToolSpec) for s in Notes.tool_specs().values())


def test_tool_specs_are_parsed_once_per_class():
    assert Notes.tool_specs() is Notes.tool_specs()


def test_spec_carries_names_flags_phrase_and_the_docstring_summary():
    spec = Notes.tool_specs()["get_note"]
    assert (spec.service, spec.name, spec.method) == ("notes", "get_note", "get_note")
    assert spec.qualified_name == "notes__get_note"
    assert spec.description == "Get a note by id."
    assert spec.read_only is True and spec.simulated is False
    assert spec.phrase == "read note {note_id}"
    assert Notes.tool_specs()["add_note"].read_only is False


def test_description_defaults_to_the_name_in_words_without_a_docstring():
    assert Faulty.tool_specs()["unfinished_quietly"].description == "unfinished quietly"


def test_tool_name_option_renames_the_tool_and_calls_the_method(world):
    spec = Faulty.tool_specs()["renamed_tool"]
    assert spec.qualified_name == "faulty__renamed_tool" and spec.method == "_impl"
    assert "_impl" not in Faulty.tool_specs()
    assert Faulty(world).call("renamed_tool", {"x": 21}) == {"success": True, "data": 42}


def test_parameters_schema_lists_required_defaults_and_forbids_extra():
    params = Notes.tool_specs()["add_note"].parameters
    assert params["type"] == "object"
    assert params["additionalProperties"] is False
    assert params["required"] == ["title"]
    assert list(params["properties"]) == ["title", "body", "owner", "tags"]
    assert params["properties"]["body"]["default"] == ""
    assert params["properties"]["owner"]["default"] is None
    assert params["properties"]["title"]["minLength"] == 1
    assert params["properties"]["title"]["maxLength"] == 50


def test_parameter_descriptions_come_from_google_docstring_args():
    props = Notes.tool_specs()["add_note"].parameters["properties"]
    assert props["title"]["description"] == "Short title of the note, shown in listings."
    assert props["body"]["description"] == "Free text."
    assert props["owner"]["description"] == "Who owns the note."
    get_props = Notes.tool_specs()["get_note"].parameters["properties"]
    assert get_props["note_id"]["description"] == "The note's id, like N-0001."


def test_parameter_without_docstring_entry_has_no_description():
    props = Notes.tool_specs()["retitle"].parameters["properties"]
    assert "description" not in props["note_id"]


def test_annotated_field_description_survives_when_the_docstring_omits_the_argument():
    props = People.tool_specs()["lookup"].parameters["properties"]
    assert props["name"]["description"] == "Full name."
    assert props["email"].get("description") == "Work email"


class Formats(Service):
    name = "formats"

    @tool(read_only=True)
    def when(self, day: str, count: int = 1) -> str:
        """Schedule something.

        Args:
            day: The day to use.
                Format: YYYY-MM-DD, in the user's time zone.
            count: How many times.
        """
        return day


def test_docstring_continuation_line_with_a_colon_stays_in_the_description():
    props = Formats.tool_specs()["when"].parameters["properties"]
    assert props["day"]["description"] == ("The day to use. Format: YYYY-MM-DD, in the user's "
                                           "time zone.")
    assert props["count"]["description"] == "How many times."


def test_semantic_parameters_carry_x_interface_tags():
    props = People.tool_specs()["lookup"].parameters["properties"]
    assert props["name"]["x-interface"] == "PersonName"
    assert props["email"]["x-interface"] == "EmailAddress"
    owner = Notes.tool_specs()["add_note"].parameters["properties"]["owner"]
    assert {"type": "null"} in owner["anyOf"]
    assert any(branch.get("x-interface") == "EmailAddress" for branch in owner["anyOf"])
    assert "x-interface" not in Notes.tool_specs()["add_note"].parameters["properties"]["body"]


def test_entity_parameters_are_inlined_with_their_field_interfaces():
    contact = People.tool_specs()["best"].parameters["properties"]["contact"]
    assert contact["x-interface"] == "Contact"
    assert contact["properties"]["email"]["x-interface"] == "EmailAddress"
    assert contact["properties"]["address"]["properties"]["city"]["x-interface"] == "City"


@pytest.mark.parametrize("cls", [Notes, People, Faulty])
def test_schemas_have_no_titles_refs_or_defs(cls):
    for spec in cls.tool_specs().values():
        for schema in (spec.parameters, spec.returns):
            assert not walk_keys(schema) & {"title", "$ref", "$defs"}, spec.qualified_name


def test_builtin_service_schemas_have_no_titles_refs_or_defs():
    specs = Registry.default().tools()
    assert len(specs) >= 20
    for spec in specs:
        for schema in (spec.parameters, spec.returns):
            assert not walk_keys(schema) & {"title", "$ref", "$defs"}, spec.qualified_name


def test_property_named_title_survives_title_stripping():
    params = Notes.tool_specs()["add_note"].parameters
    assert "title" in params["properties"] and "title" in params["required"]
    returns = Notes.tool_specs()["get_note"].returns
    assert "title" in returns["properties"]


def test_return_schema_comes_from_the_return_hint():
    get_note = Notes.tool_specs()["get_note"].returns
    assert get_note["type"] == "object"
    assert set(get_note["properties"]) == {"id", "title", "body", "tags"}
    assert Faulty.tool_specs()["renamed_tool"].returns == {"type": "integer"}
    many = People.tool_specs()["lookup"].returns
    assert many["type"] == "array" and many["items"]["x-interface"] == "Contact"
    maybe = People.tool_specs()["best"].returns
    assert {"type": "null"} in maybe["anyOf"]


def test_outputs_and_inputs_list_interface_slots():
    spec = People.tool_specs()["lookup"]
    assert {(s.interface, s.path) for s in spec.inputs} == {("PersonName", ("name",)),
                                                             ("EmailAddress", ("email",))}
    assert ("Contact", ("*",)) in {(s.interface, s.path) for s in spec.outputs}
    assert ("EmailAddress", ("*", "email")) in {(s.interface, s.path) for s in spec.outputs}


def test_to_openai_has_the_function_calling_shape():
    spec = Notes.tool_specs()["add_note"]
    out = spec.to_openai()
    assert out == {"type": "function", "function": {
        "name": "notes__add_note", "description": "Add a note to the notebook.",
        "parameters": spec.parameters}}
    json.dumps(out)  # JSON-able


def test_qualified_names_join_service_and_tool_with_double_underscore():
    assert qualified_name("contacts", "find_contact") == "contacts__find_contact"
    assert qualified_name("", "call_tool") == "call_tool"
    assert split_qualified("contacts__find_contact") == ("contacts", "find_contact")
    assert split_qualified("call_tool") == ("", "call_tool")
    assert split_qualified("a__b__c") == ("a", "b__c")


_service_names = st.from_regex(r"[a-z][a-z0-9]{0,10}(_[a-z0-9]{1,5}){0,2}", fullmatch=True)
_tool_names = st.from_regex(r"[a-z][a-z0-9_]{0,20}", fullmatch=True)


@settings(max_examples=40, deadline=None)
@given(_service_names, _tool_names)
def test_qualified_name_round_trips_through_split(service, tool_name):
    assert split_qualified(qualified_name(service, tool_name)) == (service, tool_name)


# --- validation -----------------------------------------------------------------------------

def test_validate_returns_keyword_arguments_with_defaults():
    spec = Notes.tool_specs()["add_note"]
    assert spec.validate({"title": "x"}) == {"title": "x", "body": "", "owner": None, "tags": []}


def _message(spec: ToolSpec, arguments: Any) -> str:
    with pytest.raises(ToolError) as exc:
        spec.validate(arguments)
    assert exc.value.code == 400
    return exc.value.message


def test_missing_argument_is_named():
    msg = _message(Notes.tool_specs()["add_note"], {"body": "b"})
    assert msg == "Invalid arguments for notes__add_note: missing required argument 'title'"


def test_extra_argument_is_named_with_the_expected_list():
    msg = _message(Notes.tool_specs()["add_note"], {"title": "t", "colour": "red"})
    assert "unexpected argument 'colour'" in msg
    assert "(expected: title, body, owner, tags)" in msg


def test_wrong_type_names_the_field_the_reason_and_the_value():
    msg = _message(Faulty.tool_specs()["renamed_tool"], {"x": "abc"})
    assert msg.startswith("Invalid arguments for faulty__renamed_tool: argument 'x': ")
    assert "valid integer" in msg and "got 'abc'" in msg


def test_semantic_type_violation_names_the_field():
    msg = _message(Notes.tool_specs()["add_note"], {"title": "t", "owner": "not-an-email"})
    assert "argument 'owner" in msg and "'not-an-email'" in msg


def test_several_problems_are_all_reported():
    msg = _message(Notes.tool_specs()["add_note"], {"zzz": 1})
    assert "missing required argument 'title'" in msg and "unexpected argument 'zzz'" in msg


@pytest.mark.parametrize("arguments, kind", [([], "list"), ("title=x", "str"), (None, "NoneType"),
                                             (3, "int")])
def test_non_dict_arguments_are_rejected_with_the_type(arguments, kind):
    msg = _message(Notes.tool_specs()["add_note"], arguments)
    assert msg.startswith(f"Arguments of notes__add_note must be a JSON object, got {kind}")


def test_huge_bad_values_are_abbreviated_in_messages():
    msg = _message(Faulty.tool_specs()["renamed_tool"], {"x": "9" * 5000 + "x"})
    assert len(msg) < 400


# --- envelopes ------------------------------------------------------------------------------

def test_ok_and_error_envelopes_have_the_contract_shape():
    assert ok([1]) == {"success": True, "data": [1]}
    assert error(409, "no") == {"success": False, "error": {"code": 409, "message": "no"}}


def test_successful_call_returns_json_data(notes):
    result = notes.call("get_note", {"note_id": "N-0001"})
    assert result == {"success": True, "data": {"id": "N-0001", "title": "Groceries",
                                                "body": "milk", "tags": []}}
    json.dumps(result)


def test_bad_arguments_give_a_400_envelope(notes):
    result = notes.call("add_note", {"title": ""})
    assert result["success"] is False and result["error"]["code"] == 400
    assert "'title'" in result["error"]["message"]


def test_unknown_tool_gives_a_404_with_did_you_mean(notes):
    result = notes.call("get_notes", {})
    assert result["success"] is False and result["error"]["code"] == 404
    assert result["error"]["message"].startswith(
        "Unknown tool 'notes__get_notes'. Did you mean 'notes__get_note'")


def test_unknown_entity_gives_a_404_envelope(notes):
    result = notes.call("get_note", {"note_id": "N-0002"})
    assert result["error"]["code"] == 404 and "Did you mean 'N-0001'?" in result["error"]["message"]


def test_tool_error_becomes_its_own_code(notes, world):
    result = notes.call("add_note", {"title": "Groceries"})
    assert result == {"success": False, "error": {
        "code": 409, "message": "A note titled 'Groceries' already exists"}}
    assert Faulty(world).call("conflict", {})["error"] == {
        "code": 409, "message": "calendar slot already taken"}


@pytest.mark.parametrize("kind, name", [("value", "ValueError"), ("key", "KeyError"),
                                        ("zero", "ZeroDivisionError"), ("type", "TypeError")])
def test_unexpected_exception_becomes_a_500_naming_the_type(world, kind, name):
    result = Faulty(world).call("crash", {"kind": kind})
    assert result["success"] is False and result["error"]["code"] == 500
    assert result["error"]["message"].startswith(f"Internal error in faulty__crash: {name}: ")


def test_not_implemented_falls_back_to_the_world_model(world):
    result = Faulty(world).call("unfinished", {})
    assert result["success"] is True and result["simulated"] == "offline"
    again = Faulty(world).call("unfinished", {})
    assert again == result  # the offline world model is deterministic


def test_call_with_an_unhashable_tool_name_returns_an_error_envelope(notes):
    result = notes.call(["get_note"], {})  # type: ignore[arg-type]
    assert result["success"] is False and result["error"]["code"] == 404


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                     | st.text(max_size=20),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)


@settings(max_examples=40, deadline=None)
@given(tool_name=st.sampled_from(["get_note", "add_note", "retitle", "nope"]),
       arguments=_json | st.dictionaries(st.sampled_from(["note_id", "title", "body", "owner",
                                                          "tags", "x"]), _json, max_size=4))
def test_call_never_raises_and_always_returns_an_envelope(tool_name, arguments):
    result = Notes(World(0)).call(tool_name, arguments)
    assert isinstance(result["success"], bool)
    if result["success"]:
        json.dumps(result["data"])
    else:
        assert result["error"]["code"] in (400, 404, 409, 422, 500)
        assert isinstance(result["error"]["message"], str) and result["error"]["message"]


def test_did_you_mean_suggests_close_matches_only():
    assert did_you_mean("contcts", ["contacts", "calendar"], "service") == (
        "Unknown service 'contcts'. Did you mean 'contacts'?")
    assert did_you_mean("zzzz", ["contacts"], "service") == "Unknown service 'zzzz'."


# --- class checks ---------------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["Notes", "my-notes", "a__b", "1notes", "_notes", "notes.2",
                                 "notes.", ".notes", "a..b", "notes_", "notes_.v2", "no tes"])
def test_invalid_service_names_are_rejected_at_class_definition(bad):
    with pytest.raises(TypeError, match="must be lowercase"):
        type("Bad", (Service,), {"name": bad})


@pytest.mark.parametrize("good", ["notes", "my_notes", "notes2", "a", "notes.v2",
                                  "github.repos", "my_api.repo_issues"])
def test_valid_service_names_are_accepted(good):
    assert type("Good", (Service,), {"name": good}).name == good


def test_tool_without_a_parameter_hint_is_rejected_naming_it():
    class NoHint(Service):
        name = "no_hint"

        @tool
        def f(self, x) -> int:  # type: ignore[no-untyped-def]
            return 1

    with pytest.raises(TypeError, match=r"no_hint\.f: parameter 'x' has no type hint"):
        NoHint.tool_specs()


def test_tool_without_a_return_hint_is_rejected():
    class NoReturn(Service):
        name = "no_return"

        @tool
        def f(self, x: int):  # type: ignore[no-untyped-def]
            return 1

    with pytest.raises(TypeError, match=r"no_return\.f has no return type hint"):
        NoReturn.tool_specs()


@pytest.mark.parametrize("signature", ["*args: int", "**kwargs: int"])
def test_tool_with_star_parameters_is_rejected(signature):
    namespace: dict[str, Any] = {}
    exec(f"def f(self, {signature}) -> int:\n    return 1", namespace)
    cls = type("Star", (Service,), {"name": "star", "f": tool(namespace["f"])})
    with pytest.raises(TypeError, match="tools need named parameters"):
        cls.tool_specs()


def test_service_description_is_the_first_docstring_paragraph():
    assert Notes.description() == "Tiny notebook for SDK tests."


# --- inheritance ----------------------------------------------------------------------------

class MoreNotes(Notes):
    """Notes with archiving."""

    name = "more_notes"

    @tool
    def archive(self, note_id: str) -> bool:
        """Archive a note."""
        return self.state.notes.pop(note_id, None) is not None

    @tool(read_only=True)
    def get_note(self, note_id: str, upper: bool = False) -> Note:
        """Get a note, maybe shouting."""
        note = super().get_note(note_id)
        return note.model_copy(update={"title": note.title.upper()}) if upper else note


def test_tool_specs_are_inherited_through_subclasses():
    specs = MoreNotes.tool_specs()
    assert set(specs) == {"get_note", "add_note", "retitle", "archive"}
    assert {s.qualified_name for s in specs.values()} == {
        "more_notes__get_note", "more_notes__add_note", "more_notes__retitle",
        "more_notes__archive"}
    assert set(Notes.tool_specs()) == {"get_note", "add_note", "retitle"}
    assert Notes.tool_specs()["add_note"].qualified_name == "notes__add_note"


def test_overriding_tool_uses_the_subclass_signature(world):
    spec = MoreNotes.tool_specs()["get_note"]
    assert set(spec.parameters["properties"]) == {"note_id", "upper"}
    assert spec.description == "Get a note, maybe shouting."
    result = MoreNotes(world).call("get_note", {"note_id": "N-0001", "upper": True})
    assert result["data"]["title"] == "GROCERIES"


# --- state and copy-on-write ----------------------------------------------------------------

def test_seed_builds_the_initial_state(notes):
    assert list(notes.state.notes) == ["N-0001"]
    assert Notes(World(0), state=Notes.State()).state.notes == {}


def test_state_digest_is_stable_and_tracks_content(world):
    a, b = Notes(world), Notes(world)
    assert a.state.digest() == b.state.digest()
    a.call("add_note", {"title": "new"})
    assert a.state.digest() != b.state.digest()


def test_state_forbids_unknown_fields():
    with pytest.raises(ValueError):
        Notes.State(notes={}, extra=1)


def test_create_shares_the_seeded_state_between_instances():
    world = World(101)
    a, b = Notes.create(world), Notes.create(world)
    assert a is not b and a.state is b.state


def test_create_seeds_once_while_the_state_is_alive():
    world = World(102)
    before = SeedCounter.seeds
    a = SeedCounter.create(world)
    b = SeedCounter.create(world)
    assert SeedCounter.seeds == before + 1 and a.state is b.state
    assert a.call("read", {}) == {"success": True, "data": 102}


def test_reads_never_copy_the_shared_state():
    world = World(103)
    a, b = Notes.create(world), Notes.create(world)
    assert a.call("get_note", {"note_id": "N-0001"})["success"]
    assert a.call("get_note", {"note_id": "missing"})["error"]["code"] == 404
    assert a.state is b.state


def test_a_write_copies_and_leaves_the_other_instance_untouched():
    world = World(104)
    a, b = Notes.create(world), Notes.create(world)
    seeded_digest = b.state.digest()
    assert a.call("add_note", {"title": "Todo"})["success"]
    assert a.state is not b.state
    assert set(a.state.notes) == {"N-0001", "N-0002"}
    assert set(b.state.notes) == {"N-0001"} and b.state.digest() == seeded_digest
    assert Notes.create(world).state is b.state


def test_an_in_place_edit_of_a_nested_record_does_not_leak_into_the_shared_state():
    world = World(105)
    a, b = Notes.create(world), Notes.create(world)
    assert a.call("retitle", {"note_id": "N-0001", "title": "Chores"})["success"]
    assert a.state.notes["N-0001"].title == "Chores"
    assert b.state.notes["N-0001"].title == "Groceries"
    assert Notes.create(world).state.notes["N-0001"].title == "Groceries"


def test_the_copy_is_made_once_per_instance():
    world = World(106)
    a = Notes.create(world)
    a.call("add_note", {"title": "one"})
    own = a.state
    a.call("add_note", {"title": "two"})
    assert a.state is own and len(own.notes) == 3


def test_a_write_rejected_by_validation_does_not_copy():
    world = World(107)
    a, b = Notes.create(world), Notes.create(world)
    assert a.call("add_note", {"title": ""})["error"]["code"] == 400
    assert a.state is b.state


def test_plain_instances_own_their_state(world):
    a, b = Notes(world), Notes(world)
    assert a.state is not b.state
    a.call("add_note", {"title": "x"})
    own = a.state
    a.call("add_note", {"title": "y"})
    assert a.state is own and len(b.state.notes) == 1


def test_contacts_copy_on_write_with_real_data():
    contacts_cls = Registry.default().get("contacts")
    world = World(108)
    a, b = contacts_cls.create(world), contacts_cls.create(world)
    cid = next(iter(b.state.contacts))
    phone = b.state.contacts[cid].phone
    assert a.call("update_phone", {"contact_id": cid, "phone": "+1 555-123-4567"})["success"]
    assert a.state.contacts[cid].phone == "+1 555-123-4567"
    assert b.state.contacts[cid].phone == phone


def test_a_write_shares_frozen_records_and_copies_only_what_it_changes():
    from compoenv.registry import Registry

    contacts = Registry.default().get("contacts")
    a, b = contacts.create(World.get(3)), contacts.create(World.get(3))
    cid, other = list(a.state.contacts)[:2]
    assert a.call("update_phone", {"contact_id": cid, "phone": "+1 555-000-1111"})["success"]
    assert a.state.contacts is not b.state.contacts
    assert a.state.contacts[other] is b.state.contacts[other]
    assert a.state.contacts[cid].phone == "+1 555-000-1111" != b.state.contacts[cid].phone


def test_entities_are_immutable_so_shared_records_cannot_be_edited_in_place():
    from pydantic import ValidationError

    from compoenv.interfaces import Address

    address = Address(street="1 Oak Street", city="Oslo", postal_code="12345", country="NO")
    with pytest.raises(ValidationError, match="frozen"):
        address.city = "Rome"


def test_a_tool_marked_simulated_is_answered_by_the_world_model_even_if_implemented(world):
    class Quotes(Service):
        """Quotes of the day."""

        name = "quotes_sim"

        @tool(read_only=True, simulated=True, phrase="get a quote about {topic}")
        def quote(self, topic: str) -> dict[str, str]:
            """A quote about a topic."""
            return {"text": "never used"}

    result = Quotes(world).call("quote", {"topic": "rain"})
    assert result["success"] and result["simulated"] == "offline"
    assert result["data"] != {"text": "never used"}


def test_hints_are_left_out_where_nobody_reads_them():
    from compoenv.service import did_you_mean, without_hints

    assert "Did you mean 'alpha'?" in did_you_mean("alpah", ["alpha", "beta"], "tool")
    with without_hints():
        assert did_you_mean("alpah", ["alpha", "beta"], "tool") == "Unknown tool 'alpah'."
    assert "Did you mean" in did_you_mean("alpah", ["alpha", "beta"], "tool")
