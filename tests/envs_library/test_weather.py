"""Weather: deterministic forecasts through the envelope path, errors, and the contract."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path

import pytest

from compoenv import World
from compoenv.testing import call_error, call_ok, check_service
from envs_library.travel.hotels import Hotels
from envs_library.travel.weather import Weather

TOOLS = {"get_forecast", "warmest_city", "will_it_rain"}


@pytest.fixture
def weather() -> Weather:
    return Weather(World(0))


def forecasts(weather: Weather) -> list[dict]:
    return [call_ok(weather, "get_forecast", city=c.name, date=weather.world.date(d))
            for c in weather.world.cities for d in range(15)]


def test_forecast_is_a_plausible_report_around_the_usual_high(weather: Weather) -> None:
    report = call_ok(weather, "get_forecast", city="lisbon", date=weather.world.date(2))
    assert report["city"] == "Lisbon" and report["date"] == weather.world.date(2)
    for r in forecasts(weather):
        usual = weather.world.city(r["city"]).typical_high(dt.date.fromisoformat(r["date"]))
        assert abs(r["high"] - usual) <= 4.05 and r["low"] < r["high"]  # 4, to a tenth
        assert 0 <= r["precipitation_chance"] <= 100
        wet = r["condition"] in ("rain", "storm", "snow")
        assert (r["precipitation_chance"] >= 50) == wet, r
        assert r["condition"] != "snow" or r["high"] <= 2
    assert {r["condition"] for r in forecasts(weather)} >= {"sunny", "cloudy", "rain"}


def test_forecasts_follow_the_season_of_the_worlds_today() -> None:
    # the same seed on a winter and a summer day: the north is warmer in July, the south colder
    def high(city: str, today: dt.date) -> float:
        return Weather(World(0, today)).get_forecast(city, today.isoformat()).high

    winter, summer = dt.date(2026, 1, 12), dt.date(2026, 7, 14)
    for city in ("Oslo", "Chicago", "Berlin"):
        assert high(city, summer) > high(city, winter) + 10
    assert high("Sydney", summer) < high("Sydney", winter)


def test_same_seed_same_forecast_different_seed_different_forecast() -> None:
    assert forecasts(Weather(World(0))) == forecasts(Weather(World(0)))
    assert forecasts(Weather(World(0))) != forecasts(Weather(World(1)))


def test_forecasts_are_the_same_in_every_process() -> None:
    # Python's hash() of a str is salted per process; forecasts must not depend on it
    script = ("from compoenv import World; from envs_library.travel.weather import Weather; "
              "print(Weather(World(0)).get_forecast('Oslo', World(0).date(2)).model_dump_json())")
    outputs = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              check=True, cwd=Path(__file__).parents[2],
                              env={**os.environ, "PYTHONHASHSEED": salt}).stdout
               for salt in ("1", "2")}
    assert len(outputs) == 1


def test_forecasts_do_not_depend_on_call_order() -> None:
    a, b = Weather(World(3)), Weather(World(3))
    date = a.world.date(4)
    call_ok(a, "get_forecast", city="Rome", date=date)
    assert call_ok(a, "get_forecast", city="Oslo", date=date) == \
        call_ok(b, "get_forecast", city="Oslo", date=date)


def test_unknown_city_is_404_with_did_you_mean(weather: Weather) -> None:
    err = call_error(weather, "get_forecast", city="Stokholm", date=weather.world.date(0))
    assert err["code"] == 404 and "Did you mean 'Stockholm'" in err["message"]


@pytest.mark.parametrize("days", [-1, 15, 400])
def test_dates_outside_the_forecast_window_are_422(weather: Weather, days: int) -> None:
    err = call_error(weather, "get_forecast", city="Rome", date=weather.world.date(days))
    assert err["code"] == 422
    assert weather.world.date(0) in err["message"] and weather.world.date(14) in err["message"]


def test_bad_arguments_are_400(weather: Weather) -> None:
    assert call_error(weather, "get_forecast", city="Rome", date="tomorrow")["code"] == 400
    assert call_error(weather, "get_forecast", city="Rome")["code"] == 400
    assert call_error(weather, "warmest_city", cities=[], date=weather.world.date(1))["code"] == 400
    assert call_error(weather, "warmest_city", cities="Rome",
                      date=weather.world.date(1))["code"] == 400
    assert call_error(weather, "will_it_rain", city="", date=weather.world.date(1))["code"] == 400


def test_warmest_city_picks_the_highest_high(weather: Weather) -> None:
    date = weather.world.date(3)
    cities = ["Oslo", "Singapore", "Montreal", "Berlin"]
    warmest = call_ok(weather, "warmest_city", cities=cities, date=date)
    highs = {c: call_ok(weather, "get_forecast", city=c, date=date)["high"]
             for c in cities}
    assert warmest["high"] == max(highs.values())
    assert warmest["city"] == max(highs, key=highs.__getitem__)
    err = call_error(weather, "warmest_city", cities=["Oslo", "Romee"], date=date)
    assert err["code"] == 404 and "Did you mean" in err["message"]


def test_will_it_rain_agrees_with_the_forecast(weather: Weather) -> None:
    answers = set()
    for c in weather.world.cities:
        date = weather.world.date(5)
        report = call_ok(weather, "get_forecast", city=c.name, date=date)
        rain = call_ok(weather, "will_it_rain", city=c.name, date=date)
        assert rain is (report["condition"] in ("rain", "storm"))
        answers.add(rain)
    assert answers == {True, False}


def test_reads_do_not_change_state(weather: Weather) -> None:
    before = weather.state.digest()
    forecasts(weather)
    assert weather.state.digest() == before == Weather(World(1)).state.digest()


def test_every_hotel_city_has_a_forecast() -> None:
    world = World(0)
    weather = Weather(world)
    for city in {h.city for h in Hotels(world).state.hotels.values()}:
        call_ok(weather, "get_forecast", city=city, date=world.date(1))


# --- contract -----------------------------------------------------------------------------
def test_every_tool_is_read_only() -> None:
    specs = Weather.tool_specs()
    assert set(specs) == TOOLS
    assert all(s.read_only and s.description for s in specs.values())


def test_weather_passes_the_service_checker() -> None:
    check_service(Weather, free_text=[])


def test_forecast_outputs_carry_interfaces() -> None:
    outputs = {s.interface for s in Weather.tool_specs()["get_forecast"].outputs}
    assert {"WeatherReport", "City", "Date", "Temperature"} <= outputs
