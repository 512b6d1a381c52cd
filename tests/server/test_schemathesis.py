"""Property-based calls of every operation of the OpenAPI schema (schemathesis, positive and
negative data, derandomized, a bounded number of examples): the server never answers 5xx, nor
a status the operation does not declare (schemathesis's status_code_conformance), nor a body
off the schema declared for its status (response_schema_conformance).
The calls carry the admin token, so admin routes are exercised past authentication, against
a server with an institution, a current representer and one contribution."""

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import Failure, FailureGroup, response_schema_conformance

from client.transport import CONTENT_TYPE
from server.deps import BUNDLE_TYPE

from .conftest import contribution_file, upload

MAX_EXAMPLES = 25
SETTINGS = settings(max_examples=MAX_EXAMPLES, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))
schemathesis.serializer.alias([BUNDLE_TYPE, CONTENT_TYPE], "application/octet-stream")  # binary bodies


def test_no_operation_answers_a_server_error_or_an_undeclared_status_or_body(api, site, admin, tmp_path):
    assert upload(api, contribution_file(tmp_path / "1.dpc", site).read_bytes()).status_code == 201
    schema = schemathesis.openapi.from_asgi("/openapi.json", api.app)
    operations = [result.ok() for result in schema.get_all_operations()]
    calls, wrong = {}, []

    for operation in operations:
        for mode in GenerationMode:
            @SETTINGS
            @given(operation.as_strategy(generation_mode=mode))
            def call(case):
                response = case.call(headers=admin)
                calls[operation.label] = calls.get(operation.label, 0) + 1
                declared = operation.responses.status_codes
                if response.status_code >= 500 or str(response.status_code) not in declared:
                    wrong.append(f"{response.status_code} (declared: {', '.join(declared)}) {response.text[:200]}\n"
                                 f"{case.as_curl_command(headers=admin)}")
                    return
                try:
                    case.validate_response(response, checks=[response_schema_conformance])
                except (Failure, FailureGroup) as failure:
                    wrong.append(f"{response.status_code}, a body off its schema: {failure}\n"
                                 f"{case.as_curl_command(headers=admin)}")

            try:
                call()
            except Unsatisfiable:  # no input of this operation can be made invalid (GET /api/health)
                assert mode is GenerationMode.NEGATIVE, operation.label
    assert len(operations) >= 16 and set(calls) == {operation.label for operation in operations}
    assert not wrong, "\n\n".join(wrong[:5])
