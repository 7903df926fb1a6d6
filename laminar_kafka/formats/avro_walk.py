"""A walker over Avro binary bodies, generated per schema as plain Python.

It finds where a value ends and refuses what the Avro specification does not
allow but fastavro would decode anyway (see `avro_strict`). It runs on the hot
path of every schema with a union, so it is generated as straight-line code:
one function per record, array item, map entry and union branch, with every
primitive inline, about twice as fast as a walker made of one small function
per value. Only counts and generated names enter the generated code, never a
schema's text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from laminar_kafka.errors import RecordDecodeError

_INT_MIN, _INT_MAX = -(1 << 31), (1 << 31) - 1
_PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
_RECORDS = ("record", "error")
_NAMED_KINDS = frozenset({"record", "error", "enum", "fixed", "array", "map"})

Walk = Callable[[bytes, int], int]
"""Walks one value encoded at a position of a buffer; returns the position after it."""


class InvalidEncoding(RecordDecodeError):
    """A body breaks the Avro binary encoding; the message says where it broke."""


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    """The zigzag varint at `pos` and the position after it; more than 64 bits is refused."""
    b = buf[pos]
    n = b & 0x7F
    shift = 7
    while b >= 0x80:
        pos += 1
        b = buf[pos]
        if shift == 63:
            # The tenth byte holds bit 63 only; fastavro would fold the rest into garbage.
            if b > 1:
                raise InvalidEncoding("varint longer than 64 bits")
            n |= b << 63
            break
        n |= (b & 0x7F) << shift
        shift += 7
    return (n >> 1) ^ -(n & 1), pos + 1


# -- the slow halves of the generated code: varints of more than one byte, blocks ---------


def _int_tail(buf: bytes, pos: int) -> int:
    value, pos = _varint(buf, pos)
    if not _INT_MIN <= value <= _INT_MAX:
        raise InvalidEncoding(f"int {value} beyond 32 bits")
    return pos


def _length_tail(buf: bytes, pos: int) -> int:
    size, pos = _varint(buf, pos)
    if size < 0:
        raise InvalidEncoding(f"negative length {size}")
    return pos + size


def _enum_tail(buf: bytes, pos: int, count: int) -> int:
    index, pos = _varint(buf, pos)
    if not 0 <= index < count:
        raise InvalidEncoding(f"enum index {index} outside 0..{count - 1}")
    return pos


def _union_tail(buf: bytes, pos: int, branches: tuple[Walk, ...]) -> int:
    index, pos = _varint(buf, pos)
    if not 0 <= index < len(branches):
        raise InvalidEncoding(f"union branch index {index} outside 0..{len(branches) - 1}")
    return branches[index](buf, pos)


def _blocks(buf: bytes, pos: int, item: Walk) -> int:
    """Array or map blocks: counts, and after a negative count the block's byte size."""
    while True:
        count, pos = _varint(buf, pos)
        if count == 0:
            return pos
        size = None
        if count < 0:
            count = -count
            size, pos = _varint(buf, pos)
        start = pos
        # A huge count ends at the end of the buffer (IndexError), except for items of no
        # width (nulls, empty records): those have nothing to check, so stop at the first.
        for _ in range(count):
            end = item(buf, pos)
            if end == pos:
                break
            pos = end
        if size is not None and pos - start != size:
            raise InvalidEncoding(f"block byte size {size} but its items take {pos - start}")


_HELPERS: dict[str, Any] = {
    f.__name__: f for f in (_int_tail, _length_tail, _enum_tail, _union_tail, _blocks)
} | {"_Invalid": InvalidEncoding}


@dataclass(frozen=True)
class Walker:
    """A schema's generated walk, and what compiling it found out about the schema."""

    walk: Walk
    # Whether every buffer from `start` on is exactly one value (a loop with the value's
    # walk inline: no call per record); raises like `walk` on an invalid one.
    walk_all: Callable[[Sequence[bytes], int], bool]
    always: bool  # the schema has a type only a walk can check (union, enum, boolean...)
    named: Mapping[str, Any]  # its named types by full name


def compile_walker(parsed_schema: Any) -> Walker:
    """Generate the walk of `parsed_schema` (as fastavro's parse_schema returns it)."""
    generator = _Generator()
    entry = generator.walker_of(parsed_schema)
    body: list[str] = []
    if isinstance(parsed_schema, dict) and parsed_schema["type"] in _RECORDS:
        for f in parsed_schema["fields"]:
            generator.inline(f["type"], body, " " * 8)
    else:
        generator.inline(parsed_schema, body, " " * 8)
    generator.source.append(
        "def _walk_all(datas, start):\n    for buf in datas:\n        pos = start\n"
        f"        size = len(buf)\n{''.join(body)}        if pos != size:\n"
        "            return False\n    return True\n"
    )
    namespace = dict(_HELPERS)
    exec("\n".join(generator.source), namespace)
    return Walker(
        namespace[entry], namespace["_walk_all"], generator.always_walk, dict(generator.named)
    )


