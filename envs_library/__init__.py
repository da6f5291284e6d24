"""The built-in service library: <domain>/<service>.py, and specs/ for world-model services."""
