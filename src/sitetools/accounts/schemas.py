"""Wire models of the account area (spec: "Account", "AccountUser", "AccountPreferences")."""

from __future__ import annotations

import unicodedata
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.json_schema import SkipJsonSchema

from sitetools.core.text import SPACE_CHARS, SPACE_CLASS

__all__ = [
    "AccountFeatures",
    "AccountOut",
    "AccountUserOut",
    "ConnectionPreferenceIn",
    "ConnectionPreferenceOut",
    "PreferencesIn",
    "PreferencesOut",
    "SetNameIn",
]

Delivery = Literal["agent", "form"]

# Text-direction controls (Unicode bidi embeddings, overrides, isolates and marks).
_BIDI = set("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def _clean_name(value: str, *, required: bool) -> str:
    value = value.strip(SPACE_CHARS)
    if any(unicodedata.category(ch) == "Cc" or ch in _BIDI for ch in value):
        raise ValueError("Must not contain control or text-direction characters.")
    if required and not value:
        raise ValueError("Must have at least 1 character once trimmed.")
    if len(value) > 100:
        raise ValueError("Must have at most 100 characters once trimmed.")
    return value


class AccountFeatures(BaseModel):
    teams: bool
    webhooks: bool
    billing: bool
    sms_numbers: bool
    builds: bool
    code: bool


class AccountOut(BaseModel):
    id: str
    type: Literal["personal", "business", "service"]
    name: str
    plan: Literal["free", "premium"] | None
    role: Literal["owner", "admin", "member"]
    permissions: list[str]
    features: AccountFeatures
    created_at: datetime


class AccountUserOut(BaseModel):
    user_id: str
    email: str
    first_name: str
    last_name: str | None
    name: str


# The same rules as a JSON Schema pattern, so the document says exactly what is accepted:
# surrounding whitespace is trimmed, then 1 (or 0) to 100 characters without controls.
_FORBIDDEN = r"\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CORE = rf"[^{SPACE_CLASS}{_FORBIDDEN}](?:[^{_FORBIDDEN}]{{0,98}}[^{SPACE_CLASS}{_FORBIDDEN}])?"
FIRST_NAME_PATTERN = rf"^[{SPACE_CLASS}]*{_CORE}[{SPACE_CLASS}]*$"
LAST_NAME_PATTERN = rf"^[{SPACE_CLASS}]*(?:{_CORE})?[{SPACE_CLASS}]*$"


class SetNameIn(BaseModel):
    """spec: "PUT /v1/account/name" body; no other fields allowed."""

    model_config = ConfigDict(extra="forbid")

    first_name: str = Field(json_schema_extra={"pattern": FIRST_NAME_PATTERN})
    last_name: str | None = Field(None, json_schema_extra={"pattern": LAST_NAME_PATTERN})

    @field_validator("first_name")
    @classmethod
    def _first(cls, value: str) -> str:
        return _clean_name(value, required=True)

    @field_validator("last_name")
    @classmethod
    def _last(cls, value: str | None) -> str | None:
        if value is None:
            return None
        return _clean_name(value, required=False) or None


class ConnectionPreferenceOut(BaseModel):
    id: str
    kind: Literal["api_key", "oauth_app"]
    question_delivery: Delivery | None


class PreferencesOut(BaseModel):
    question_delivery: Delivery
    connection: ConnectionPreferenceOut | None
    build_emails: bool


class ConnectionPreferenceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question_delivery: Delivery | None


def _omitted(schema: dict[str, Any]) -> None:
    """An optional field without a JSON default: omitting it keeps the stored value."""
    schema.pop("default", None)


class PreferencesIn(BaseModel):
    """Omitted fields keep their value."""

    model_config = ConfigDict(extra="forbid")

    question_delivery: Delivery | SkipJsonSchema[None] = Field(None, json_schema_extra=_omitted)
    connection: ConnectionPreferenceIn | SkipJsonSchema[None] = Field(
        None, json_schema_extra=_omitted
    )
    build_emails: bool | SkipJsonSchema[None] = Field(None, json_schema_extra=_omitted)

    @field_validator("question_delivery", "connection", "build_emails", mode="before")
    @classmethod
    def _no_null(cls, value: object) -> object:
        if value is None:
            raise ValueError("Must not be null; omit the field to keep its value.")
        return value
