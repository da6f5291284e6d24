"""Jobs for any library: a service no scenario acts on gets derived jobs, and default tasks use
it, told as goals and verified like the declared jobs."""

from __future__ import annotations

from collections import Counter
from typing import Annotated

from pydantic import StringConstraints

from compoenv import Service, State, ToolError, World, tool
from compoenv.compose import Composer, ComposerConfig
from compoenv.compose.derive import acting_services, derive_jobs, job_weights
from compoenv.compose.verify import replay
from compoenv.interfaces import City, Date, EmailAddress, Entity, Interface, Money, PersonName
from compoenv.registry import Registry
from compoenv.roles import Role
from compoenv.scenarios import ScenarioRegistry


KennelId = Annotated[str, StringConstraints(pattern=r"^KEN-\d{3,}$"), Interface("KennelId")]
StayId = Annotated[str, StringConstraints(pattern=r"^STY-\d{4,}$"), Interface("StayId")]


class Kennel(Entity):
    id: KennelId
    name: str
    city: Annotated[City, Role("location")]
    nightly_price: Annotated[Money, Role("price")]


class Stay(Entity):
    id: StayId
    kennel_id: KennelId
    pet: str
    owner_email: Annotated[EmailAddress, Role("owner")]
    start: Date
    nights: int
    status: str = "booked"


class Kennels(Service):
    """Pet boarding: kennels by city with their nightly prices, and stays booked for pets."""

    name = "kennels"
    domain = "pets"

    class State(State):
        kennels: dict[str, Kennel] = {}
        stays: dict[str, Stay] = {}

    def seed(self, world: World) -> Kennels.State:
        rng = world.rng(self.name)
        kennels = {}
        for city in world.cities[:6]:
            for k in range(rng.randint(3, 5)):
                kid = f"KEN-{len(kennels) + 1:03d}"
                kennels[kid] = Kennel(id=kid, name=f"{city.name} Paws {k + 1}", city=city.name,
                                      nightly_price=rng.randint(20, 90) * 1.5)
        return self.State(kennels=kennels)

    @tool(read_only=True, phrase="find kennels in {city}")
    def find_kennels(self, city: Annotated[City, Role("location")]) -> list[Kennel]:
        """Find the boarding kennels of a city."""
        return [k for k in self.state.kennels.values() if k.city == city]

    @tool(phrase="book a stay at kennel {kennel_id} for {pet} from {start} for {nights} nights "
                 "(owner {owner_email})")
    def book_stay(self, kennel_id: KennelId, pet: Annotated[PersonName, Role("guest")],
                  owner_email: Annotated[EmailAddress, Role("owner")], start: Date,
                  nights: int) -> Stay:
        """Book a boarding stay for a pet at a kennel."""
        if kennel_id not in self.state.kennels:
            raise ToolError(404, f"no kennel {kennel_id}")
        if not 1 <= nights <= 30:
            raise ToolError(400, "nights must be 1 to 30")
        stay = Stay(id=f"STY-{len(self.state.stays) + 1:04d}", kennel_id=kennel_id, pet=pet,
                    owner_email=owner_email, start=start, nights=nights)
        self.writable_state().stays[stay.id] = stay
        return stay


def _registry() -> Registry:
    registry = Registry.default()
    copy = Registry()
    for name in registry.names():
        copy.add(registry.get(name))
    copy.add(Kennels)
    return copy


def test_a_service_no_scenario_acts_on_gets_a_derived_job() -> None:
    registry = _registry()
    declared = list(ScenarioRegistry.default())
    jobs = derive_jobs(registry, declared)
    acting = acting_services(declared, registry)
    mine = [j for j in jobs if "kennels" in j.services]
    assert mine, [j.name for j in jobs]
    job = mine[0]
    job.check(registry)
    assert job.stages[0].take == "pick" and job.stages[0].tools == ["kennels__find_kennels"]
    assert job.stages[1].tools == ["kennels__book_stay"]
    goal = " ".join(job.goal).casefold()
    assert "kennel" in goal or "boarding" in goal
    # no job is derived for a service the declared scenarios already act on
    assert not any(j.services[0] in acting for j in jobs)


