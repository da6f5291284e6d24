"""Commerce services: the online shop."""
