"""Just enough of the ONNX protobuf wire format (``onnx.proto3``, IR version 8) to read a model's graph and write a
new one, without the ``onnx`` package or torch."""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import numpy as np

#: ONNX TensorProto.DataType codes and the NumPy types they hold.
DTYPES: dict[int, np.dtype] = {
    1: np.dtype(np.float32),
    2: np.dtype(np.uint8),
    3: np.dtype(np.int8),
    6: np.dtype(np.int32),
    7: np.dtype(np.int64),
    9: np.dtype(np.bool_),
    10: np.dtype(np.float16),
    11: np.dtype(np.float64),
}
CODES = {dtype: code for code, dtype in DTYPES.items()}

_VARINT, _FIXED64, _BYTES, _FIXED32 = 0, 1, 2, 5


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7


def fields(buf: bytes) -> Iterator[tuple[int, int | bytes]]:
    """``(field number, value)`` of every field in a serialized message, in order."""
    pos, end = 0, len(buf)
    while pos < end:
        key, pos = _read_varint(buf, pos)
        number, wire = key >> 3, key & 7
        value: int | bytes
        if wire == _VARINT:
            value, pos = _read_varint(buf, pos)
        elif wire == _BYTES:
            size, pos = _read_varint(buf, pos)
            value, pos = buf[pos : pos + size], pos + size
        elif wire == _FIXED32:
            value, pos = int.from_bytes(buf[pos : pos + 4], "little"), pos + 4
        elif wire == _FIXED64:
            value, pos = int.from_bytes(buf[pos : pos + 8], "little"), pos + 8
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, value


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _packed_varints(value: int | bytes) -> list[int]:
    if isinstance(value, int):
        return [_signed(value)]
    out, pos = [], 0
    while pos < len(value):
        item, pos = _read_varint(value, pos)
        out.append(_signed(item))
    return out


@dataclass
class Node:
    """One graph node: operator, inputs, outputs and the attributes deckhand reads (ints and floats)."""

    op_type: str
    inputs: list[str]
    outputs: list[str]
    attributes: dict[str, float | int] = field(default_factory=dict)


@dataclass
class Graph:
    """The nodes and initializers (as NumPy arrays) of a model's main graph."""

    nodes: list[Node]
    initializers: dict[str, np.ndarray]


def _tensor(buf: bytes) -> tuple[str, np.ndarray]:
    dims: list[int] = []
    name, code, raw = "", 0, b""
    floats: list[float] = []
    ints: list[int] = []
    for number, value in fields(buf):
        if number == 1:
            dims += _packed_varints(value)
        elif number == 2 and isinstance(value, int):
            code = value
        elif number == 8 and isinstance(value, bytes):
            name = value.decode()
        elif number == 9 and isinstance(value, bytes):
            raw = value
        elif number == 4:
            floats += (
                list(struct.unpack(f"<{len(value) // 4}f", value))
                if isinstance(value, bytes)
                else [struct.unpack("<f", value.to_bytes(4, "little"))[0]]
            )
        elif number in (5, 7):
            ints += _packed_varints(value)
        elif number == 13:
            raise ValueError(f"initializer {name or '?'} keeps its data in an external file; not supported")
    dtype = DTYPES.get(code)
    if dtype is None:
        raise ValueError(f"initializer {name}: unsupported ONNX data type {code}")
    if raw:
        array = np.frombuffer(raw, dtype=dtype).copy()
    elif floats:
        array = np.asarray(floats, dtype=dtype)
    else:
        array = np.asarray(ints, dtype=dtype)
    return name, array.reshape(dims)


def _node(buf: bytes) -> Node:
    node = Node("", [], [])
    for number, value in fields(buf):
        if not isinstance(value, bytes):
            continue
        if number == 1:
            node.inputs.append(value.decode())
        elif number == 2:
            node.outputs.append(value.decode())
        elif number == 4:
            node.op_type = value.decode()
        elif number == 5:
            name, attr = "", None
            for sub, item in fields(value):
                if sub == 1 and isinstance(item, bytes):
                    name = item.decode()
                elif sub == 2 and isinstance(item, int):
                    attr = struct.unpack("<f", item.to_bytes(4, "little"))[0]
                elif sub == 3 and isinstance(item, int):
                    attr = _signed(item)
            if attr is not None:
                node.attributes[name] = attr
    return node