def test_default_tasks_use_a_new_service_and_verify() -> None:
    registry = _registry()
    names = tuple(ScenarioRegistry.default().names())
    composer = Composer(registry, ComposerConfig(scenarios=names, derive=True, distractors=4))
    tasks = [composer.sample(seed) for seed in range(100)]
    used = [t for t in tasks if "kennels" in {c.name.split("__")[0] for c in t.solution}]
    assert len(used) >= 3, Counter(t.scenario for t in tasks)
    for task in used[:3]:
        assert task.guidance == "goal" and "kennels__" not in task.instruction
        assert "the cheapest kennel" in task.instruction or "most expensive kennel" in \
            task.instruction
        assert replay(task, registry=registry).rubric_score == 1.0


def test_job_weights_spread_tasks_over_services() -> None:
    registry = _registry()
    jobs = list(ScenarioRegistry.default()) + derive_jobs(registry,
                                                         list(ScenarioRegistry.default()))
    weights = job_weights(jobs, registry)
    assert abs(sum(weights) - 1.0) < 1e-9 and all(w > 0 for w in weights)
    mine = [w for j, w in zip(jobs, weights) if "kennels" in j.services]
    assert min(mine) > 1 / len(jobs)  # a service only its own job acts on weighs more


class GroomedKennels(Kennels):
    """Pet boarding with a job its author declared next to it."""

    name = "groomed_kennels"
    jobs = ({
        "name": "boarding_for_a_trip", "domain": "pets",
        "persona": ["I look after our family's pets, and we travel for {employer}."],
        "goal": "We are away for a few nights, so our pet needs a stay at a kennel.",
        "services": ["groomed_kennels", "email"],
        "stages": [
            {"tools": ["groomed_kennels__find_kennels"], "take": "pick", "items": [2, 8],
             "by": [{"field": "nightly_price", "order": "min",
                     "says": "the cheapest kennel"}]},
            {"tools": ["groomed_kennels__book_stay"]},
            {"tools": ["email__send_email"], "optional": True, "fresh": True,
             "about": "the stay at the kennel",
             "args": {"subject": "Boarding booked", "body": "The stay is booked."}}],
        "rules": ["naming"], "naming": "board", "report": [0, 2]},)


def test_a_job_declared_next_to_a_service_is_composed_and_listed() -> None:
    registry = _registry()
    registry.add(GroomedKennels)
    names = tuple(ScenarioRegistry.default().names())
    composer = Composer(registry, ComposerConfig(scenarios=names, derive=True, distractors=2))
    assert "boarding_for_a_trip" in [s.name for s in composer.scenarios]
    # a service with its own job gets no derived one
    assert not any(s.name.startswith("groomed_kennels_") for s in composer.scenarios)
    own = Composer(registry, ComposerConfig(scenarios=names, derive=True), None)
    tasks = []
    for seed in range(400):
        try:
            task = own.compose(seed)
        except Exception:  # noqa: BLE001 - rejected seeds
            continue
        if task.scenario == "boarding_for_a_trip":
            tasks.append(task)
            break
    assert tasks and "the cheapest kennel in " in tasks[0].instruction
    assert replay(tasks[0], registry=registry).rubric_score == 1.0


def test_a_broken_declared_job_names_its_service() -> None:
    class Broken(Kennels):
        """Pet boarding with a job missing its stages."""

        name = "broken_kennels"
        jobs = ({"name": "no_stages", "domain": "pets", "persona": ["I board pets."],
                 "goal": "A pet needs a stay.", "services": ["broken_kennels", "email"]},)

    registry = _registry()
    registry.add(Broken)
    import pytest

    from compoenv.compose.derive import service_jobs
    from compoenv.scenarios import ScenarioError

    with pytest.raises(ScenarioError, match="service 'broken_kennels', job 0: field 'stages'"):
        service_jobs(registry)


