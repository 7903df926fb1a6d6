"""What a record costs to cross an internal topic: encode and decode, per record.

    python -m benchmarks.internal_codec [--batch 1000] [--rounds 7]

In process, no broker. Each codec encodes a batch of records and decodes it
again, a batch at a time as a task does; the table shows the best of
`--rounds` in microseconds per record, and the bytes of one record. Two kinds
of record: the rekey workload's (`records.make_record`: id, key, amount, an
80-character payload) and a typical nested dict (ints, a float, strings, a
list of dicts, a bool, a None). Codecs:

- json: the internal format before (`JsonFormat(strict=True)`, stdlib json);
- internal: `InternalFormat`, MessagePack behind a 2-byte marker (what is used);
- msgpack, orjson: the libraries alone, one record a call;
- avro: `AvroFormat` with a schema derived from the first record (validated on
  encode, as a derived schema must be: fastavro truncates a float in a long);
- pickle: one record a call, and one pickle of the whole batch;
- arrow: Arrow IPC of the whole batch (`Table.from_pylist`, `to_pylist`).

A codec whose library is missing shows `n/a`.
"""

from __future__ import annotations

import argparse
import io
import pickle
import time
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.records import make_record
from laminar_kafka.formats import AvroFormat, InternalFormat, JsonFormat
from laminar_kafka.formats.batch import decode_batch, encode_batch

Codec = tuple[Callable[[list[Any]], Any], Callable[[Any], Any]]
"""Encode a batch, decode what it gave."""


def typical(i: int) -> dict[str, Any]:
    """A typical nested record of an application."""
    return {
        "order_id": i,
        "customer": f"customer-{i % 300}",
        "amount": i * 0.25,
        "currency": "EUR",
        "items": [{"sku": f"sku-{i % 7}", "qty": i % 5 + 1}],
        "paid": i % 2 == 0,
        "note": None,
    }


def _avro_type(value: Any, name: str) -> Any:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "long"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    if isinstance(value, list):
        return {"type": "array", "items": _avro_type(value[0], name + "_item")}
    fields = [{"name": k, "type": _avro_type(v, f"{name}_{k}")} for k, v in value.items()]
    return {"type": "record", "name": name, "fields": fields}


def _format(fmt: Any) -> Codec:
    return (lambda vs: encode_batch(fmt, vs), lambda ds: decode_batch(fmt, ds))


def codecs(first: Any) -> dict[str, Codec | None]:
    """Every codec, given the first record (for the derived Avro schema)."""
    found: dict[str, Codec | None] = {
        "json (before)": _format(JsonFormat(strict=True)),
        "internal (msgpack)": _format(InternalFormat()),
    }
    try:
        import msgpack

        found["msgpack"] = (
            lambda vs: list(map(msgpack.Packer().pack, vs)),
            lambda ds: [msgpack.unpackb(d, strict_map_key=False) for d in ds],
        )
    except ImportError:
        found["msgpack"] = None
    try:
        import orjson

        found["orjson"] = (
            lambda vs: list(map(orjson.dumps, vs)),
            lambda ds: list(map(orjson.loads, ds)),
        )
    except ImportError:
        found["orjson"] = None
    schema = _avro_type(first, "Derived")
    found["avro (derived)"] = _format(AvroFormat(schema, framing="raw", validate=True))
    found["pickle"] = (
        lambda vs: [pickle.dumps(v, 5) for v in vs],
        lambda ds: list(map(pickle.loads, ds)),
    )
    found["pickle (batch)"] = (lambda vs: [pickle.dumps(vs, 5)], lambda ds: pickle.loads(ds[0]))
    try:
        import pyarrow as pa
        import pyarrow.ipc as ipc

        def arrow(vs: list[Any]) -> list[bytes]:
            table = pa.Table.from_pylist(vs)
            sink = io.BytesIO()
            with ipc.new_stream(sink, table.schema) as writer:
                writer.write_table(table)
            return [sink.getvalue()]

        found["arrow (batch)"] = (arrow, lambda ds: ipc.open_stream(ds[0]).read_all().to_pylist())
    except ImportError:
        found["arrow (batch)"] = None
    return found


def _best(run: Callable[[], Any], rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def measure(codec: Codec, batch: list[Any], rounds: int) -> tuple[float, float, float]:
    """Encode and decode microseconds per record, and bytes per record."""
    encode, decode = codec
    datas = encode(batch)
    if decode(datas) != batch:
        raise AssertionError("the codec does not give the records back")
    n = len(batch)
    size = sum(map(len, datas)) / n
    return (
        _best(lambda: encode(batch), rounds) / n * 1e6,
        _best(lambda: decode(datas), rounds) / n * 1e6,
        size,
    )


def table(kinds: dict[str, list[Any]], rounds: int) -> list[str]:
    lines = [f"{'codec':<20}" + "".join(f"{k + ' enc+dec us':>22}{'bytes':>7}" for k in kinds)]
    for name in codecs(next(iter(kinds.values()))[0]):
        cells = []
        for batch in kinds.values():
            codec = codecs(batch[0])[name]
            if codec is None:
                cells.append(f"{'n/a':>22}{'':>7}")
                continue
            enc, dec, size = measure(codec, batch, rounds)
            cells.append(f"{f'{enc:.2f} + {dec:.2f} = {enc + dec:.2f}':>22}{size:>7.0f}")
        lines.append(f"{name:<20}" + "".join(cells))
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.internal_codec")
    parser.add_argument("--batch", type=int, default=1000, help="records per batch")
    parser.add_argument("--rounds", type=int, default=7, help="timed rounds, best shown")
    args = parser.parse_args(argv)
    kinds = {
        "rekey": [make_record(i) for i in range(args.batch)],
        "typical": [typical(i) for i in range(args.batch)],
    }
    print("\n".join(table(kinds, args.rounds)))


if __name__ == "__main__":
    main()
