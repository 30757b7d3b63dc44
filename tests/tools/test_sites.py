"""Property tests: any text parses or is refused cleanly; every form of a site agrees."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from sitetools.core.errors import ServiceError
from sitetools.tools.sites import parse_site

LABEL = st.from_regex(r"[a-z0-9](?:[a-z0-9-]{0,10}[a-z0-9])?", fullmatch=True)


@given(st.text(max_size=300))
def test_any_text_is_a_site_or_invalid_request(text: str) -> None:
    try:
        site = parse_site(text)
    except ServiceError as error:
        assert error.code == "invalid_request"
        assert error.details["issues"][0]["path"] == "/query/site_url"
    else:
        assert site.domain
        assert site.host.endswith(site.domain) or site.host == site.domain


@given(
    name=LABEL,
    subdomains=st.lists(LABEL, max_size=3),
    suffix=st.sampled_from(["com", "co.uk", "example", "github.io", "dev"]),
    scheme=st.sampled_from(["", "http://", "https://", "HTTPS://"]),
    port=st.sampled_from(["", ":8080", ":443"]),
    tail=st.sampled_from(["", "/", "/a/b?c=d#e", "?q=1", "#frag"]),
)
def test_every_form_of_a_site_has_the_same_registrable_domain(
    name: str, subdomains: list[str], suffix: str, scheme: str, port: str, tail: str
) -> None:
    host = ".".join([*subdomains, name, suffix])
    expected = parse_site(f"{name}.{suffix}").domain
    assert parse_site(f"{scheme}{host}{port}{tail}").domain == expected
    assert parse_site(host.upper()).domain == expected
