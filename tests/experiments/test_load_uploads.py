"""The checks of the upload load test with faults (experiments/load_uploads.py --faults), on
hand-made server states (no server runs): they pass on a clean state and fail on a lost
upload, an upload given up, a duplicate, a leftover temporary file and a server error."""

import collections

import pytest

import load_uploads

REPRESENTER = "f" * 64


def _file(sha256: str, institution: str) -> dict:
    return {"sha256": sha256, "institution": institution, "sentences": 24, "tokens": 300, "bytes": 6000}


FILES = [_file("a" * 64, "site-a"), _file("b" * 64, "site-b"), _file("c" * 64, "site-c")]


def _state(listed: dict | None = None, extra_payloads: tuple = ()) -> dict:
    """What a server that stored FILES exactly once holds, with `listed` replacing listings."""
    listing = {institution: [file["sha256"] for file in FILES if file["institution"] == institution]
               for institution in load_uploads.INSTITUTIONS}
    rows = [{"sha256": file["sha256"], "sentences": 24, "tokens": 300, "size_bytes": 6000} for file in FILES]
    return {"listed": {**listing, **(listed or {})}, "rows": rows,
            "payload_files": sorted([*(file["sha256"] for file in FILES), REPRESENTER, *extra_payloads])}


def _check(state: dict, created: collections.Counter | None = None, answers: collections.Counter | None = None,
           given_up: tuple = ()):
    outcomes = [{"sha256": file["sha256"], "acknowledged": file["sha256"] not in given_up} for file in FILES]
    created = created or collections.Counter(file["sha256"] for file in FILES)
    answers = answers or collections.Counter({"POST 201": 3, "POST 507": 2, "POST connection error": 4, "GET 200": 3})
    return load_uploads.check_faults(state, FILES, outcomes, created, answers, REPRESENTER)


def test_a_clean_state_passes_every_check():
    counts, checks = _check(_state())
    assert counts == {"files": 3, "acknowledged": 3, "given_up": 0, "given_up_stored": 0, "lost": 0, "duplicated": 0}
    assert all(checks.values())


def test_an_acknowledged_upload_missing_from_its_listing_is_reported_lost():
    counts, checks = _check(_state(listed={"site-b": []}))
    assert counts["lost"] == 1
    assert not checks["0 lost: every acknowledged upload listed by its institution"]


def test_an_upload_given_up_but_stored_is_neither_lost_nor_a_storage_mismatch():
    counts, checks = _check(_state(), given_up=("c" * 64,))
    assert (counts["given_up"], counts["given_up_stored"], counts["lost"]) == (1, 1, 0)
    assert [name for name, passed in checks.items() if not passed] == ["every file acknowledged (no upload given up)"]


@pytest.mark.parametrize("state, created, answers, failed", [
    (_state(listed={"site-a": ["a" * 64] * 2}), None, None, "0 duplicated: no file answered 201 twice, listed twice "
                                                             "or in two rows"),
    (_state(), collections.Counter({"a" * 64: 2, "b" * 64: 1, "c" * 64: 1}), None,
     "0 duplicated: no file answered 201 twice, listed twice or in two rows"),
    (_state(extra_payloads=(".staged-x1y2",)), None, None, "no temporary file left (.staged-*, .publish-*)"),
    (_state(), None, collections.Counter({"POST 201": 3, "POST 500": 1}), "no 5xx answer but 507"),
])
def test_duplicates_leftovers_and_server_errors_fail_their_check(state, created, answers, failed):
    _, checks = _check(state, created, answers)
    assert not checks[failed]


def test_a_payload_without_its_row_is_seen_before_the_last_restart_repairs_it():
    assert load_uploads.payloads_match_rows(_state(), REPRESENTER)
    assert not load_uploads.payloads_match_rows(_state(extra_payloads=("d" * 64,)), REPRESENTER)
