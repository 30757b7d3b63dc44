"""Accounts, users, memberships and Dashboard sessions."""
