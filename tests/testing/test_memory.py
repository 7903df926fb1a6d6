"""run_pipeline and PipelineTester: the example pipelines in memory, dead letters, crashes."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from laminar_kafka import AvroFormat, JsonFormat, Pipeline
from laminar_kafka.api.loader import load_pipeline
from laminar_kafka.errors import CheckpointError, ConfigError, PipelineError
from laminar_kafka.operators.partitioning import murmur2_partition
from laminar_kafka.testing import (
    DeadLetterRecord,
    PipelineTester,
    Raw,
    compare_outputs,
    run_pipeline,
)
from laminar_kafka.testing.orders import order

EXAMPLES = Path(__file__).resolve().parents[2] / "pipelines"


@pytest.fixture(scope="module")
def enrich() -> Pipeline:
    return load_pipeline(str(EXAMPLES / "orders_enrich.py"))


@pytest.fixture(scope="module")
def totals() -> Pipeline:
    return load_pipeline(str(EXAMPLES / "customer_totals.py"))


def running_totals(orders: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What customer_totals must emit, computed without the framework."""
    state: dict[str, tuple[int, int]] = {}
    out = []
    for o in orders:
        n, amount = state.get(o["customer"], (0, 0))
        state[o["customer"]] = (n + 1, amount + o["amount"])
        out.append(
            {"customer": o["customer"], "orders": n + 1, "amount": amount + o["amount"],
             "last_id": o["id"]}
        )  # fmt: skip
    return out


