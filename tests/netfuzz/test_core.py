"""The pure core of the network fuzzer: plan, burst classification, shrinker, report."""

from __future__ import annotations

import random

import pytest

from kafka_wire.codec.structs import Message
from kafka_wire.messages import (
    ApiKey,
    FetchRequest,
    JoinGroupRequest,
    MetadataRequest,
    MetadataResponse,
    ProduceRequest,
    RequestHeader,
    ResponseHeader,
)
from kafka_wire.netfuzz.classify import BurstCheck, FindingKind, Outcome
from kafka_wire.netfuzz.plan import (
    Plan,
    RequestKind,
    Sent,
    clamp_waits,
    classify_frame,
    mutate_frame,
    parseable_by_kafka,
    sent_of,
)
from kafka_wire.netfuzz.report import Finding, Report, ReportError, dumps, loads, summary
from kafka_wire.netfuzz.shrink import Scenario, Shrinker, resize, shrink_offline
from kafka_wire.protocol.framing import encode_request, encode_response
from kafka_wire.testing.generate import random_message

ADVERTISED: dict[int, tuple[int, int]] = {
    ApiKey.PRODUCE: (3, 9),
    ApiKey.METADATA: (0, 12),
    ApiKey.API_VERSIONS: (0, 3),
}


def generate(cls: type[Message], version: int, rng: random.Random) -> Message:
    return random_message(cls, version, rng)


def metadata(cid: int, version: int = 1) -> Sent:
    frame = encode_request(
        RequestHeader(correlation_id=cid, client_id="t"), MetadataRequest(topics=[]), version
    )
    return sent_of(frame, RequestKind.GENERATED)


def acks_zero_produce(cid: int) -> Sent:
    frame = encode_request(RequestHeader(correlation_id=cid, client_id="t"), ProduceRequest(acks=0), 3)
    return sent_of(frame, RequestKind.GENERATED, ProduceRequest(acks=0))


def answer(cid: int, version: int = 1) -> bytes:
    return encode_response(ResponseHeader(correlation_id=cid), MetadataResponse(), version)


# -- plan ------------------------------------------------------------------------------------


def test_the_plan_is_deterministic_for_a_seed() -> None:
    def bursts(seed: int) -> list[list[bytes]]:
        plan = Plan(random.Random(seed), ADVERTISED, generate, mutate_frame)
        return [[s.frame for s in plan.next_burst()] for _ in range(50)]

    assert bursts(7) == bursts(7)
    assert bursts(7) != bursts(8)


def test_the_plan_sends_every_kind_and_valid_requests_only_at_advertised_versions() -> None:
    plan = Plan(random.Random(1), ADVERTISED, generate, mutate_frame)
    kinds: set[RequestKind] = set()
    for _ in range(400):
        burst = plan.next_burst()
        kinds.update(s.kind for s in burst)
        if burst[0].kind is not RequestKind.GENERATED:
            # mutated and unadvertised requests go alone, with a sentinel when it can be read
            assert (len(burst) in (1, 2) and burst[-1].api_key == ApiKey.API_VERSIONS) or not burst[
                0
            ].size_consistent
        for s in burst:
            if s.kind is RequestKind.GENERATED:
                lo, hi = ADVERTISED[s.api_key]
                assert lo <= s.api_version <= hi
                assert classify_frame(s.frame, ADVERTISED) is RequestKind.GENERATED
            if s.kind is RequestKind.UNADVERTISED:
                assert classify_frame(s.frame, ADVERTISED) is RequestKind.UNADVERTISED
        if any(s.acks_zero for s in burst):
            assert burst[-1].api_key == ApiKey.API_VERSIONS  # the sentinel that must be answered
    assert kinds == set(RequestKind)


def test_wait_fields_are_clamped() -> None:
    fetch = FetchRequest(max_wait_ms=600_000)
    join = JoinGroupRequest(session_timeout_ms=-5, rebalance_timeout_ms=2_000_000)
    produce = ProduceRequest(timeout_ms=30_000)
    for message in (fetch, join, produce):
        clamp_waits(message, 100)
    assert (fetch.max_wait_ms, join.session_timeout_ms, join.rebalance_timeout_ms, produce.timeout_ms) == (
        100,
        0,
        100,
        100,
    )


