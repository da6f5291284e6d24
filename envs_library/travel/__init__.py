"""Travel services: flights, hotels, weather."""
