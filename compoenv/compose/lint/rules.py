"""The rule table: each rule's id, what it flags, and the bad and good task it is shown on."""

from __future__ import annotations

from compoenv.compose.lint import flow, goals, wording
from compoenv.compose.lint.records import Example, Rule

__all__ = ["RULES", "RULES_BY_ID"]

_W, _F = "wording", "value-flow"
# World 0: the user is Carlos Castro; Sara Kim and Lina Silva are two other people; Ironwood
# Health is an employer; CityCare Pharmacy is a pharmacy
_SARA, _SARA_MAIL = "Sara Kim", "sara.kim@bluebirdsystems.com"
_LINA, _LINA_MAIL = "Lina Silva", "lina.silva@juniperventures.com"


def _vaccination(**args: object) -> tuple[tuple[str, dict[str, object]], ...]:
    base = {"pharmacy_name": "CityCare Pharmacy", "city": "Amsterdam", "vaccine": "flu",
            "date": "2026-03-20", "patient_name": _SARA, "patient_email": _SARA_MAIL}
    return (("pharmacy__book_vaccination", {**base, **args}),)


_DINNER = (("hotels__search_hotels", {"city": "Madrid"}),
           ("restaurants__find_restaurants_near", {"street_address": "1 Gran Via",
                                                   "city": "Madrid"}),
           ("restaurants__check_table_availability", {"party_size": 6,
                                                      "restaurant_name": "Casa Mar",
                                                      "city": "Madrid", "date": "2026-03-17"}))
_VIEWING = (("real_estate__search_listings", {"city": "Oslo"}),
            ("real_estate__schedule_viewing", {"listing_id": "LST-5988", "date": "2026-03-20",
                                               "time": "11:00", "visitor_name": _SARA,
                                               "visitor_email": _SARA_MAIL}))


