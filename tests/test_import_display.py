"""Imported APIs read as people name them: the service by its API's title without generic
words, its records' timestamps by what they are; and a read answers an optional argument
given at its default as it answers the call that leaves it out."""

from __future__ import annotations

import json

import pytest

from compoenv.importers.infer import tag_field
from compoenv.importers.openapi import display_name, openapi_spec
from compoenv.registry import Registry
from compoenv.world import World


@pytest.mark.parametrize("title, provider, expected", [
    ("PandaScore REST API for All Videogames", "pandascore.co", "PandaScore"),
    ("DataShareManagementClient", "azure.com", "Azure Data Share"),
    ("AWSBillingConductor", "amazonaws.com", "AWS Billing Conductor"),
    ("Cloud Trace API", "googleapis.com", "Google Cloud Trace"),
    ("Firebase Hosting API", "googleapis.com", "Firebase Hosting"),
    ("Keycloak Admin REST API", "", "Keycloak"),
    ("Microcks API v1.7", "", "Microcks"),
    ("Twilio - Media", "twilio.com", "Twilio Media"),
    ("API Reference", "zuora.com", "Zuora"),
    ("ApiManagementClient", "azure.com", "Azure Api Management"),
    ("", "", ""),
])
def test_an_api_is_named_by_its_title_without_generic_words(title, provider, expected):
    assert display_name(title, provider) == expected


@pytest.mark.parametrize("field, label", [
    ("createdAt", "creation time"), ("created_at", "creation time"),
    ("createTime", "creation time"), ("dateCreated", "creation time"),
    ("timeCreated", "creation time"), ("time_updated", "last update time"),
    ("updateTime", "last update time"), ("lastModified", "last update time"),
    ("last_updated_at", "last update time"), ("expiresAt", "expiry time"),
    ("invitedAt", "invitation time"), ("jobExpiresAt", "expiry time"), ("due_date", None),
    ("start", None)])
def test_a_records_timestamp_is_named_by_what_it_is(field, label):
    assert tag_field(field, "string", "date-time").get("x-label") == label


def _doc():
    item = {"type": "object", "properties": {
        "id": {"type": "string"}, "name": {"type": "string"},
        "createdAt": {"type": "string", "format": "date-time"}}}
    return {"openapi": "3.0.0", "info": {"title": "Kennel Booking REST API", "version": "1",
                                         "x-providerName": "kennels.example"},
            "paths": {"/kennels": {"get": {
                "operationId": "ListKennels", "parameters": [
                    {"name": "limit", "in": "query", "schema": {"type": "integer",
                                                                "default": 20}}],
                "responses": {"200": {"content": {"application/json": {"schema": {
                    "type": "array", "items": item}}}}}}}}}


def test_an_imported_service_carries_its_display_name_and_labels(tmp_path):
    spec, _ = openapi_spec(_doc(), name="kennel_booking")
    assert spec["display"] == "Kennel Booking"
    text = json.dumps(spec)
    assert '"x-label": "creation time"' in text
    (tmp_path / "kennel_booking.json").write_text(json.dumps(spec), encoding="utf-8")
    registry = Registry.from_paths(tmp_path)
    assert registry.info("kennel_booking").display == "Kennel Booking"


def test_a_read_answers_an_optional_argument_at_its_default_as_if_left_out(tmp_path):
    spec, _ = openapi_spec(_doc(), name="kennel_booking")
    (tmp_path / "kennel_booking.json").write_text(json.dumps(spec), encoding="utf-8")
    registry = Registry.from_paths(tmp_path)
    world = World.get(3)
    bare = registry.get("kennel_booking").create(world).call("list_kennels", {})
    said = registry.get("kennel_booking").create(world).call("list_kennels", {"limit": 20})
    other = registry.get("kennel_booking").create(world).call("list_kennels", {"limit": 5})
    assert bare["success"] and said["success"]
    assert said["data"] == bare["data"]
    assert other["success"]  # another value is another request (not checked for equality)


def test_a_messages_header_address_names_no_one_and_a_series_stays_one():
    from compoenv.importers.infer import singular

    assert tag_field("toEmailAddress", "string") == {}
    assert tag_field("owner_email", "string")["x-role"] == "owner"
    assert singular("time_series") == "time_series" and singular("policies") == "policy"
    assert singular("timeseries") == "timeseries"
