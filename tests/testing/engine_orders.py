"""The two-stage product totals of JSON orders that the in-process engine tests run:
the pipeline, its input written into a `MemoryBroker`, its output read back."""

from __future__ import annotations

from typing import Any

from laminar_kafka import JsonFormat, Pipeline
from laminar_kafka.testing.memory_broker import MemoryBroker
from laminar_kafka.testing.memory_ports import MemoryReader
from laminar_kafka.testing.orders import order

SOURCE = "orders"
JSON = JsonFormat()
PARTITIONS = 3


def product_totals(name: str, sink: str) -> Pipeline:
    """Orders partitioned by customer, repartitioned by product, running totals."""
    pipeline = Pipeline(name)
    (
        pipeline.source(SOURCE, value_format=JSON, partitioned_by="customer")
        .key_by("product", name="by-product")
        .aggregate(
            initial=lambda: {"orders": 0, "amount": 0, "last_id": -1},
            add=lambda total, o: {
                "orders": total["orders"] + 1,
                "amount": total["amount"] + o["amount"],
                "last_id": o["id"],
            },
            emit=lambda product, total: {"product": product, **total},
        )
        .sink(sink, value_format=JSON, key="product")
    )
    return pipeline


def send_orders(broker: MemoryBroker, ids: range) -> None:
    """Orders `ids` into the source, partitioned by id, keyed by customer."""
    for i in ids:
        o = order(i)
        broker.append((SOURCE, i % PARTITIONS), JSON.encode_one(o), o["customer"].encode())


def read_output(broker: MemoryBroker, sink: str) -> list[Any]:
    """Every committed record of `sink`, decoded."""
    reader = MemoryReader(broker, "reader", 100_000)
    reader.assign({(sink, p): 0 for p in range(broker.partitions(sink))})
    return [JSON.decode_one(m.value()) for m in reader.poll(0)]
