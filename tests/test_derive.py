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


def _tasks_of(composer: Composer, scenario: str, seeds: int, want: int) -> list:
    """Up to ``want`` tasks of ``scenario`` among the first ``seeds`` seeds' tasks."""
    out = []
    for seed in range(seeds):
        try:
            task = composer.compose(seed)
        except Exception:  # noqa: BLE001 - rejected seeds
            continue
        if task.scenario == scenario:
            out.append(task)
            if len(out) == want:
                break
    return out


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
    tasks = _tasks_of(own, "boarding_for_a_trip", seeds=400, want=1)
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
    """An imported API's job is over its own records: a list in a paging envelope, one item
    taken by one stated criterion, the write on that item by its own key (``jobId``) where it
    fits, not a write on another record the item names (its directory's snapshot), nor one
    that takes the item back (``Jobs_Delete``); then someone told and a note kept."""
    registry = _imported_jobs_api(tmp_path)
    jobs = [j for j in derive_jobs(registry, list(ScenarioRegistry.default()))
            if "classifier" in j.services]
    assert [j.name for j in jobs] == ["classifier_job_review"]
    job = jobs[0]
    pick, act, tell, note = job.stages
    assert pick.tools == ["classifier__list_jobs"] and pick.take == "pick"
    # the most telling criterion first; a seed takes one that names exactly one job
    assert [(p.field, p.order, p.says) for p in pick.by] == [
        ("createdAt", "max", "the most recent job"), ("createdAt", "min", "the oldest job")]
    assert act.tools == ["classifier__update_job"] and act.optional
    assert tell.tools == ["email__send_email"] and note.tools == [
        "docs_editor__create_document"] and not (tell.optional or note.optional)
    tools = {t for s in job.stages for t in s.tools}
    assert "classifier__jobs_delete" not in tools and "classifier__create_snapshot" not in tools
    # said as people say it: the API by its title, the thing by its resource, and the note
    # the job keeps; the criterion is the request's (a goal must be true of every task)
    for goal in job.goal:
        assert "in classifier" in goal.casefold() and "note" in goal, goal
        assert "recent" not in goal and "oldest" not in goal, goal
        assert "classifier__" not in goal and "NOT_FOUND" not in goal


def test_an_imported_job_composes_a_fair_task(tmp_path) -> None:
    """The imported API's job verifies: the request names no tool or service id, the item the
    criterion takes is one, and the rubric checks the email and the note."""
    registry = _imported_jobs_api(tmp_path)
    pool = ScenarioRegistry([*ScenarioRegistry.default(), *derive_jobs(
        registry, list(ScenarioRegistry.default()))])
    composer = Composer(registry, ComposerConfig(scenarios=("classifier_job_review",)), pool)
    tasks = _tasks_of(composer, "classifier_job_review", seeds=12, want=12)
    assert len(tasks) >= 4, composer.rejections
    for task in tasks:
        assert "classifier__" not in task.instruction and "list_jobs" not in task.instruction
        assert "the most recent job" in task.instruction or "the oldest job" in \
            task.instruction
        kinds = {c.service for c in task.rubric if getattr(c, "service", None)}
        assert {"email", "docs_editor"} <= kinds, task.rubric
        assert replay(task, registry=registry).rubric_score == 1.0


def test_a_users_service_without_typed_ids_gets_a_review_job(tmp_path) -> None:
    """A service whose write takes a plain-text id (no list item feeds it) still gets a job:
    its records found, the one the criterion names taken, its owner told (a role the record
    gives), a note kept; and default tasks use it."""
    import textwrap

    module = tmp_path / "vet.py"
    module.write_text(textwrap.dedent('''
        from typing import Annotated
        from compoenv import Service, State, World, ToolError, tool
        from compoenv.interfaces import Entity, EmailAddress, Money
        from compoenv.roles import Role

        class Visit(Entity):
            id: str
            pet: str
            owner_email: Annotated[EmailAddress, Role("customer")]
            price: Annotated[Money, Role("price")]

        class VetClinic(Service):
            """Vet clinic: visits booked for pets, with their owners and prices."""
            name = "vet_clinic"
            domain = "pets"

            class State(State):
                visits: dict[str, Visit] = {}

            def seed(self, world: World) -> "VetClinic.State":
                rng = world.rng(self.name)
                return self.State(visits={f"V-{i:04d}": Visit(
                    id=f"V-{i:04d}", pet=rng.choice(["Rex", "Milo", "Luna"]),
                    owner_email=p.email, price=rng.randint(40, 400) * 1.0)
                    for i, p in enumerate(rng.sample(world.people[1:], 12), start=1)})

            @tool(read_only=True, phrase="list the booked vet visits")
            def booked_visits(self) -> list[Visit]:
                """List every visit booked at the clinic."""
                return list(self.state.visits.values())

            @tool(phrase="mark visit {visit_id} as done")
            def complete_visit(self, visit_id: str) -> Visit:
                """Mark a visit as done."""
                if visit_id not in self.state.visits:
                    raise ToolError(404, f"no visit {visit_id}")
                return self.state.visits[visit_id]
        '''), encoding="utf-8")
    registry = _registry()
    registry.add_library(tmp_path, trust_code=True)
    jobs = [j for j in derive_jobs(registry, list(ScenarioRegistry.default()))
            if "vet_clinic" in j.services]
    assert [j.name for j in jobs] == ["vet_clinic_visit_review"], [j.name for j in jobs]
    names = tuple(ScenarioRegistry.default().names())
    composer = Composer(registry, ComposerConfig(scenarios=names, derive=True, distractors=2))
    used = _tasks_of(composer, "vet_clinic_visit_review", seeds=150, want=2)
    assert used, composer.rejections
    for task in used:
        assert "the most expensive visit" in task.instruction or "the cheapest visit" in \
            task.instruction
        assert "the visit's owner" in task.instruction  # whom to tell: the record says
        assert replay(task, registry=registry).rubric_score == 1.0


def test_a_library_job_counts_for_its_own_service(tmp_path) -> None:
    """A job over a library's service that writes only to the hubs (an email, a note) is that
    service's when jobs are drawn, not one more job of the email service."""
    registry = _imported_jobs_api(tmp_path)
    jobs = list(ScenarioRegistry.default()) + derive_jobs(
        registry, list(ScenarioRegistry.default()))
    weights = job_weights(jobs, registry)
    mine = next(w for j, w in zip(jobs, weights) if j.name == "classifier_job_review")
    assert mine > 2 / len(jobs)


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
