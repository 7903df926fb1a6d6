"""What a stage routed to its internal partitions goes out in as few messages as fit, each
partition's records in order, each message within the topic's limit."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from laminar_kafka.formats import InternalFormat
from laminar_kafka.formats.internal_batch import BATCH_MARKER, MAX_RECORDS, unpack_batch
from laminar_kafka.runtime.task.internal_messages import BATCH_BYTES, Messages, as_messages

FMT = InternalFormat()


def _records(messages: Messages) -> dict[int, list[tuple[Any, bytes | None, int | None]]]:
    """Partition → (value, key, time) of every record, in the order written."""
    values, keys, parts, times = messages
    found: dict[int, list[tuple[Any, bytes | None, int | None]]] = {}
    for i, (data, key, part) in enumerate(zip(values, keys, parts, strict=True)):
        if data is not None and data.startswith(BATCH_MARKER):
            batch_keys, batch_times, batch_values = unpack_batch(data)
            stamps = batch_times or [None] * len(batch_values)
            found.setdefault(part, []).extend(zip(batch_values, batch_keys, stamps, strict=True))
        else:
            stamp = times[i] if times is not None else None
            found.setdefault(part, []).append((FMT.decode_one(data), key, stamp))
    return found


def _routed(
    values: list[Any], parts: list[int]
) -> tuple[list[bytes | None], list[bytes | None], list[int]]:
    return (
        [FMT.encode_one(v) for v in values],
        [f"k{i}".encode() for i in range(len(values))],
        parts,
    )


def test_each_partitions_records_go_in_one_message_in_order() -> None:
    values = [{"id": i} for i in range(10)]
    parts = [i % 3 for i in range(10)]
    times = [1000 + i for i in range(10)]
    out = as_messages(_routed(values, parts), times, 10_000)
    assert sorted(out[2]) == [0, 1, 2] and out[1] == [None] * 3
    assert out[3] == [1009, 1007, 1008]  # each batch's latest event time
    for part, records in _records(out).items():
        ids = [i for i in range(10) if i % 3 == part]
        assert records == [({"id": i}, f"k{i}".encode(), 1000 + i) for i in ids]


def test_messages_fill_up_to_the_limit_and_the_most_records_each() -> None:
    values = [{"pad": "x" * 100, "id": i} for i in range(50)]
    out = as_messages(_routed(values, [0] * 50), None, 1000)
    assert 5 < len(out[0]) < 10 and out[3] is None
    assert all(len(d or b"") <= 1000 for d in out[0])
    assert [v for v, _, _ in _records(out)[0]] == values
    many = as_messages(_routed(list(range(MAX_RECORDS + 1)), [0] * (MAX_RECORDS + 1)), None, None)
    assert len(many[0]) == 2 and len(unpack_batch(many[0][0])[2]) == MAX_RECORDS
    assert max(map(len, many[0])) <= BATCH_BYTES  # type: ignore[arg-type]


def test_json_records_tombstones_and_big_records_go_alone_between_batches() -> None:
    values: list[Any] = [{"id": 0}, {"huge": 2**80}, {"id": 2}, None, {"id": 4}, {"big": "y" * 920}]
    routed = _routed(values, [0] * 6)
    out = as_messages(routed, [10, 11, 12, 13, 14, 15], 950)
    alone = [d for d in out[0] if d is None or not d.startswith(BATCH_MARKER)]
    assert alone == [routed[0][1], None, routed[0][5]]
    assert out[1][1] == b"k1" and out[3] == [10, 11, 12, 13, 14, 15]
    assert [v for v, _, _ in _records(out)[0]] == values


@given(
    st.lists(
        st.tuples(
            st.one_of(st.integers(0, 2**90), st.text(max_size=300), st.none()),
            st.integers(0, 3),
        ),
        max_size=60,
    ),
    st.integers(200, 5000),
)
def test_every_record_comes_out_once_in_its_partitions_order_within_the_limit(
    records: list[tuple[Any, int]], limit: int
) -> None:
    values, parts = [v for v, _ in records], [p for _, p in records]
    routed = _routed(values, parts)
    fits = [i for i, d in enumerate(routed[0]) if len(d or b"") + len(routed[1][i] or b"") <= limit]
    kept = ([routed[0][i] for i in fits], [routed[1][i] for i in fits], [parts[i] for i in fits])
    out = as_messages(kept, list(range(len(fits))), limit)
    assert all(len(d or b"") + len(k or b"") <= limit for d, k in zip(out[0], out[1], strict=True))
    found = _records(out)
    for part in set(kept[2]):
        mine = [i for i in fits if parts[i] == part]
        assert [(v, t) for v, _, t in found[part]] == [(values[i], fits.index(i)) for i in mine]
