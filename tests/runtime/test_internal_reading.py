"""The next stage reads an internal partition's messages as the records they hold: each
once, in order, with its own offset, key and event time; a dead letter names the
message and the record's place in it and carries that record's bytes alone."""

from __future__ import annotations

from collections import Counter
from typing import Any

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.api.specs import Flow
from laminar_kafka.control.records import Watermark
from laminar_kafka.formats import InternalFormat
from laminar_kafka.formats.internal_batch import BATCH_MARKER, SPAN, unpack_batch
from laminar_kafka.kafka.dead_letter_format import DeadLetterOrigin
from laminar_kafka.operators.base import DeadLetter
from laminar_kafka.operators.record import Record
from laminar_kafka.plan.stages import plan_stages
from laminar_kafka.runtime.task.internal_reading import InternalBatch
from laminar_kafka.runtime.task.processing import FlowRunner
from laminar_kafka.runtime.task.side_outputs import write_dead_letters
from laminar_kafka.testing.memory_log import MemoryMessage
from tests.runtime.recorded_output import RecordedOutput, Written

JSON = JsonFormat()
FMT = InternalFormat()
DLQ = "p.dlq"


def _stages(pipeline: Pipeline) -> tuple[list[Flow], list[Flow], str]:
    first, second = plan_stages(pipeline).stages
    (internal,) = pipeline.internal_topics
    return list(first.flows), list(second.flows), internal


def _crossed(out: RecordedOutput, internal: str, partition: int) -> list[MemoryMessage]:
    """What stage 1 wrote to `partition` of `internal`, as the messages stage 2 reads."""
    mine = [w for w in out.pending if w.topic == internal and _partition(w) == partition]
    return [MemoryMessage(internal, partition, i, w.key, w.value, 1000) for i, w in enumerate(mine)]


def _partition(w: Written) -> int:
    return int(w.headers[0][1]) if w.headers else 0  # type: ignore[arg-type]


def _count_by_key(with_errors: bool = False) -> Pipeline:
    pipeline = Pipeline("p")

    def add(count: int, v: dict[str, Any]) -> int:
        if with_errors and v["id"] % 7 == 3:
            raise ValueError(f"bad {v['id']}")
        return count + 1

    (
        pipeline.source("in")
        .key_by(lambda v: v["k"])
        .aggregate(lambda: 0, add)
        .sink("out", key=lambda v: str(v["key"]))
    )
    return pipeline


def _first_stage(flows: list[Flow], internal: str, values: list[dict[str, Any]]) -> RecordedOutput:
    out = RecordedOutput()
    runner = FlowRunner(flows, {"in": 1, internal: 1}, DLQ)
    batch = [MemoryMessage("in", 0, i, None, JSON.encode_one(v), 0) for i, v in enumerate(values)]
    runner.run(("in", 0), batch, {}, out)
    return out


def test_every_record_of_a_batch_reaches_the_next_stage_once_in_order() -> None:
    values = [{"id": i, "k": f"k{i % 5}"} for i in range(300)]
    first, second, internal = _stages(_count_by_key())
    out = _first_stage(first, internal, values)
    messages = _crossed(out, internal, 0)
    assert len(messages) == 1 and messages[0].value().startswith(BATCH_MARKER)  # type: ignore[union-attr]

    runner = FlowRunner(second, {internal: 1, "out": 1}, DLQ)
    result = RecordedOutput()
    runner.run((internal, 0), messages, {}, result)
    counts = [JSON.decode_one(w.value) for w in result.pending if w.topic == "out"]
    assert len(counts) == 300 and runner.counts.records_in == 300
    last = {c["key"]: c["value"] for c in counts}
    assert last == Counter(v["k"] for v in values)


def test_a_dead_letter_names_its_message_and_place_and_carries_its_own_bytes() -> None:
    values = [{"id": i, "k": "a"} for i in range(20)]
    first, second, internal = _stages(_count_by_key(with_errors=True))
    messages = _crossed(_first_stage(first, internal, values), internal, 0)
    runner = FlowRunner(second, {internal: 1, "out": 1}, DLQ)
    result = RecordedOutput()
    runner.run((internal, 0), messages, {}, result)
    letters = [w for w in result.pending if w.topic == DLQ]
    assert len(letters) == 3  # ids 3, 10, 17
    for letter, record_id in zip(letters, (3, 10, 17), strict=True):
        origin = DeadLetterOrigin.from_headers(letter.headers)  # type: ignore[arg-type]
        assert (origin.topic, origin.partition, origin.offset) == (internal, 0, 0)
        assert origin.reason.endswith(f"(record {record_id} of its message)")
        assert origin.index == record_id
        assert f"bad {record_id}" in origin.reason
        assert FMT.decode_one(letter.value) == {"id": record_id, "k": "a"}
        assert letter.key == b"a"
    assert len([w for w in result.pending if w.topic == "out"]) == 17


