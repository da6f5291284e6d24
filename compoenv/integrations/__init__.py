"""Adapters that plug compoenv environments into training frameworks (OpenRLHF, TRL)."""
