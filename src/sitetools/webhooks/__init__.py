"""Webhooks: signed, retried deliveries of job events (the outbox and its dispatcher)."""