def test_a_bad_message_is_one_dead_letter_and_single_records_of_before_are_read() -> None:
    _, second, internal = _stages(_count_by_key())
    batch = RecordedOutput()
    first, _, _ = _stages(_count_by_key())
    batch = _first_stage(first, internal, [{"id": i, "k": "b"} for i in range(3)])
    (good,) = _crossed(batch, internal, 0)
    old = FMT.encode_one({"id": 9, "k": "b"})  # one record per message, as written before
    bad = BATCH_MARKER + b"\x93\x91"
    messages = [
        MemoryMessage(internal, 0, 0, b"b", old, 1000),
        MemoryMessage(internal, 0, 1, None, bad, 1000),
        MemoryMessage(internal, 0, 2, None, good.value(), 1000),
    ]
    runner = FlowRunner(second, {internal: 1, "out": 1}, DLQ)
    result = RecordedOutput()
    runner.run((internal, 0), messages, {}, result)
    counts = [JSON.decode_one(w.value)["value"] for w in result.pending if w.topic == "out"]
    assert counts == [1, 2, 3, 4]
    (letter,) = [w for w in result.pending if w.topic == DLQ]
    origin = DeadLetterOrigin.from_headers(letter.headers)  # type: ignore[arg-type]
    assert origin.offset == 1 and letter.value == bad
    assert origin.reason.startswith("undecodable value: invalid batch of internal records")


def test_record_views_after_a_repartition_see_each_records_key_time_and_offset() -> None:
    pipeline = Pipeline("p")
    seen: list[Record] = []

    def look(record: Record) -> Any:
        seen.append(record)
        return record.value

    (
        pipeline.source("in", timestamp="ts")
        .key_by(lambda v: v["k"])
        .count()
        .map(look, metadata=True)
        .sink("out")
    )
    first, second, internal = _stages(pipeline)
    values = [{"id": i, "k": f"k{i}", "ts": 5000 + i} for i in range(4)]
    messages = _crossed(_first_stage(first, internal, values), internal, 0)
    runner = FlowRunner(second, {internal: 1, "out": 1}, DLQ)
    runner.run((internal, 0), messages, {}, RecordedOutput())
    assert [(r.value["key"], r.key, r.timestamp, r.offset) for r in seen] == [
        (f"k{i}", f"k{i}".encode(), 5000 + i, i) for i in range(4)
    ]


def test_records_are_named_by_message_offset_times_span_plus_index() -> None:
    first, _, internal = _stages(_count_by_key())
    (message,) = _crossed(_first_stage(first, internal, [{"id": 1, "k": "x"}] * 3), internal, 0)
    moved = MemoryMessage(internal, 0, 7, None, message.value(), 1000)
    read = InternalBatch([moved], FMT)
    assert read.offsets == [7 * SPAN, 7 * SPAN + 1, 7 * SPAN + 2]
    record = read.at(7 * SPAN + 2)
    assert record is not None and (record.kafka_offset, record.index) == (7, 2)
    assert read.at(7 * SPAN + 3) is None and read.at(8 * SPAN) is None
    assert [r.offset() for r in read] == read.offsets and len(unpack_batch(moved.value())[2]) == 3


