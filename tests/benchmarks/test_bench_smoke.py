"""The ceiling benchmark on a few records: counts and output content, not speed."""

from __future__ import annotations

from collections import defaultdict

import pytest

from benchmarks.baselines.transactional_loop import run_transactional_loop
from benchmarks.ceiling import run_ceiling
from benchmarks.preload import preload
from benchmarks.records import VALUE_SIZE, decode_count, decode_record, encode_record, make_record
from benchmarks.verify import check_output, count_topic, read_topic
from laminar_kafka.errors import PipelineError
from laminar_kafka.testing import TopicFactory

RECORDS = 2_000
PARTITIONS = 2


def test_every_record_encodes_to_value_size() -> None:
    for record_id in (0, 1, 63, 64, 8191, 8192, RECORDS - 1, 10**9, 2**40):
        record = make_record(record_id)
        encoded = encode_record(record)
        assert len(encoded) == VALUE_SIZE
        assert decode_record(encoded) == record


def test_check_output_rejects_a_duplicate_and_a_wrong_value() -> None:
    good = []
    for record_id in range(20):
        record = make_record(record_id)
        if record_id % 10:
            mapped = {**record, "key": record["key"].upper(), "amount": record["amount"] * 2}
            good.append((mapped["key"].encode(), encode_record(mapped)))
    check_output("stateless", good, 20)

    duplicated = [*good[:-1], good[0]]
    with pytest.raises(PipelineError, match="twice"):
        check_output("stateless", duplicated, 20)

    key, value = good[3]
    wrong = decode_record(value)
    wrong["amount"] += 1
    with pytest.raises(PipelineError, match="expected"):
        check_output("stateless", [*good[:3], (key, encode_record(wrong)), *good[4:]], 20)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_ceiling_phases_process_every_record_exactly_once(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    report = run_ceiling(
        kafka_bootstrap,
        RECORDS,
        PARTITIONS,
        make_topic=topic_factory.create,
        commit_interval_s=0.2,
        progress=False,
    )

    assert [row.records for row in report.rows] == [RECORDS] * 4
    assert report.txn_loop.records_out == RECORDS - RECORDS // 10
    assert report.txn_keyed.records_out == RECORDS
    assert all(row.seconds > 0 for row in report.rows)
    assert report.txn_loop.latencies_s and report.txn_keyed.latencies_s
    assert report.summary_line().startswith("produce_rps=")

    stateless = read_topic(kafka_bootstrap, report.stateless_topic)
    by_id = {}
    for key, value in stateless:
        record = decode_record(value)
        assert key == record["key"].encode()
        assert record["id"] not in by_id
        by_id[record["id"]] = record
    expected = {}
    for record_id in range(RECORDS):
        if record_id % 10 == 0:
            continue
        source = make_record(record_id)
        expected[record_id] = {
            "id": record_id,
            "key": source["key"].upper(),
            "amount": source["amount"] * 2,
            "payload": source["payload"],
        }
    assert by_id == expected

    # One input partition per key and one writer: per key, ids ascend and counts run 1, 2, ...
    seen: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for key, value in read_topic(kafka_bootstrap, report.keyed_topic):
        record = decode_count(value)
        assert key == record["key"].encode()
        seen[record["key"]].append((record["id"], record["count"]))
    ids_by_key: dict[str, list[int]] = defaultdict(list)
    for record_id in range(RECORDS):
        ids_by_key[make_record(record_id)["key"]].append(record_id)
    assert seen.keys() == ids_by_key.keys()
    for name, ids in ids_by_key.items():
        assert seen[name] == [(record_id, n) for n, record_id in enumerate(ids, start=1)]


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_loop_commits_many_small_transactions_without_loss_or_duplicate(
    kafka_bootstrap: str, topic_factory: TopicFactory
) -> None:
    records = 1_000
    source = preload(kafka_bootstrap, records, 3, make_topic=topic_factory.create, progress=False)
    assert count_topic(kafka_bootstrap, source) == records
    sink = topic_factory.create("bench-out", 3)

    result = run_transactional_loop(
        kafka_bootstrap,
        source,
        sink,
        3,
        commit_interval_s=0.0,
        workload="keyed",
        batch_size=50,
        progress=False,
    )

    assert result.records == records
    assert result.records_out == records
    assert result.commits >= records // 50
    assert len(result.latencies_s) >= result.commits
    # The timed span splits into before the first record, the records, after the last.
    assert result.head_s is not None and result.tail_s is not None and result.cpu_s
    assert result.head_s >= 0 and result.tail_s >= 0
    assert result.head_s + result.tail_s < result.seconds
    check_output("keyed", read_topic(kafka_bootstrap, sink), records)
