"""Shared foundations: configuration, database, errors, ids, clock, crypto, logging, pagination."""