def by_customer(outputs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for out in outputs:
        grouped.setdefault(out["customer"], []).append(out)
    return grouped


# -- run_pipeline ----------------------------------------------------------------------


def test_stateless_example_filters_and_enriches(enrich: Pipeline) -> None:
    orders = [order(i) for i in range(50)] + [{**order(50), "amount": 0}, order(51)]
    out = run_pipeline(enrich, {"orders": orders})
    expected = [
        {**o, "total_with_tax": round(o["amount"] * 1.2)} for o in orders if o["amount"] > 0
    ]
    assert out == {"orders-enriched": expected}  # no dead-letter topic when nothing failed


def test_keyed_example_one_partition_emits_running_totals(totals: Pipeline) -> None:
    orders = [order(i, customers=7) for i in range(300)]
    out = run_pipeline(totals, {"orders": orders})
    assert out == {"customer-totals": running_totals(orders)}


def test_keyed_example_routes_each_customer_to_its_murmur2_partition(totals: Pipeline) -> None:
    orders = [order(i, customers=13) for i in range(400)]
    out = run_pipeline(totals, {"orders": orders}, partitions=4)
    # A misrouted record would be a dead letter ("belongs to partition ..."): none are.
    assert set(out) == {"customer-totals"}
    assert by_customer(out["customer-totals"]) == by_customer(running_totals(orders))
    # Output is listed partition by partition, in offset order within each.
    partitions = [murmur2_partition(o["customer"].encode(), 4) for o in out["customer-totals"]]
    assert partitions == sorted(partitions)
    assert len(set(partitions)) > 1


def test_batches_give_the_same_output_as_single_records(totals: Pipeline) -> None:
    orders = {"orders": [order(i) for i in range(250)]}
    assert run_pipeline(totals, orders, 3, batch_size=64) == run_pipeline(totals, orders, 3)


def test_explicit_keys_place_records_where_a_producer_would(totals: Pipeline) -> None:
    orders = [order(i, customers=5) for i in range(20)]
    keys = ["c0"] * len(orders)  # every record in c0's partition, whatever its customer
    out = run_pipeline(totals, {"orders": orders}, 3, keys={"orders": keys})
    home = murmur2_partition(b"c0", 3)
    misplaced = [o for o in orders if murmur2_partition(o["customer"].encode(), 3) != home]
    letters = out["customer-totals.dlq"]
    assert [d.offset for d in letters] == [orders.index(o) for o in misplaced]
    assert all(d.partition == home and "belongs to partition" in d.reason for d in letters)
    placed = [o for o in orders if o not in misplaced]
    assert out["customer-totals"] == running_totals(placed)


# -- dead letters ----------------------------------------------------------------------


def test_undecodable_record_is_a_dead_letter_with_its_bytes(enrich: Pipeline) -> None:
    out = run_pipeline(enrich, {"orders": [order(1), Raw(b"not avro"), order(2)]})
    assert [o["id"] for o in out["orders-enriched"]] == [1, 2]
    (letter,) = out["orders-enrich.dlq"]
    assert isinstance(letter, DeadLetterRecord)
    assert (letter.source_topic, letter.partition, letter.offset) == ("orders", 0, 1)
    assert letter.value == b"not avro"
    assert letter.reason.startswith("undecodable value")


def test_bad_avro_bodies_in_a_batch_are_dead_letters_and_the_rest_decode(enrich: Pipeline) -> None:
    # Batches of 8 go through the generated decoder, which gives a bad batch up to
    # record-by-record decoding: each bad body gets its own reason and offset.
    fmt = AvroFormat.from_schema("order")
    good = fmt.encode_one(order(3))
    assert good is not None and fmt.decode_all is not None
    too_long = good[:10] + b"\xff" * 10 + b"\x02" + good[11:]  # an id beyond 64 bits
    bad = {4: good[:-1], 9: good + b"\x00", 10: too_long}
    orders = [Raw(bad[i]) if i in bad else order(i) for i in range(16)]
    out = run_pipeline(enrich, {"orders": orders}, batch_size=8)
    assert [o["id"] for o in out["orders-enriched"]] == [i for i in range(16) if i not in bad]
    reasons = {d.offset: d.reason for d in out["orders-enrich.dlq"]}
    assert sorted(reasons) == [4, 9, 10]
    assert "1 trailing bytes" in reasons[9]
    assert "varint longer than 64 bits" in reasons[10]
    assert all(r.startswith("undecodable value: ") for r in reasons.values())


def test_user_function_that_raises_sends_only_its_record_to_dead_letters() -> None:
    pipeline = Pipeline("ratios")
    (
        pipeline.source("numbers", value_format=JsonFormat())
        .map(lambda v: {"n": v["n"], "inverse": 100 // v["n"]})
        .sink("inverses")
    )
    tester = PipelineTester(pipeline)
    tester.send("numbers", [{"n": 4}, {"n": 0}, {"n": 5}])
    tester.checkpoint()
    assert tester.output("inverses") == [{"n": 4, "inverse": 25}, {"n": 5, "inverse": 20}]
    (letter,) = tester.dead_letters()
    assert letter.offset == 1 and letter.value == b'{"n":0}'
    assert letter.reason.startswith("map raised ZeroDivisionError")
    assert tester.output(tester.dead_letter_topic) == [letter]


# -- the tester: crashes and restores --------------------------------------------------

Step = Callable[[PipelineTester], None]


def _send(first: int, last: int) -> Step:
    return lambda t: t.send("orders", [order(i, customers=7) for i in range(first, last)])


def _checkpoint(t: PipelineTester) -> None:
    t.checkpoint()


def _crash(t: PipelineTester) -> None:
    t.crash()


SCENARIOS: dict[str, list[Step]] = {
    "crash before any checkpoint": [_send(0, 40), _crash, _send(40, 90), _checkpoint],
    "crash after each checkpoint": [
        _send(0, 30), _checkpoint, _crash, _send(30, 60), _checkpoint, _crash, _send(60, 90),
    ],
    "crash mid-epoch, twice in a row": [
        _send(0, 25), _checkpoint, _send(25, 50), _crash, _crash, _send(50, 70), _checkpoint,
        _send(70, 80), _crash, _send(80, 90),
    ],
    "crash with no new input, then checkpoint replays": [
        _send(0, 45), _checkpoint, _send(45, 90), _crash, _checkpoint, _crash,
    ],
}  # fmt: skip


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_committed_output_after_crashes_equals_a_crash_free_run(
    totals: Pipeline, name: str
) -> None:
    expected = run_pipeline(totals, {"orders": [order(i, customers=7) for i in range(90)]}, 3)
    tester = PipelineTester(totals, partitions=3)
    for step in SCENARIOS[name]:
        step(tester)
    tester.checkpoint()
    assert tester.outputs() == expected
    assert compare_outputs(expected["customer-totals"], tester.output("customer-totals")).exact


def test_crash_drops_uncommitted_output_and_state(totals: Pipeline) -> None:
    tester = PipelineTester(totals)
    tester.send("orders", [order(0), order(10)])  # customer c0 twice
    tester.checkpoint()
    tester.send("orders", [order(20)])
    assert len(tester.output("customer-totals")) == 2  # not committed yet
    tester.crash()
    assert len(tester.output("customer-totals")) == 2
    tester.checkpoint()  # replays order 20 from the restored state: its third order, once
    assert [o["orders"] for o in tester.output("customer-totals")] == [1, 2, 3]


def test_wrong_use_is_reported(totals: Pipeline) -> None:
    tester = PipelineTester(totals)
    with pytest.raises(ConfigError, match="does not read topic"):
        tester.send("order", [order(1)])
    with pytest.raises(ConfigError, match="does not write topic"):
        tester.output("totals")
    with pytest.raises(PipelineError, match="input #1 for orders cannot be encoded as avro"):
        tester.send("orders", [order(1), {"id": 1}])
    tester.checkpoint()
    assert tester.output("customer-totals") == []  # the good value was not sent either
    with pytest.raises(ConfigError, match="does not read"):
        PipelineTester(totals, partitions={"other": 2})


# -- redeploy: a new version of the pipeline resumes from the checkpoint ------------------


def _add(t: dict[str, int], o: dict[str, Any]) -> dict[str, int]:
    return {"orders": t["orders"] + 1, "amount": t["amount"] + o["amount"], "last_id": o["id"]}


def _emit(customer: str, t: dict[str, int]) -> dict[str, Any]:
    return {"customer": customer, **t}


def _totals_v(
    *,
    clicks_first: str = "",
    key: str = "customer",
    sink: str = "customer-totals",
    name: str | None = None,
    key_by_name: str | None = None,
) -> Pipeline:
    """customer_totals over JSON; `clicks_first` adds a clicks flow in front of it."""
    p = Pipeline("totals")
    if clicks_first == "stateless":
        p.source("clicks").map(lambda c: {**c, "seen": True}).sink("clicks-seen")
    elif clicks_first == "stateful":
        p.source("clicks").key_by("user").count().sink("clicks-per-user")
    initial = {"orders": 0, "amount": 0, "last_id": -1}
    keyed = p.source("orders").key_by(key, name=key_by_name)  # repartitions: 2 stages
    keyed.aggregate(initial.copy, _add, _emit, name=name).sink(sink, key="customer")
    return p


ORDERS = [order(i, customers=5) for i in range(60)]


@pytest.mark.parametrize("clicks_first", ["stateless", "stateful"])
def test_state_survives_a_restart_with_a_flow_added_in_front(clicks_first: str) -> None:
    tester = PipelineTester(_totals_v(), partitions=3)
    tester.send("orders", ORDERS[:30])
    tester.checkpoint()
    tester.send("orders", ORDERS[30:40])  # after the checkpoint: replayed by the new version
    tester.redeploy(_totals_v(clicks_first=clicks_first), partitions=2)
    tester.send("clicks", [{"user": 1}, {"user": 1}])
    tester.send("orders", ORDERS[40:])
    tester.checkpoint()
    # The aggregate goes on from its checkpointed totals, not from zero, and the
    # added flow (even a stateful one, now flow 1) takes none of its state.
    assert by_customer(tester.output("customer-totals")) == by_customer(running_totals(ORDERS))
    if clicks_first == "stateless":
        assert tester.output("clicks-seen") == [{"user": 1, "seen": True}] * 2
    else:
        assert tester.output("clicks-per-user") == [{"key": 1, "value": 1}, {"key": 1, "value": 2}]


def test_redeploy_with_a_pinned_name_keeps_state_when_the_sink_topic_changes() -> None:
    # The key_by is named too: else its internal topic (in the signature) follows the sink.
    tester = PipelineTester(_totals_v(key_by_name="by-customer"))
    tester.send("orders", ORDERS[:20])
    tester.checkpoint()
    old_name = "orders>customer-totals/aggregate-1"
    tester.redeploy(_totals_v(sink="totals-v2", name=old_name, key_by_name="by-customer"))
    tester.send("orders", ORDERS[20:])
    tester.checkpoint()
    expected = running_totals(ORDERS)
    assert tester.outputs() == {"totals-v2": expected[20:]}  # the totals go on from order 20
    assert tester.output("customer-totals") == expected[:20]  # the first version's output


def test_redeploy_refuses_a_changed_key_and_leaves_the_tester_as_it_was() -> None:
    tester = PipelineTester(_totals_v())
    tester.send("orders", ORDERS[:20])
    checkpoint = tester.checkpoint()
    tester.send("orders", ORDERS[20:25])
    with pytest.raises(CheckpointError) as info:
        tester.redeploy(_totals_v(key="id"))
    through = "through totals.orders_customer-totals_key_by-1.repartition"
    assert (
        f"changed since checkpoint {checkpoint} in a way its state cannot follow: step "
        "'orders>customer-totals/aggregate-1' changed: it was aggregate by field 'customer' "
        f"(murmur2) {through}, it is now aggregate by field 'id' (murmur2) {through}"
    ) in str(info.value)
    with pytest.raises(
        CheckpointError, match=r"step 'orders>customer-totals/aggregate-1' .* is gone"
    ):
        tester.redeploy(_totals_v(sink="renamed"))
    tester.checkpoint()  # still the first version, its pending output intact
    assert tester.output("customer-totals") == running_totals(ORDERS[:25])


def test_redeploy_needs_the_same_pipeline_name() -> None:
    tester = PipelineTester(_totals_v())
    other = Pipeline("other")
    other.source("orders").sink("out")
    with pytest.raises(ConfigError, match="redeploy needs the same pipeline name"):
        tester.redeploy(other)
