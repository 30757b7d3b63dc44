"""Demo Shop state in its own SQLite file: products, users, sessions, orders."""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sitetools.demo.totp import new_totp_secret

__all__ = ["OutOfStockError", "SeedUser", "Store"]

_PRODUCTS = [
    ("Blue ceramic mug", "A 350 ml stoneware mug with a blue glaze.", 1200, 25, False),
    ("Red ceramic mug", "The same mug in red. Only a few made.", 1200, 1, True),
    ("Espresso cups (set of 2)", "Small white porcelain cups for espresso.", 1800, 10, True),
    ("French press", "A one-litre glass French press coffee maker.", 3400, 5, False),
    ("Coffee beans, 500 g", "Medium roast beans from a small roaster.", 1500, 40, True),
    ("Tea infuser", "A stainless steel infuser for loose-leaf tea.", 700, 0, False),
    ("Linen tea towel", "A striped linen towel for the kitchen.", 900, 12, False),
    ("Oak serving board", "A solid oak board for bread and cheese.", 4200, 3, True),
]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS products (
    id INTEGER PRIMARY KEY, name TEXT NOT NULL, description TEXT NOT NULL,
    price_cents INTEGER NOT NULL, stock INTEGER NOT NULL, deal INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS users (
    username TEXT PRIMARY KEY, password_hash TEXT NOT NULL, salt TEXT NOT NULL,
    totp_secret TEXT NOT NULL, name TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sessions (
    token TEXT PRIMARY KEY, username TEXT NOT NULL, verified INTEGER NOT NULL,
    csrf TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY, username TEXT NOT NULL, product_id INTEGER NOT NULL,
    quantity INTEGER NOT NULL, total_cents INTEGER NOT NULL, created_at REAL NOT NULL);
"""


class OutOfStockError(Exception):
    def __init__(self, available: int) -> None:
        super().__init__(f"only {available} left")
        self.available = available


@dataclass(frozen=True)
class SeedUser:
    username: str
    password: str
    totp_secret: str


def _hash(password: str, salt: str) -> str:
    return hashlib.pbkdf2_hmac("sha256", password.encode(), salt.encode(), 100_000).hex()


class Store:
    """Thread-safe access to the shop's SQLite file (the site is small; one lock is enough)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._db.row_factory = sqlite3.Row
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def seed(self) -> list[SeedUser]:
        """Products and two users on first start; the users' details on every start."""
        with self._lock:
            if self._db.execute("SELECT count(*) FROM products").fetchone()[0] == 0:
                self._db.executemany(
                    "INSERT INTO products (name, description, price_cents, stock, deal) "
                    "VALUES (?, ?, ?, ?, ?)",
                    _PRODUCTS,
                )
            users = []
            for username, name in (("alice", "Alice Example"), ("bob", "Bob Example")):
                row = self._db.execute(
                    "SELECT totp_secret FROM users WHERE username = ?", (username,)
                ).fetchone()
                password = f"{username}-password"
                if row is None:
                    salt, secret = secrets.token_hex(8), new_totp_secret()
                    self._db.execute(
                        "INSERT INTO users VALUES (?, ?, ?, ?, ?)",
                        (username, _hash(password, salt), salt, secret, name),
                    )
                else:
                    secret = row["totp_secret"]
                users.append(SeedUser(username, password, secret))
            return users

    def products(self, query: str = "", deals_only: bool = False) -> list[dict[str, Any]]:
        words = [w for w in query.lower().split() if w]
        rows = self._db.execute("SELECT * FROM products ORDER BY id").fetchall()
        found = []
        for row in rows:
            text = f"{row['name']} {row['description']}".lower()
            if all(w.rstrip("s") in text for w in words) and (row["deal"] or not deals_only):
                found.append(dict(row))
        return found

    def product(self, product_id: int) -> dict[str, Any] | None:
        row = self._db.execute("SELECT * FROM products WHERE id = ?", (product_id,)).fetchone()
        return dict(row) if row else None

    def check_password(self, username: str, password: str) -> bool:
        row = self._db.execute(
            "SELECT password_hash, salt FROM users WHERE username = ?", (username,)
        ).fetchone()
        expected = row["password_hash"] if row else _hash("x", "y")
        given = _hash(password, row["salt"] if row else "y")
        return row is not None and secrets.compare_digest(expected, given)

    def totp_secret(self, username: str) -> str | None:
        row = self._db.execute(
            "SELECT totp_secret FROM users WHERE username = ?", (username,)
        ).fetchone()
        return str(row["totp_secret"]) if row else None

    def start_session(self, username: str) -> str:
        token = secrets.token_urlsafe(24)
        with self._lock:
            self._db.execute(
                "INSERT INTO sessions VALUES (?, ?, 0, ?, ?)",
                (token, username, secrets.token_urlsafe(16), time.time()),
            )
        return token

    def session(self, token: str | None) -> dict[str, Any] | None:
        if not token:
            return None
        row = self._db.execute("SELECT * FROM sessions WHERE token = ?", (token,)).fetchone()
        return dict(row) if row else None

    def verify_session(self, token: str) -> None:
        with self._lock:
            self._db.execute("UPDATE sessions SET verified = 1 WHERE token = ?", (token,))

    def end_session(self, token: str) -> None:
        with self._lock:
            self._db.execute("DELETE FROM sessions WHERE token = ?", (token,))

    def orders(self, username: str) -> list[dict[str, Any]]:
        rows = self._db.execute(
            "SELECT o.*, p.name AS product_name FROM orders o JOIN products p "
            "ON p.id = o.product_id WHERE o.username = ? ORDER BY o.id DESC",
            (username,),
        ).fetchall()
        return [dict(row) for row in rows]

    def place_order(self, username: str, product_id: int, quantity: int) -> dict[str, Any]:
        """Take the stock and record the order in one transaction; refuse what is not there."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                row = self._db.execute(
                    "SELECT price_cents, stock FROM products WHERE id = ?", (product_id,)
                ).fetchone()
                if row is None:
                    raise KeyError(product_id)
                if quantity > row["stock"]:
                    raise OutOfStockError(row["stock"])
                self._db.execute(
                    "UPDATE products SET stock = stock - ? WHERE id = ?", (quantity, product_id)
                )
                cursor = self._db.execute(
                    "INSERT INTO orders (username, product_id, quantity, total_cents, created_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (username, product_id, quantity, quantity * row["price_cents"], time.time()),
                )
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return {
            "id": cursor.lastrowid,
            "product_id": product_id,
            "quantity": quantity,
            "total_cents": quantity * row["price_cents"],
        }
