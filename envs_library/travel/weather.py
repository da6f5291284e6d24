"""Weather: two-week forecasts for the world's cities, computed rather than stored."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from compoenv import Service, State, ToolError, tool
from compoenv.crud import find_city
from compoenv.interfaces import City, Date, WeatherReport

HORIZON_DAYS = 14


class Weather(Service):
    """Weather forecasts: daily condition, high/low and chance of rain for the next 14 days."""

    name = "weather"
    domain = "travel"

    class State(State):
        """Forecasts have no state: each is a pure function of (world seed, city, date)."""

    @tool(read_only=True, phrase="get the weather forecast for {city} on {date}")
    def get_forecast(self, city: City, date: Date) -> WeatherReport:
        """The forecast for a city on a date (today up to 14 days ahead).

        Args:
            date: Day of the forecast, from today to 14 days ahead.
        """
        info = find_city(self.world, city)
        window = [self.world.date(k) for k in range(HORIZON_DAYS + 1)]
        if date not in window:
            raise ToolError(422, f"No forecast for {date!r}: forecasts cover {window[0]} to "
                                 f"{window[-1]}")
        rng = self.world.rng(f"{self.name}/{info.name}/{date}")
        high = round(info.base_temp + rng.uniform(-4.0, 4.0), 1)
        low = round(high - rng.uniform(4.0, 10.0), 1)
        condition = rng.choices(("sunny", "cloudy", "rain", "storm", "fog"),
                                weights=(35, 30, 22, 5, 8))[0]
        if condition in ("rain", "storm") and high <= 2:
            condition = "snow"
        wet = condition in ("rain", "storm", "snow")
        return WeatherReport(
            city=info.name, date=date, condition=condition, high=high, low=low,
            precipitation_chance=(rng.randrange(55, 96) if wet else rng.randrange(0, 15)
                                  if condition == "sunny" else rng.randrange(10, 45)))

    @tool(read_only=True, phrase="find which of {cities} will be warmest on {date}")
    def warmest_city(
        self,
        cities: Annotated[list[City], Field(min_length=1, max_length=30)],
        date: Date,
    ) -> WeatherReport:
        """Of several cities, the one with the highest forecast high on a date (ties: first).

        Args:
            cities: Cities to compare.
        """
        reports = [self.get_forecast(city, date) for city in cities]
        return max(reports, key=lambda r: r.high)

    @tool(read_only=True, phrase="check whether it will rain in {city} on {date}")
    def will_it_rain(self, city: City, date: Date) -> bool:
        """Whether rain or a storm is forecast for a city on a date."""
        return self.get_forecast(city, date).condition in ("rain", "storm")
