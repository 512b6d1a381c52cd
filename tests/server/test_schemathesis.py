"""Schemathesis runs the API as `schemathesis run --checks all` would: every phase (coverage,
fuzzing with positive and negative data, stateful sequences; the schema has no examples) and
every check, derandomized, fuzzing each operation with at most MAX_EXAMPLES requests. No request
gets a 5xx or an undeclared status, every answer matches what its status declares, schema-valid
requests are accepted and invalid ones refused, authentication is enforced wherever the document
declares it (ignored_auth sends each authenticated request again without the token and with a
wrong one), and a method a path lacks gets 405 with every method it has in Allow.

The requests carry the admin token (the probes of ignored_auth do not), against a server with an
institution, a current representer and one contribution. Bundle bodies are the provider-signed
bundle, which no schema can describe."""

import pytest
import schemathesis
from hypothesis import strategies as st
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import Status, events, from_schema

from deidpool.contribution.container import CONTENT_TYPE
from deidpool.server.deps import BUNDLE_TYPE, OCTET_STREAM

from .conftest import contribution_file, set_limits, upload

MAX_EXAMPLES = 50  # positive and negative together
ACCEPTED = SchemathesisConfig().projects.default.checks.positive_data_acceptance.expected_statuses
# Bodies that must carry a valid signature (an audit report, a contribution): no generated one does, so a
# schema-valid request to these may be refused 400 (positive_data_acceptance only)
SIGNED_BODIES = ("POST /api/audits", "POST /api/contributions")
schemathesis.serializer.alias([BUNDLE_TYPE, CONTENT_TYPE], OCTET_STREAM)  # binary bodies


@pytest.fixture
def server_dir(server_dir):
    """Address rate limits out of reach: they answer 429 before authentication is checked, to ignored_auth's
    unauthenticated probes too (tests/server/test_limits.py tests them)."""
    set_limits(server_dir, address_requests_per_minute=1_000_000, address_request_burst=1_000_000)
    return server_dir


def _config(admin: dict) -> SchemathesisConfig:
    signed = {"checks": {"positive_data_acceptance": {"expected-statuses": [*ACCEPTED, "400"]}}}
    return SchemathesisConfig.from_dict({
        "headers": admin, "checks": {"enabled": True}, "continue-on-failure": True,
        "generation": {"max-examples": MAX_EXAMPLES, "deterministic": True, "database": "none"},
        "operations": [{"include-name": label, **signed} for label in SIGNED_BODIES]})


def test_schemathesis_finds_nothing_with_every_check(api, site, admin, tmp_path, pipeline_path):
    assert upload(api, contribution_file(tmp_path / "1.dpc", site).read_bytes(), site.key).status_code == 201
    schemathesis.openapi.media_type(BUNDLE_TYPE, st.just(pipeline_path.read_bytes()), aliases=[OCTET_STREAM])
    schema = schemathesis.openapi.from_asgi("/openapi.json", api.app, config=_config(admin))
    fuzzed, failures = set(), []

    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            if event.phase == "fuzzing" and event.status is Status.SUCCESS:
                fuzzed.add(event.label)
            failures += [f"{event.phase} {event.label or 'sequence'}: {check.failure_info.failure.title}\n"
                         f"{check.failure_info.failure.message}\n{check.failure_info.code_sample}"
                         for checks in event.recorder.checks.values() for check in checks if check.failure_info]
        elif isinstance(event, events.NonFatalError):
            failures.append(f"{event.label}: {event.info.format()}")
        elif isinstance(event, events.FatalError):
            raise event.exception
    assert not failures, "\n\n".join(failures[:10])
    operations = {result.ok().label for result in schema.get_all_operations()}
    assert len(operations) >= 19 and fuzzed == operations