def _imported_jobs_api(tmp_path):
    """An imported API's library: a project's classification jobs (listed in a paging
    envelope), updated or deleted by their key, and snapshots of the directory a job reads."""
    import json

    from compoenv.importers import openapi_spec

    job = {"type": "object", "properties": {
        "jobId": {"type": "string"}, "directoryId": {"type": "string"},
        "name": {"type": "string"}, "createdAt": {"type": "string", "format": "date-time"}}}
    ok = {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Job"}}}}}
    path = {"name": "projectId", "in": "path", "required": True, "schema": {"type": "string"}}
    doc = {"openapi": "3.0.0", "info": {"title": "Classifier", "version": "1"}, "paths": {
        "/projects/{projectId}/jobs": {"get": {
            "operationId": "ListJobs", "parameters": [path],
            "responses": {"200": {"content": {"application/json": {"schema": {
                "type": "object", "properties": {
                    "jobs": {"type": "array", "items": {"$ref": "#/components/schemas/Job"}},
                    "nextToken": {"type": "string"}}}}}}}}},
        "/projects/{projectId}/jobs/{jobId}": {
            "patch": {"operationId": "UpdateJob", "summary": "Updates a classification job. "
                      "Returns NOT_FOUND if the job does not exist.", "parameters": [path, {
                "name": "jobId", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": ok},
            "delete": {"operationId": "Jobs_Delete", "parameters": [path, {
                "name": "jobId", "in": "path", "required": True, "schema": {"type": "string"}}],
                "responses": ok}},
        "/projects/{projectId}/directories/{directoryId}/snapshots": {"post": {
            "operationId": "CreateSnapshot", "parameters": [path, {
                "name": "directoryId", "in": "path", "required": True,
                "schema": {"type": "string"}}], "responses": ok}}},
        "components": {"schemas": {"Job": job}}}
    spec, _ = openapi_spec(doc, name="classifier")
    (tmp_path / "classifier.json").write_text(json.dumps(spec), encoding="utf-8")
    return Registry.default([tmp_path])


def test_an_imported_list_job_acts_on_the_item_itself(tmp_path) -> None:
    """From a list in a paging envelope, picked by a plain field, the job's write is the one on
    the item by its own key (``jobId``): not a write on another record the item names (its
    directory's snapshot), nor one that takes the item back (``Jobs_Delete``)."""
    registry = _imported_jobs_api(tmp_path)
    jobs = [j for j in derive_jobs(registry, list(ScenarioRegistry.default()))
            if "classifier" in j.services]
    choice = next(j for j in jobs if j.name.endswith("_choice"))
    assert choice.stages[0].tools == ["classifier__list_jobs"]
    assert choice.stages[0].take == "pick" and choice.stages[1].tools == [
        "classifier__update_job"]
    tools = {t for j in jobs for s in j.stages for t in s.tools}
    assert "classifier__jobs_delete" not in tools and "classifier__create_snapshot" not in tools
    # said in the API's words, as a request: the thing by its resource, the write's summary's
    # first sentence in the imperative
    assert choice.name == "classifier_job_choice"
    goal = " ".join(choice.goal)
    assert "update a classification job" in goal and "NOT_FOUND" not in goal


def test_a_stated_text_of_a_write_is_one_the_records_hold() -> None:
    """A free text a write needs that is no message (a visit's reason, a kennel's name) is one
    the service's records hold in a field of that name, not a line of a letter."""
    import random

    from compoenv.compose.values import MISSING, field_value

    registry = _registry()
    service = registry.get("kennels")(World.get(0))
    names = {k.name for k in service.state.kennels.values()}
    assert {field_value(service, "name", random.Random(i)) for i in range(20)} <= names
    assert field_value(service, "no_such_field", random.Random(1)) is MISSING