def read_graph(data: bytes) -> Graph:
    """The main graph of a serialized ONNX model."""
    graph = Graph([], {})
    for number, value in fields(data):
        if number == 7 and isinstance(value, bytes):
            for sub, item in fields(value):
                if sub == 1 and isinstance(item, bytes):
                    graph.nodes.append(_node(item))
                elif sub == 5 and isinstance(item, bytes):
                    name, array = _tensor(item)
                    graph.initializers[name] = array
    return graph


# -- writing ---------------------------------------------------------------------------


def _varint(value: int) -> bytes:
    if value < 0:
        value += 1 << 64
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(number: int, wire: int) -> bytes:
    return _varint(number << 3 | wire)


def _int(number: int, value: int) -> bytes:
    return _key(number, _VARINT) + _varint(value)


def _bytes(number: int, value: bytes | str) -> bytes:
    data = value.encode() if isinstance(value, str) else value
    return _key(number, _BYTES) + _varint(len(data)) + data


def tensor(name: str, array: np.ndarray) -> bytes:
    """A serialized TensorProto holding ``array`` (little-endian raw data)."""
    array = np.ascontiguousarray(array)
    code = CODES.get(array.dtype)
    if code is None:
        raise ValueError(f"tensor {name}: unsupported dtype {array.dtype}")
    dims = b"".join(_varint(d) for d in array.shape)
    out = _bytes(1, dims) if array.shape else b""
    return out + _int(2, code) + _bytes(8, name) + _bytes(9, array.astype(array.dtype.newbyteorder("<")).tobytes())


def node(
    op_type: str,
    inputs: Sequence[str],
    outputs: Sequence[str],
    *,
    domain: str = "",
    **attributes: int | float | tuple[int, ...],
) -> bytes:
    """A serialized NodeProto; attributes are ints, floats or tuples of ints (the kinds the graph uses)."""
    out = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    out += _bytes(3, f"{op_type}_{outputs[0]}") + _bytes(4, op_type)
    for name, value in attributes.items():
        if isinstance(value, float):
            attr = _bytes(1, name) + _key(2, _FIXED32) + struct.pack("<f", value) + _int(20, 1)
        elif isinstance(value, tuple):
            attr = _bytes(1, name) + b"".join(_int(8, v) for v in value) + _int(20, 7)
        else:
            attr = _bytes(1, name) + _int(3, value) + _int(20, 2)
        out += _bytes(5, attr)
    if domain:
        out += _bytes(7, domain)
    return out


def value_info(name: str, elem_type: int, dims: Sequence[int | str]) -> bytes:
    """A serialized ValueInfoProto: a tensor input or output with fixed or named dimensions."""
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in dims)
    tensor_type = _int(1, elem_type) + _bytes(2, shape)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


def model(
    nodes: Sequence[bytes],
    initializers: Sequence[bytes],
    inputs: Sequence[bytes],
    outputs: Sequence[bytes],
    opsets: dict[str, int],
    *,
    name: str = "graph",
    producer: str = "deckhand",
) -> bytes:
    """A serialized ModelProto (IR version 8) with one graph."""
    graph = b"".join(_bytes(1, n) for n in nodes) + _bytes(2, name)
    graph += b"".join(_bytes(5, t) for t in initializers)
    graph += b"".join(_bytes(11, i) for i in inputs) + b"".join(_bytes(12, o) for o in outputs)
    out = _int(1, 8) + _bytes(2, producer)
    out += _bytes(7, graph)
    for domain, version in opsets.items():
        out += _bytes(8, (_bytes(1, domain) if domain else b"") + _int(2, version))
    return out