class _Generator:
    """Writes the source of the functions that walk one schema."""

    def __init__(self) -> None:
        self.source: list[str] = []
        self.named: dict[str, Any] = {}
        self.always_walk = False  # set by the first type that needs it
        self._functions: dict[str, str] = {}  # record name -> its function
        self._made: dict[int, str] = {}  # id of a schema part -> the function that walks it
        self._count = 0

    def walker_of(self, schema: Any) -> str:
        """The generated function that walks one value of `schema` (made once per part)."""
        if isinstance(schema, dict) and schema["type"] in _RECORDS:
            return self._record_function(schema)
        key = id(schema)
        if key not in self._made:
            self._made[key] = self._function(lambda out: self.inline(schema, out, "    "))
        return self._made[key]

    def _function(self, body: Callable[[list[str]], None], name: str | None = None) -> str:
        """Generate `def <name>(buf, pos)` around the lines `body` writes; returns the name."""
        self._count += 1
        name = name or f"_w{self._count}"
        lines: list[str] = []
        body(lines)
        self.source.append(
            f"def {name}(buf, pos):\n    size = len(buf)\n{''.join(lines)}    return pos\n"
        )
        return name

    def _record_function(self, schema: Any) -> str:
        name = schema["name"]
        if name not in self._functions:
            self.named[name] = schema
            # Named before its body is generated: a field may refer back to the record.
            self._count += 1
            function = self._functions[name] = f"_r{self._count}"

            def fields(out: list[str]) -> None:
                for f in schema["fields"]:
                    self.inline(f["type"], out, "    ")

            self._function(fields, function)
        return self._functions[name]

    def inline(self, schema: Any, out: list[str], ind: str) -> None:
        """Write the lines that move `pos` past one value of `schema`."""
        if isinstance(schema, list):
            self._union(schema, out, ind)
            return
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                self._primitive(schema, {}, out, ind)
                return
            schema = self.named[schema]  # a named type defined earlier
        kind = schema["type"]
        if not isinstance(kind, str) or (kind not in _PRIMITIVES and kind not in _NAMED_KINDS):
            self.inline(kind, out, ind)  # {"type": {...}}, {"type": [...]} or a reference
        elif kind in _PRIMITIVES:
            self._primitive(kind, schema, out, ind)
        elif kind in _RECORDS:
            out.append(f"{ind}pos = {self._record_function(schema)}(buf, pos)\n")
        elif kind == "fixed":
            self.named[schema["name"]] = schema
            out.append(_width(int(schema["size"]), ind))
        elif kind == "enum":
            self.named[schema["name"]] = schema
            self.always_walk = True
            count = len(schema["symbols"])
            out.append(
                f"{ind}b = buf[pos]\n{ind}if b < {min(2 * count, 128)} and not b & 1:\n"
                f"{ind}    pos += 1\n{ind}else:\n{ind}    pos = _enum_tail(buf, pos, {count})\n"
            )
        else:  # array or map
            self.always_walk = True
            if kind == "array":
                item = self.walker_of(schema["items"])
            else:

                def entry(o: list[str]) -> None:
                    self._primitive("string", {}, o, "    ")
                    self.inline(schema["values"], o, "    ")

                item = self._function(entry)
            out.append(f"{ind}pos = _blocks(buf, pos, {item})\n")

    def _union(self, branches: list[Any], out: list[str], ind: str) -> None:
        self.always_walk = True
        functions = [self.walker_of(branch) for branch in branches]
        self._count += 1
        table = f"_u{self._count}"
        self.source.append(f"{table} = ({', '.join(functions)},)\n")
        out.append(f"{ind}b = buf[pos]\n")
        # One-byte indexes inline; a longer (overlong, or past 63) or bad one in the tail.
        for index, branch in enumerate(branches[:64]):
            out.append(f"{ind}{'if' if index == 0 else 'elif'} b == {2 * index}:\n")
            out.append(f"{ind}    pos += 1\n")
            self.inline(branch, out, ind + "    ")
        out.append(f"{ind}else:\n{ind}    pos = _union_tail(buf, pos, {table})\n")

    def _primitive(self, kind: str, schema: Any, out: list[str], ind: str) -> None:
        if kind == "boolean":
            self.always_walk = True
            out.append(
                f"{ind}if buf[pos] > 1:\n"
                f'{ind}    raise _Invalid(f"boolean byte {{buf[pos]}} is neither 0 nor 1")\n'
                f"{ind}pos += 1\n"
            )
        elif kind == "int":
            # A logical int (date, time-millis) is converted before check_value could see it.
            self.always_walk |= "logicalType" in schema
            out.append(
                f"{ind}if buf[pos] < 0x80:\n{ind}    pos += 1\n"
                f"{ind}else:\n{ind}    pos = _int_tail(buf, pos)\n"
            )
        elif kind == "long":
            # Skipped in place: the tenth byte may only hold bit 63, an eleventh is refused.
            out.append(
                f"{ind}if buf[pos] < 0x80:\n{ind}    pos += 1\n{ind}else:\n"
                f"{ind}    end = pos + 1\n{ind}    while buf[end] >= 0x80:\n{ind}        end += 1\n"
                f"{ind}    if end - pos >= 9 and (end - pos > 9 or buf[end] > 1):\n"
                f"{ind}        raise _Invalid('varint longer than 64 bits')\n"
                f"{ind}    pos = end + 1\n"
            )
        elif kind in ("bytes", "string"):
            out.append(
                f"{ind}b = buf[pos]\n{ind}if b < 0x80 and not b & 1:\n"
                f"{ind}    pos += 1 + (b >> 1)\n{ind}else:\n{ind}    pos = _length_tail(buf, pos)\n"
                f"{ind}if pos > size:\n{ind}    raise _Invalid('a length runs past the end')\n"
            )
        elif kind in ("float", "double"):
            out.append(_width(4 if kind == "float" else 8, ind))


def _width(width: int, ind: str) -> str:
    return f"{ind}pos += {width}\n{ind}if pos > size:\n{ind}    raise _Invalid('truncated')\n"