def test_acl_requests_never_name_what_kafka_refuses_to_parse() -> None:
    from kafka_wire.messages import (
        CreateAclsRequest,
        CreateAclsRequestAclCreation,
        DeleteAclsRequest,
        DeleteAclsRequestFilter,
        DescribeAclsRequest,
    )

    create = CreateAclsRequest(creations=[CreateAclsRequestAclCreation(resource_type=0, operation=3)])
    describe = DescribeAclsRequest(
        resource_type_filter=2, pattern_type_filter=0, operation=0, permission_type=3
    )
    delete = DeleteAclsRequest(filters=[DeleteAclsRequestFilter(resource_type_filter=0, permission_type=0)])
    fetch = FetchRequest(replica_id=0)
    for message in (create, describe, delete, fetch):
        parseable_by_kafka(message)
    c, f = create.creations[0], delete.filters[0]
    assert (c.resource_type, c.resource_pattern_type, c.operation, c.permission_type) == (1, 3, 3, 1)
    assert (describe.resource_type_filter, describe.pattern_type_filter, describe.operation) == (2, 1, 1)
    assert (f.resource_type_filter, f.pattern_type_filter, f.permission_type) == (1, 3, 1)
    assert fetch.replica_id == 0  # other requests are left alone


# -- classification --------------------------------------------------------------------------


def test_answers_in_order_are_no_finding() -> None:
    check = BurstCheck([metadata(1), metadata(2)])
    check.on_frame(answer(1))
    assert not check.done
    check.on_frame(answer(2))
    assert check.outcome is Outcome.ANSWERED and check.verdict is None and check.connection_usable


def test_a_close_after_a_valid_request_is_a_crash() -> None:
    check = BurstCheck([metadata(1), metadata(2)])
    check.on_frame(answer(1))
    check.on_close()
    assert check.verdict is not None
    assert (check.verdict.kind, check.verdict.index) == (FindingKind.CRASH, 1)


def test_a_close_after_garbage_is_counted_not_reported() -> None:
    garbage = sent_of(b"\x00\x00\x00\x08\x00\x03\x00\x63\x00\x00\x00\x07", RequestKind.MUTATED)
    check = BurstCheck([garbage])
    check.on_close()
    assert (check.outcome, check.verdict) == (Outcome.CLOSED_AFTER_INVALID, None)


def test_a_close_after_a_failed_acks_zero_produce_is_kafkas_signal() -> None:
    check = BurstCheck([metadata(1), acks_zero_produce(2), metadata(3)])
    check.on_frame(answer(1))
    check.on_close()
    assert (check.outcome, check.verdict) == (Outcome.CLOSED_AFTER_ACKS_ZERO, None)
    # ...but not an excuse for losing the answer to a request sent before it
    check = BurstCheck([metadata(1), acks_zero_produce(2), metadata(3)])
    check.on_close()
    assert check.verdict is not None and check.verdict.kind is FindingKind.CRASH


def test_silence_after_a_valid_request_is_a_hang() -> None:
    check = BurstCheck([metadata(1)])
    check.on_timeout(500)
    assert check.verdict is not None and check.verdict.kind is FindingKind.HANG
    garbage = sent_of(resize(metadata(1).frame + b"\x01"), RequestKind.MUTATED)
    check = BurstCheck([garbage])
    check.on_timeout(500)
    assert (check.outcome, check.verdict) == (Outcome.SILENT_AFTER_INVALID, None)


def test_an_undecodable_answer_is_a_malformed_response() -> None:
    check = BurstCheck([metadata(1)])
    check.on_frame(answer(1)[:-3] + b"\xff\xff\xff")
    assert check.verdict is not None and check.verdict.kind is FindingKind.MALFORMED_RESPONSE


def test_a_wrong_correlation_id() -> None:
    check = BurstCheck([metadata(1)])
    check.on_frame(answer(99))
    assert check.verdict is not None and check.verdict.kind is FindingKind.WRONG_CORRELATION_ID


