"""Integrations: one website each, grouping that site's tools."""
