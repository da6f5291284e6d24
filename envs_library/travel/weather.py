"""Weather: two-week forecasts for the world's cities, computed rather than stored."""

from __future__ import annotations

import datetime as dt
from typing import Annotated

from pydantic import Field

from compoenv import Service, State, ToolError, tool
from compoenv.crud import find_city
from compoenv.roles import Role
from compoenv.interfaces import City, Date, WeatherReport

HORIZON_DAYS = 14
# cumulative odds of each sky: sunny 35%, cloudy 30%, rain 22%, storm 5%, fog 8%
_SKIES = (("sunny", 0.35), ("cloudy", 0.65), ("rain", 0.87), ("storm", 0.92), ("fog", 1.01))


class Weather(Service):
    """Weather forecasts: daily condition, high/low and chance of rain for the next 14 days."""

    name = "weather"
    display = "the weather service"
    domain = "travel"
    related = ("flights", "hotels", "car_rental", "events_tickets", "fitness", "real_estate", "maps")

    class State(State):
        """Forecasts have no state: each is a pure function of (world seed, city, date)."""

    @tool(read_only=True, phrase="get the weather forecast for {city} on {date}")
    def get_forecast(self, city: Annotated[City, Role("location")], date: Annotated[Date, Role("date")]
                     ) -> WeatherReport:
        """The forecast for a city on a date (today up to 14 days ahead).

        Args:
            date: Day of the forecast, from today to 14 days ahead.
        """
        info = find_city(self.world, city)
        ahead = (dt.date.fromisoformat(date) - self.world.today).days
        if not 0 <= ahead <= HORIZON_DAYS:
            raise ToolError(422, f"No forecast for {date!r}: forecasts cover {self.world.date(0)}"
                                 f" to {self.world.date(HORIZON_DAYS)}")
        u_high, u_spread, u_sky, u_rain = self.world.draw(f"{self.name}/{info.name}/{date}")
        # around the city's usual high for the day of the year: a July in Oslo is no March
        high = round(info.typical_high(dt.date.fromisoformat(date)) - 4.0 + 8.0 * u_high, 1)
        low = round(high - 4.0 - 6.0 * u_spread, 1)
        condition = next(sky for sky, edge in _SKIES if u_sky < edge)
        if condition in ("rain", "storm") and high <= 2:
            condition = "snow"
        low_chance, high_chance = (55, 96) if condition in ("rain", "storm", "snow") else \
            (0, 15) if condition == "sunny" else (10, 45)
        return WeatherReport(
            city=info.name, date=date, condition=condition, high=high, low=low,
            precipitation_chance=low_chance + int(u_rain * (high_chance - low_chance)))

    @tool(read_only=True, phrase="find which of {cities} will be warmest on {date}")
    def warmest_city(
        self,
        cities: Annotated[list[Annotated[City, Role("location")]], Field(min_length=1, max_length=30)],
        date: Annotated[Date, Role("date")],
    ) -> WeatherReport:
        """Of several cities, the one with the highest forecast high on a date (ties: first).

        Args:
            cities: Cities to compare.
        """
        reports = [self.get_forecast(city, date) for city in cities]
        return max(reports, key=lambda r: r.high)

    @tool(read_only=True, phrase="check whether it will rain in {city} on {date}")
    def will_it_rain(self, city: Annotated[City, Role("location")], date: Annotated[Date, Role("date")]) -> bool:
        """Whether rain or a storm is forecast for a city on a date."""
        return self.get_forecast(city, date).condition in ("rain", "storm")