def test_answers_out_of_order_and_an_answer_to_acks_zero_are_protocol_violations() -> None:
    check = BurstCheck([metadata(1), metadata(2)])
    check.on_frame(answer(2))
    assert check.verdict is not None
    assert (check.verdict.kind, check.verdict.index) == (FindingKind.PROTOCOL_VIOLATION, 1)
    check = BurstCheck([acks_zero_produce(1), metadata(2)])
    check.on_frame(answer(1))
    assert check.verdict is not None
    assert (check.verdict.kind, check.verdict.index) == (FindingKind.PROTOCOL_VIOLATION, 0)


def test_a_close_or_silence_after_an_unadvertised_acks_zero_produce_is_not_blamed_on_the_sentinel() -> None:
    produce = encode_request(RequestHeader(correlation_id=1, client_id="t"), ProduceRequest(acks=0), 0)
    unadvertised = sent_of(produce, RequestKind.UNADVERTISED, ProduceRequest(acks=0))
    sentinel = metadata(2)
    check = BurstCheck([unadvertised, sentinel])
    check.on_close()
    assert (check.outcome, check.verdict) == (Outcome.CLOSED_AFTER_INVALID, None)
    check = BurstCheck([unadvertised, sentinel])  # accepted without an answer: only the sentinel's
    check.on_frame(answer(2))
    assert (check.outcome, check.verdict) == (Outcome.ANSWERED, None)
    garbage = sent_of(metadata(1).frame[:-1] + b"\x07", RequestKind.MUTATED)
    check = BurstCheck([garbage, sentinel])  # a mutated request the server did not answer
    check.on_frame(answer(2))
    assert (check.outcome, check.verdict) == (Outcome.ANSWERED, None)
    check = BurstCheck([garbage, sentinel])  # still working on the garbage: not a hang
    check.on_timeout(300)
    assert (check.outcome, check.verdict) == (Outcome.SILENT_AFTER_INVALID, None)
    check = BurstCheck([garbage, sentinel])  # ...or answered, then the sentinel
    check.on_frame(answer(1))
    check.on_frame(answer(2))
    assert (check.outcome, check.verdict) == (Outcome.ANSWERED, None)


def test_a_frame_with_an_inconsistent_size_is_not_waited_for() -> None:
    short = sent_of(metadata(1).frame[:-2], RequestKind.MUTATED)
    assert BurstCheck([short]).outcome is Outcome.INCOMPLETE_SENT


def test_the_server_gone_is_a_crash() -> None:
    garbage = sent_of(b"\x00\x00\x00\x08\x00\x03\x00\x63\x00\x00\x00\x07", RequestKind.MUTATED)
    check = BurstCheck([garbage])
    check.on_close()
    check.server_gone()
    assert check.verdict is not None and check.verdict.server_gone and check.verdict.kind is FindingKind.CRASH


# -- shrinker --------------------------------------------------------------------------------

A, B, C, D = (metadata(i).frame for i in range(4))
BAD = metadata(77).frame


def test_a_culprit_that_fails_alone_shrinks_to_itself() -> None:
    original = Scenario((A, B, C), (D, BAD), 1)
    result = shrink_offline(original, lambda s: BAD in s.burst, lambda f: True, max_trials=3)
    assert (result.prefix, result.burst) == ((), (BAD,))


def test_delta_debugging_keeps_the_prefix_requests_that_matter() -> None:
    original = Scenario((A, B, C, D), (BAD,), 0)

    def reproduces(s: Scenario) -> bool:
        return B in s.prefix and D in s.prefix and BAD in s.burst

    result = shrink_offline(original, reproduces, lambda f: False)
    assert result.prefix == (B, D)


def test_a_flaky_finding_keeps_its_original() -> None:
    original = Scenario((A,), (BAD,), 0)
    shrinker = Shrinker(original, lambda f: True)
    while shrinker.next_candidate() is not None:
        shrinker.tell(False)
    assert not shrinker.reproduced and shrinker.result() == original