def test_results_and_records_of_earlier_batches_name_a_message_offset_in_dead_letters() -> None:
    """A window closed by a writer's Watermark record after a repartition stands under an
    offset of the internal partition too: its dead letter names a message offset."""
    pipeline = Pipeline("p")

    def emit(key: str, window: Any, count: int) -> dict[str, Any]:
        if key == "bad":
            raise ValueError("no result for bad")
        return {"key": key, "count": count}

    (
        pipeline.source("in", timestamp="ts")
        .key_by(lambda v: v["k"])
        .tumbling_window(10)
        .aggregate(lambda: 0, lambda c, v: c + 1, emit)
        .sink("out")
    )
    first, second, internal = _stages(pipeline)
    values = [{"id": i, "k": k, "ts": 1000 + i} for i, k in enumerate(["good", "bad"] * 3)]
    (message,) = _crossed(_first_stage(first, internal, values), internal, 0)
    runner = FlowRunner(second, {internal: 1, "out": 1}, DLQ)
    result, states = RecordedOutput(), {}
    moved = MemoryMessage(internal, 0, 40, None, message.value(), 1000)
    runner.run((internal, 0), [moved], states, result)
    assert not [w for w in result.pending if w.topic in ("out", DLQ)]  # still open
    mark = Watermark("p", 1, 0, 60_000)
    runner.on_watermark((internal, 0), mark, frozenset({0}), states, result, 41)
    (out,) = [JSON.decode_one(w.value) for w in result.pending if w.topic == "out"]
    assert out == {"key": "good", "count": 3}
    (letter,) = [w for w in result.pending if w.topic == DLQ]
    origin = DeadLetterOrigin.from_headers(letter.headers)  # type: ignore[arg-type]
    assert (origin.topic, origin.offset) == (internal, 41)
    assert "no result for bad" in origin.reason


def test_a_late_record_names_its_message_and_its_place_in_it() -> None:
    pipeline = Pipeline("p")
    (
        pipeline.source("in", timestamp="ts")
        .key_by(lambda v: v["k"])
        .tumbling_window(10, late_to="late")
        .count()
        .sink("out")
    )
    first, second, internal = _stages(pipeline)
    values = [{"id": i, "k": "a", "ts": t} for i, t in enumerate([60_001, 60_002, 1_000, 60_003])]
    (message,) = _crossed(_first_stage(first, internal, values), internal, 0)
    runner = FlowRunner(second, {internal: 1, "out": 1, "late": 1}, DLQ)
    result: RecordedOutput = RecordedOutput()
    states: dict[str, Any] = {}
    mark = Watermark("p", 1, 0, 30_000)  # the window of 1,000 closed
    runner.on_watermark((internal, 0), mark, frozenset({0}), states, result, -1)
    moved = MemoryMessage(internal, 0, 5, None, message.value(), 1000)
    runner.run((internal, 0), [moved], states, result)
    (late,) = [w for w in result.pending if w.topic == "late"]
    headers = dict(late.headers or [])
    assert headers["laminar.source.topic"] == internal
    assert (headers["laminar.source.offset"], headers["laminar.source.index"]) == ("5", "2")
    assert FMT.decode_one(late.value)["id"] == 2


def test_a_record_held_from_an_earlier_batch_names_its_message_offset() -> None:
    """A record an as-of join held in state, released by a later watermark, is no longer
    among the messages read: its dead letter still names its message, not its own offset."""
    out = RecordedOutput()
    held = DeadLetter("p.k.repartition", 0, 12 * SPAN + 7, "asof_join raised ValueError: x")
    write_dead_letters(DLQ, [held], (), out, {}, internal=True)
    (letter,) = out.pending
    origin = DeadLetterOrigin.from_headers(letter.headers)  # type: ignore[arg-type]
    assert origin.offset == 12 and letter.value is None


def test_a_poll_of_many_messages_is_decoded_a_few_at_a_time(monkeypatch: Any) -> None:
    from laminar_kafka.runtime.task import processing
    from laminar_kafka.runtime.task.internal_reading import RUN_MESSAGES

    sizes: list[int] = []

    class Counted(InternalBatch):
        def __init__(self, messages: Any, fmt: Any) -> None:
            sizes.append(len(messages))
            super().__init__(messages, fmt)

    monkeypatch.setattr(processing, "InternalBatch", Counted)
    first, second, internal = _stages(_count_by_key())
    messages = []
    for n in range(12):
        (one,) = _crossed(_first_stage(first, internal, [{"id": n, "k": "z"}] * 3), internal, 0)
        messages.append(MemoryMessage(internal, 0, n, None, one.value(), 1000))
    runner = FlowRunner(second, {internal: 1, "out": 1}, DLQ)
    result = RecordedOutput()
    runner.run((internal, 0), messages, {}, result)
    counts = [JSON.decode_one(w.value)["value"] for w in result.pending if w.topic == "out"]
    assert counts == list(range(1, 37)) and runner.counts.records_in == 36
    assert sizes == [RUN_MESSAGES, RUN_MESSAGES, 12 - 2 * RUN_MESSAGES]
