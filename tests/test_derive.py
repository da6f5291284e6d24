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
    assert "kennel" in job.goal.casefold() or "boarding" in job.goal.casefold()
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