def test_byte_shrinking_keeps_admissible_frames_with_consistent_sizes() -> None:
    big = resize(BAD + b"\x55" * 40)
    seen: list[bytes] = []

    def reproduces(s: Scenario) -> bool:
        frame = s.burst[s.culprit]
        seen.append(frame)
        assert int.from_bytes(frame[:4], "big") == len(frame) - 4
        return frame[4:8] == BAD[4:8]

    result = shrink_offline(Scenario((), (big,), 0), reproduces, lambda f: len(f) >= 8, max_trials=2000)
    assert result.burst[0] == bytes([0, 0, 0, 4]) + BAD[4:6] + BAD[6:8]
    assert all(len(f) >= 8 for f in seen)


def test_trials_are_bounded() -> None:
    shrinker = Shrinker(
        Scenario((A, B, C, D), (resize(BAD + bytes(range(1, 200))),), 0), lambda f: True, max_trials=10
    )
    count = 0
    while (candidate := shrinker.next_candidate()) is not None:
        count += 1
        shrinker.tell(len(candidate.burst[candidate.culprit]) >= 150)
    assert count == 10


# -- report ----------------------------------------------------------------------------------


def test_the_report_round_trips_through_json() -> None:
    finding = Finding(
        kind=FindingKind.HANG,
        detail="no response",
        api_key=3,
        api_version=1,
        request_kind=RequestKind.GENERATED,
        original=Scenario((A,), (B, BAD), 1),
        shrunk=Scenario((), (BAD,), 0),
        occurrences=3,
        request_number=17,
        versions=(4,),
    )
    assert finding.versions == (1, 4)
    report = Report(target="127.0.0.1:9092", seed=5, requests=100, elapsed_s=2.5, advertised=dict(ADVERTISED))
    report.sent = {"generated": 90, "mutated": 10}
    report.outcomes = {"answered": 40}
    report.findings.append(finding)
    again = loads(dumps(report))
    assert again == report
    assert again.findings[0].reproducer.burst == (BAD,)
    text = summary(report)
    assert "hang on Metadata v1" in text and "seen 3x, also v4;" in text and BAD[:8].hex() in text


def test_a_finding_seen_again_counts_the_version_of_its_own_api_only() -> None:
    finding = Finding(
        kind=FindingKind.CRASH,
        detail="closed",
        api_key=3,
        api_version=5,
        request_kind=RequestKind.GENERATED,
        original=Scenario((), (B,), 0),
    )
    again = finding.seen_again(3, 2).seen_again(3, 5).seen_again(18, 1)
    assert again.occurrences == 4 and again.versions == (2, 5) and again.api_version == 5
    assert again.signature == finding.signature == ("crash", 3, False)


@pytest.mark.parametrize("text", ["", "{}", '{"format": "other"}', '{"format": "kafka-wire-fuzz/1"}'])
def test_a_bad_report_is_a_report_error(text: str) -> None:
    with pytest.raises(ReportError):
        loads(text)


# -- purity ----------------------------------------------------------------------------------


def test_the_core_imports_no_io_clock_or_randomness() -> None:
    import ast
    from pathlib import Path

    import kafka_wire.netfuzz

    forbidden = {
        "socket",
        "time",
        "threading",
        "os",
        "random",
        "secrets",
        "asyncio",
        "selectors",
        "subprocess",
    }
    for path in Path(kafka_wire.netfuzz.__file__).parent.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        runtime = [
            n for n in tree.body if not (isinstance(n, ast.If) and "TYPE_CHECKING" in ast.dump(n.test))
        ]
        for node in (sub for top in runtime for sub in ast.walk(top)):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not {n.split(".")[0] for n in names} & forbidden, f"{path.name} imports {names}"


def test_another_request_of_the_burst_that_fails_alone_becomes_the_culprit() -> None:
    original = Scenario((), (A, BAD, C), 0)  # the close was blamed on A, the first unanswered
    shrinker = Shrinker(original, lambda f: False)
    while (candidate := shrinker.next_candidate()) is not None:
        shrinker.tell(BAD in candidate.burst)
    assert shrinker.origin == 1 and shrinker.result().burst == (BAD,)