RULES: tuple[Rule, ...] = (
    Rule("L101", "field-as-noun", _W,
         "A field name used as a noun: a possessive or 'the ... of that' followed by a "
         "field name that is no noun phrase (ends in a preposition, a participle, an "
         "adjective or a unit).",
         wording.check_field_as_noun,
         Example("Find the job candidate Omar Torres. Then create a form that closes on the "
                 "candidate's applied on.", services=("recruiting", "forms")),
         Example("Find the job candidate Omar Torres. Then create a form that closes on the "
                 "day the candidate applied.", services=("recruiting", "forms"))),
    Rule("L102", "double-article", _W, "Two articles in a row: 'a the', 'the the', 'an the'.",
         wording.check_double_article,
         Example("Book a room at the the Grand Hotel."),
         Example("Book a room at the Grand Hotel.")),
    Rule("L103", "repeated-noun", _W,
         "A reference whose field repeats its owner's noun: 'the restaurant's restaurant "
         "name', 'the customer profile's customer city'.",
         wording.check_repeated_noun,
         Example("Find restaurants in Prague. Then get the menu of the restaurant's restaurant "
                 "name.", services=("restaurants",)),
         Example("Find restaurants in Prague. Then get the menu of the restaurant's city.",
                 services=("restaurants",))),
    Rule("L104", "quoted-raw-value", _W,
         "A quoted machine value: a snake_case token or an enum value of a parameter "
         "('\"off_peak\"', 'a \"monthly\" membership').",
         wording.check_quoted_raw_value,
         Example('Get "off_peak" parking in Oslo.'),
         Example("Get off-peak parking in Oslo.")),
    Rule("L105", "malformed-unit", _W,
         "A unit said twice: 'minutes-minute', '45-minute minutes', 'for the event's "
         "duration minutes minutes'.",
         wording.check_unit,
         Example("Reserve parking for the event's duration minutes minutes."),
         Example("Reserve parking for 45 minutes.")),
    Rule("L106", "placeholder-value", _W,
         "A generator's placeholder shown as a value: 'quiet event name 555', 'harbor id "
         "459', '\"quarterly name\"'.",
         wording.check_placeholder,
         Example('Save the address as "quarterly name".'),
         Example('Save the address as "Office".')),
    Rule("L107", "sentence-form", _W,
         "A sentence that starts in lower case, or a line without final punctuation.",
         wording.check_sentence,
         Example("Find flights to Oslo. then book the cheapest one"),
         Example("Find flights to Oslo. Then book the cheapest one.")),
    Rule("L108", "spacing", _W, "Doubled spaces, or a space before punctuation.",
         wording.check_spacing,
         Example("Find flights to  Oslo."),
         Example("Find flights to Oslo.")),
    Rule("L109", "filler", _W, "An empty '( )' or 'the default' standing in for a value.",
         wording.check_filler,
         Example("Book a table at the default time ( )."),
         Example("Book a table at 19:00.")),
    Rule("L110", "same-range-ends", _W,
         "The same words at both ends of a range: 'between Chicago and Chicago', 'from the "
         "event's date to the event's date'.",
         wording.check_same_ends,
         Example("Find a city halfway between Chicago and Chicago."),
         Example("Find a city halfway between Chicago and Boston.")),
    Rule("L111", "tool-name-as-owner", _W,
         "A tool's name standing for its result before a possessive: 'the files shared "
         "with's name', 'the articles by author's city'.",
         wording.check_owner,
         Example("Find the files shared with me. Tell me the files shared with's name."),
         Example("Find the files shared with me. Tell me the file's name.")),
    Rule("L112", "doubled-word", _W,
         "A word said twice in a row outside quoted text: 'the lowest lowest price'.",
         wording.check_doubled_word,
         Example("Find events in Rome, and take the event with the lowest lowest price."),
         Example("Find events in Rome, and take the event with the lowest starting price.")),
    Rule("L113", "dictated-steps", _W,
         "A request that lists three or more calls as steps: sentences led by 'Then' after "
         "a first one, or three or more imperative clauses in a row led by the verbs of the "
         "solution's tools, instead of saying the goal.",
         goals.check_dictated_steps,
         Example("Search hotels in Madrid. Then find restaurants near the hotel's street in "
                 "Madrid. Then check free tables for 6 at the restaurant on 2026-03-17.",
                 _DINNER),
         Example("My team of 6 lands in Madrid on 2026-03-17: I need a table for all of us "
                 "near our hotel that evening.", _DINNER)),
    Rule("L114", "raw-identifier", _W,
         "A raw identifier in the request: a service's name (real_estate), a tool's "
         "qualified or bare name (hotels__search_hotels, search_hotels) or another "
         "snake_case token, outside quoted values, emails and links.",
         goals.check_identifiers,
         Example("The listing LST-5988 in real_estate also fits, but it is not the one this "
                 "job is about: leave it as it is.", services=("real_estate",)),
         Example("The listing LST-5988 in the real-estate app also fits, but it is not the "
                 "one this job is about: leave it as it is.", services=("real_estate",))),
    Rule("L115", "goal-contradiction", _W,
         "A goal its steps or solution contradict: it asks for the latest (cheapest, lowest, "
         "below a figure) and the steps take only the other end; or it claims work (filed, "
         "emailed, invited, put in the calendar) that no write of the solution does.",
         goals.check_goal_contradiction,
         Example("I want the newest listing in Oslo viewed. Find homes in Oslo, and take the "
                 "listing with the earliest publication date. Then book a viewing of that "
                 "listing.", _VIEWING),
         Example("I want the newest listing in Oslo viewed. Find homes in Oslo, and take the "
                 "listing with the latest publication date. Then book a viewing of that "
                 "listing.", _VIEWING)),
    Rule("L201", "same-endpoints", _F,
         "One value as both ends of a call: origin and destination, pickup and dropoff, "
         "from and to asset, source and target language.",
         flow.check_same_endpoints,
         Example("Find a city halfway between Stockholm and Stockholm.",
                 (("maps__find_midpoint", {"origin_city": "Stockholm",
                                           "destination_city": "Stockholm"}),)),
         Example("Find a city halfway between Stockholm and Oslo.",
                 (("maps__find_midpoint", {"origin_city": "Stockholm",
                                           "destination_city": "Oslo"}),))),
    Rule("L202", "identity-mismatch", _F,
         "One person's name with another person's email or phone in the same role of a call.",
         flow.check_identity_mismatch,
         Example(f"Book a flu vaccination at CityCare Pharmacy for {_SARA} ({_LINA_MAIL}).",
                 _vaccination(patient_email=_LINA_MAIL)),
         Example(f"Book a flu vaccination at CityCare Pharmacy for {_SARA} ({_SARA_MAIL}).",
                 _vaccination())),
    Rule("L203", "self-link", _F,
         "A person linked to themself: the user interviewing, paying or messaging themself, "
         "or two person arguments of one call (interviewer, candidate) naming one person.",
         flow.check_self_link,
         Example(f"Schedule an interview of {_SARA_MAIL} with {_SARA} at 2026-03-21T16:00.",
                 (("recruiting__schedule_interview",
                   {"candidate_email": _SARA_MAIL, "interviewer": _SARA,
                    "start": "2026-03-21T16:00", "duration_minutes": 45}),)),
         Example(f"Schedule an interview of {_SARA_MAIL} with {_LINA} at 2026-03-21T16:00.",
                 (("recruiting__schedule_interview",
                   {"candidate_email": _SARA_MAIL, "interviewer": _LINA,
                    "start": "2026-03-21T16:00", "duration_minutes": 45}),))),
    Rule("L204", "role-mismatch", _F,
         "An organisation argument of a business role (restaurant, gym, hotel, pharmacy, "
         "insurer, ...) filled with an employer, or with a business of another kind.",
         flow.check_role_mismatch,
         Example(f"Book a flu vaccination at Ironwood Health for {_SARA} ({_SARA_MAIL}).",
                 _vaccination(pharmacy_name="Ironwood Health")),
         Example(f"Book a flu vaccination at CityCare Pharmacy for {_SARA} ({_SARA_MAIL}).",
                 _vaccination())),
    Rule("L205", "implausible-magnitude", _F,
         "A money argument outside the range its role takes (compoenv.magnitudes.RANGES): "
         "a salary of 8.28.",
         flow.check_magnitude,
         Example(f"Offer {_SARA_MAIL} a salary of 8.28 starting on 2026-03-20.",
                 (("recruiting__create_offer", {"candidate_email": _SARA_MAIL, "salary": 8.28,
                                                "start_date": "2026-03-20"}),)),
         Example(f"Offer {_SARA_MAIL} a salary of 95000 starting on 2026-03-20.",
                 (("recruiting__create_offer", {"candidate_email": _SARA_MAIL,
                                                "salary": 95000, "start_date": "2026-03-20"}),))),
)
RULES_BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}
