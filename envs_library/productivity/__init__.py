"""Productivity services: contacts, email, calendar."""
