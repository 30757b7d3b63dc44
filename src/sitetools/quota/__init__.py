"""Quota: daily tool calls and monthly new integrations, with reservations."""
