"""Timer example: an alert when a sensor sends nothing for 5 minutes (of event time).

Each reading moves its sensor's timer to its time plus 5 minutes; when the
watermark reaches a timer, the sensor has been silent that long, and
`on_timer` emits {sensor, last_seen, silent_since}. The state per sensor is its
last reading's time, dropped with the alert (a sensor that stays silent leaves
nothing behind); its next reading starts over.

A reading may itself show the silence before the watermark does (readings may
arrive up to 10 s out of order, so the watermark lags them): its sensor's timer
is still pending, and `on_reading` emits the alert itself as it moves the timer.
Either way one alert per silence. A partition without readings for a minute stops
holding the watermark back (`idle_timeout`), so a sensor that went quiet with
all the others around it is reported too.

Run it:  laminar-kafka run pipelines/silent_sensors.py --bootstrap 127.0.0.1:9092
"""

from typing import Any

from laminar_kafka import AvroFormat, JsonFormat, Pipeline
from laminar_kafka.operators import ProcessContext

SILENCE_MS = 5 * 60_000


def alert(sensor: str, last_seen: int) -> dict[str, Any]:
    return {"sensor": sensor, "last_seen": last_seen, "silent_since": last_seen + SILENCE_MS}


def on_reading(sensor: str, reading: dict[str, Any], ctx: ProcessContext) -> list[Any]:
    last_seen = ctx.state
    if last_seen is not None and ctx.timestamp <= last_seen:
        return []  # an older reading, out of order: the timer stands
    out = []
    if last_seen is not None:
        ctx.delete_timer(last_seen + SILENCE_MS)
        if ctx.timestamp >= last_seen + SILENCE_MS:  # silent, and the watermark lags
            out.append(alert(sensor, last_seen))
    ctx.state = ctx.timestamp
    ctx.set_timer(ctx.timestamp + SILENCE_MS)
    return out


def on_silence(sensor: str, ctx: ProcessContext) -> list[Any]:
    last_seen = ctx.state
    ctx.state = None
    return [alert(sensor, last_seen)]


pipeline = Pipeline("silent-sensors")

(
    pipeline.source(
        "readings",
        value_format=AvroFormat.from_schema("reading"),
        partitioned_by="sensor",
        timestamp="ts",
        max_out_of_order=10,
        idle_timeout=60,
    )
    .key_by("sensor")
    .process(on_reading, on_timer=on_silence, name="silence")
    .sink("silent-sensors", value_format=JsonFormat(), key="sensor", timestamp="silent_since")
)


if __name__ == "__main__":  # `python` or `spark-submit` this file [run options]
    from laminar_kafka.cli.script import run_this_file

    run_this_file(__file__)
