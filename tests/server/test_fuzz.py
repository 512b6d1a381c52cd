"""Requests generated from the OpenAPI schema (Schemathesis), with and without the admin
token: bad input of any shape gets a 4xx, never a 500."""

import schemathesis
from hypothesis import HealthCheck, given, settings

from client.transport import CONTENT_TYPE
from server.app import BUNDLE_TYPE, create_app


@schemathesis.serializer(BUNDLE_TYPE, CONTENT_TYPE)
def _binary(context, value):
    return value if isinstance(value, bytes) else str(value).encode()


def test_no_request_gives_a_server_error(server_dir):
    schema = schemathesis.openapi.from_asgi("/openapi.json", create_app(server_dir.path))
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 19  # every route of docs/server.md but the dashboard
    for operation in operations:
        @given(case=operation.as_strategy())
        @settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case):
            for headers in ({}, {"Authorization": f"Bearer {server_dir.token}"}):
                response = case.call(headers=headers)
                assert response.status_code < 500, f"{case.method} {case.path}: {response.status_code} {response.text}"

        check()
