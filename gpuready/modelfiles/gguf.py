"""Read a GGUF file's header — metadata and tensor table — without ever reading tensor data.

Layout (GGUF v2/v3, little-endian; https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):
magic "GGUF", version u32, tensor_count u64, kv_count u64, then kv_count pairs (string key,
u32 value type, value), then tensor_count infos (string name, u32 n_dims, u64 dims[n_dims],
u32 ggml type, u64 offset into the data section), then the data section, aligned to
``general.alignment`` (default 32). A string is a u64 length and UTF-8 bytes; an array is a u32
element type, a u64 length and the elements.

A tensor's size follows from its ggml type and shape alone (whole blocks of ``block_size``
elements, ``type_size`` bytes each), so a 40 GB file is summed from its few-MB header. Every
count read from the file is checked against the bytes left before anything is allocated, so a
corrupt header gives a one-line GGUFError, never a MemoryError.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32
MAX_DIMS = 4  # GGML_MAX_DIMS in ggml.h
KEPT_ARRAY_LENGTH = 4096  # longer arrays (tokenizer vocabularies, merges) are summarised, not kept
# Hard caps far above any real file (vocabularies hold ~260k tokens, merges ~500k, the largest
# models ~2k tensors a file), so a corrupt count inside a large file cannot loop for minutes.
MAX_COUNT = 1 << 24
# GGUF spec (ggml/docs/gguf.md, "gguf_string_t key"): a key is at most 65535 bytes long.
MAX_KEY_BYTES = 65_535
MAX_STRING_BYTES = 64 << 20
_CHUNK = 1 << 20


class GGUFError(ValueError):
    """The file is not a GGUF this reader understands; the message says why in one line."""


@dataclass(frozen=True)
class GGMLType:
    name: str
    block_size: int  # elements per block
    type_size: int  # bytes per block


# ggml tensor types: id -> (name, elements per block, bytes per block), as ggml's
# type_traits table gives them (.blck_size, .type_size = sizeof(block_*)) in
# https://github.com/ggml-org/llama.cpp/blob/master/ggml/src/ggml.c, with the block structs in
# ggml/src/ggml-common.h (QK_K = 256). tests/test_gguf.py checks every entry against the
# GGML_QUANT_SIZES table of the gguf Python package (gguf-py/gguf/constants.py).
GGML_TYPES: dict[int, GGMLType] = {
    0: GGMLType("F32", 1, 4),
    1: GGMLType("F16", 1, 2),
    2: GGMLType("Q4_0", 32, 2 + 16),
    3: GGMLType("Q4_1", 32, 2 + 2 + 16),
    6: GGMLType("Q5_0", 32, 2 + 4 + 16),
    7: GGMLType("Q5_1", 32, 2 + 2 + 4 + 16),
    8: GGMLType("Q8_0", 32, 2 + 32),
    9: GGMLType("Q8_1", 32, 4 + 4 + 32),
    10: GGMLType("Q2_K", 256, 2 + 2 + 256 // 16 + 256 // 4),
    11: GGMLType("Q3_K", 256, 2 + 256 // 4 + 256 // 8 + 12),
    12: GGMLType("Q4_K", 256, 2 + 2 + 256 // 2 + 12),
    13: GGMLType("Q5_K", 256, 2 + 2 + 256 // 2 + 256 // 8 + 12),
    14: GGMLType("Q6_K", 256, 2 + 256 // 2 + 256 // 4 + 256 // 16),
    15: GGMLType("Q8_K", 256, 4 + 256 + 256 // 8),
    16: GGMLType("IQ2_XXS", 256, 2 + 256 // 4),
    17: GGMLType("IQ2_XS", 256, 2 + 256 // 4 + 256 // 32),
    18: GGMLType("IQ3_XXS", 256, 2 + 256 // 4 + 256 // 8),
    19: GGMLType("IQ1_S", 256, 2 + 256 // 8 + 256 // 16),
    20: GGMLType("IQ4_NL", 32, 2 + 16),
    21: GGMLType("IQ3_S", 256, 2 + 256 // 4 + 256 // 8 + 256 // 32 + 4),
    22: GGMLType("IQ2_S", 256, 2 + 256 // 4 + 256 // 16),
    23: GGMLType("IQ4_XS", 256, 2 + 2 + 256 // 2 + 256 // 64),
    24: GGMLType("I8", 1, 1),
    25: GGMLType("I16", 1, 2),
    26: GGMLType("I32", 1, 4),
    27: GGMLType("I64", 1, 8),
    28: GGMLType("F64", 1, 8),
    29: GGMLType("IQ1_M", 256, 256 // 8 + 256 // 16 + 256 // 32),
    30: GGMLType("BF16", 1, 2),
    34: GGMLType("TQ1_0", 256, 2 + 4 * 13),
    35: GGMLType("TQ2_0", 256, 2 + 64),
    39: GGMLType("MXFP4", 32, 1 + 16),  # E8M0 scale + 32 packed E2M1 values
    40: GGMLType("NVFP4", 64, 4 + 32),
    41: GGMLType("Q1_0", 128, 2 + 16),
}

# general.file_type values (enum llama_ftype in llama.cpp's include/llama.h) by name; the
# "MOSTLY_" prefix is dropped, as llama-quantize names them.
FILE_TYPES: dict[int, str] = {
    0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1", 10: "Q2_K",
    11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M", 16: "Q5_K_S",
    17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S", 22: "IQ3_XS",
    23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M", 28: "IQ2_S",
    29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16", 36: "TQ1_0", 37: "TQ2_0",
    38: "MXFP4_MOE", 39: "NVFP4", 40: "Q1_0",
}

# GGUF metadata value types: id -> (name, struct format or None for string/array).
_VALUE_TYPES: dict[int, tuple[str, struct.Struct | None]] = {
    0: ("u8", struct.Struct("<B")),
    1: ("i8", struct.Struct("<b")),
    2: ("u16", struct.Struct("<H")),
    3: ("i16", struct.Struct("<h")),
    4: ("u32", struct.Struct("<I")),
    5: ("i32", struct.Struct("<i")),
    6: ("f32", struct.Struct("<f")),
    7: ("bool", struct.Struct("<B")),
    8: ("string", None),
    9: ("array", None),
    10: ("u64", struct.Struct("<Q")),
    11: ("i64", struct.Struct("<q")),
    12: ("f64", struct.Struct("<d")),
}
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
_MIN_KV_BYTES = 8 + 4 + 1  # empty key, type, one-byte value
_MIN_TENSOR_INFO_BYTES = 8 + 4 + 8 + 4 + 8  # empty name, n_dims, one dim, type, offset


@dataclass(frozen=True)
class ArraySummary:
    """A metadata array too long to keep (a tokenizer vocabulary): its element type and length."""

    element_type: str
    length: int


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[int, ...]  # ggml order: shape[0] is the innermost (contiguous) dimension
    ggml_type: int
    offset: int  # from the start of the data section

    @property
    def type_name(self) -> str:
        return GGML_TYPES[self.ggml_type].name

    @property
    def n_elements(self) -> int:
        return math.prod(self.shape)

    @property
    def n_bytes(self) -> int:
        kind = GGML_TYPES[self.ggml_type]
        return self.n_elements // kind.block_size * kind.type_size


@dataclass(frozen=True)
class GGUFHeader:
    version: int
    metadata: dict[str, Any]
    tensors: tuple[TensorInfo, ...]
    data_offset: int  # where the data section starts
    file_size: int | None

    @property
    def params(self) -> int:
        return sum(t.n_elements for t in self.tensors)

    @property
    def weights_bytes(self) -> int:
        return sum(t.n_bytes for t in self.tensors)

    @property
    def file_type(self) -> str | None:
        """general.file_type by name (e.g. Q4_K_M), None when absent; unknown ids read 'file type N'."""
        value = self.metadata.get("general.file_type")
        if not isinstance(value, int) or isinstance(value, bool):
            return None
        return FILE_TYPES.get(value, f"file type {value}")


class _Cursor:
    """Sequential little-endian reads over a binary stream, buffered, bounds-checked against the file size."""

    def __init__(self, stream: BinaryIO, file_size: int | None) -> None:
        self.stream = stream
        self.file_size = file_size
        self.buffer = b""
        self.pos = 0  # into buffer
        self.base = 0  # file offset of buffer[0]

    @property
    def offset(self) -> int:
        return self.base + self.pos

    def remaining(self) -> int | None:
        return None if self.file_size is None else self.file_size - self.offset

    def need(self, size: int, what: str) -> None:
        left = self.remaining()
        if left is not None and size > left:
            raise GGUFError(f"truncated: {what} at byte {self.offset} needs {size} bytes, the file ends {left} bytes later")
        if len(self.buffer) - self.pos >= size:
            return
        chunk = self.stream.read(max(size - (len(self.buffer) - self.pos), _CHUNK))
        self.base += self.pos
        self.buffer = self.buffer[self.pos :] + chunk
        self.pos = 0
        if len(self.buffer) < size:
            raise GGUFError(f"truncated: {what} at byte {self.offset} runs past the end of the file")

    def unpack(self, fmt: struct.Struct, what: str):
        self.need(fmt.size, what)
        (value,) = fmt.unpack_from(self.buffer, self.pos)
        self.pos += fmt.size
        return value

    def skip(self, size: int, what: str) -> None:
        """Step over bytes; past the buffer, seek instead of reading them."""
        if size <= len(self.buffer) - self.pos or self.file_size is None:
            self.need(size, what)
            self.pos += size
            return
        if size > self.remaining():
            self.need(size, what)  # raises: truncated
        self.base = self.offset + size
        self.buffer, self.pos = b"", 0
        self.stream.seek(self.base)

    def string(self, what: str, keep: bool = True, limit: int | None = None) -> str | None:
        length = self.unpack(_U64, f"length of {what}")
        if length > (limit or MAX_STRING_BYTES):
            raise GGUFError(f"corrupt header: {what} claims {length:,} bytes" + (f" (the format allows {limit:,})" if limit else ""))
        self.need(length, what)
        raw = self.buffer[self.pos : self.pos + length] if keep else b""
        self.pos += length
        return raw.decode("utf-8", errors="replace") if keep else None

    def skip_strings(self, count: int, what: str) -> None:
        """Step over count strings (a tokenizer vocabulary) without decoding them; the hot loop of a header."""
        unpack = _U64.unpack_from
        while count:
            buffer, pos, end = self.buffer, self.pos, len(self.buffer)
            while count and pos + 8 <= end:
                length = unpack(buffer, pos)[0]
                if pos + 8 + length > end:
                    break
                pos += 8 + length
                count -= 1
            self.pos = pos
            if count:  # this string crosses the end of the buffer: the careful path refills and checks it
                self.string(what, keep=False)
                count -= 1

    def count(self, what: str, size: struct.Struct, min_item_bytes: int) -> int:
        """A count from the file, refused when its items could not fit in the rest of the file or pass MAX_COUNT."""
        value = self.unpack(size, what)
        left = self.remaining()
        if left is not None and value > left // min_item_bytes:
            # A plausible count that overruns the file means the file was cut short.
            problem = "truncated" if value <= MAX_COUNT else "corrupt header"
            raise GGUFError(
                f"{problem}: {what} is {value:,}, but at most {left // min_item_bytes:,} could fit in the rest of the file"
            )
        if value > MAX_COUNT:
            raise GGUFError(f"corrupt header: {what} is {value:,}, more than any real file has ({MAX_COUNT:,})")
        return value


def _value(cursor: _Cursor, value_type: int, key: str, depth: int = 0) -> Any:
    if value_type not in _VALUE_TYPES:
        raise GGUFError(f"corrupt header: metadata '{key}' has unknown value type {value_type}")
    name, fmt = _VALUE_TYPES[value_type]
    if fmt is not None:
        value = cursor.unpack(fmt, f"metadata '{key}'")
        return bool(value) if name == "bool" else value
    if name == "string":
        return cursor.string(f"metadata '{key}'")
    if depth > 2:
        raise GGUFError(f"corrupt header: metadata '{key}' nests arrays too deeply")
    element_type = cursor.unpack(_U32, f"metadata '{key}' element type")
    if element_type not in _VALUE_TYPES:
        raise GGUFError(f"corrupt header: metadata '{key}' has unknown element type {element_type}")
    element_name, element_fmt = _VALUE_TYPES[element_type]
    min_bytes = element_fmt.size if element_fmt is not None else (12 if element_name == "array" else 8)
    length = cursor.count(f"length of metadata array '{key}'", _U64, min_bytes)
    if length > KEPT_ARRAY_LENGTH:
        if element_fmt is not None:
            cursor.skip(length * element_fmt.size, f"metadata array '{key}'")
        elif element_name == "string":
            cursor.skip_strings(length, f"an element of metadata array '{key}'")
        else:
            for _ in range(length):
                _value(cursor, element_type, key, depth + 1)
        return ArraySummary(element_name, length)
    return tuple(_value(cursor, element_type, key, depth + 1) for _ in range(length))


def _shown(key: str) -> str:
    """A metadata key as errors quote it: printable, and short (a corrupt file's key can be 64 KiB of junk)."""
    text = "".join(c if c.isprintable() else "?" for c in key[:200])
    return text if len(text) <= 80 and len(key) <= 200 else text[:77] + "..."


def _version(cursor: _Cursor) -> int:
    version = cursor.unpack(_U32, "version")
    if version in SUPPORTED_VERSIONS:
        return version
    if version & 0xFFFF == 0 and (version >> 24) in SUPPORTED_VERSIONS:
        raise GGUFError("big-endian GGUF files are not supported")
    if version == 1:
        raise GGUFError("GGUF version 1 is not supported (convert it again with a current llama.cpp)")
    raise GGUFError(f"unsupported GGUF version {version} (supported: {', '.join(map(str, SUPPORTED_VERSIONS))})")


def _tensor_info(cursor: _Cursor, index: int) -> TensorInfo:
    name = cursor.string(f"name of tensor {index}")
    shown = _shown(name)
    n_dims = cursor.unpack(_U32, f"tensor '{shown}' dimension count")
    if not 1 <= n_dims <= MAX_DIMS:
        raise GGUFError(f"corrupt header: tensor '{shown}' has {n_dims} dimensions (1 to {MAX_DIMS} allowed)")
    shape = tuple(cursor.unpack(_U64, f"tensor '{shown}' shape") for _ in range(n_dims))
    if math.prod(shape) >= 1 << 63:
        raise GGUFError(f"corrupt header: tensor '{shown}' has an impossible shape {shape}")
    ggml_type = cursor.unpack(_U32, f"tensor '{shown}' type")
    if ggml_type not in GGML_TYPES:
        raise GGUFError(f"tensor '{shown}' has ggml type {ggml_type}, which this reader does not know (removed or newer than it)")
    block = GGML_TYPES[ggml_type].block_size
    if shape[0] % block:
        raise GGUFError(f"corrupt header: tensor '{shown}' row of {shape[0]} is not a whole number of {block}-element blocks")
    offset = cursor.unpack(_U64, f"tensor '{shown}' offset")
    return TensorInfo(name=name, shape=shape, ggml_type=ggml_type, offset=offset)


def read_header(stream: BinaryIO, file_size: int | None = None) -> GGUFHeader:
    """Parse magic, version, metadata and tensor infos from a binary stream positioned at the file start."""
    cursor = _Cursor(stream, file_size)
    cursor.need(4, "magic")
    magic = cursor.buffer[:4]
    cursor.pos = 4
    if magic != MAGIC:
        raise GGUFError(f"not a GGUF file: it starts with {magic!r}, not {MAGIC!r}")
    version = _version(cursor)
    tensor_count = cursor.count("tensor count", _U64, _MIN_TENSOR_INFO_BYTES)
    kv_count = cursor.count("metadata count", _U64, _MIN_KV_BYTES)
    metadata: dict[str, Any] = {}
    for index in range(kv_count):
        key = cursor.string(f"metadata key {index}", limit=MAX_KEY_BYTES)
        metadata[key] = _value(cursor, cursor.unpack(_U32, f"metadata '{_shown(key)}' type"), _shown(key))
    tensors = tuple(_tensor_info(cursor, index) for index in range(tensor_count))
    alignment = metadata.get("general.alignment", DEFAULT_ALIGNMENT)
    if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
        raise GGUFError(f"corrupt header: general.alignment {alignment!r} is not a power of two")
    data_offset = -(-cursor.offset // alignment) * alignment
    for tensor in tensors:
        end = data_offset + tensor.offset + tensor.n_bytes
        if file_size is not None and end > file_size:
            raise GGUFError(
                f"truncated: tensor '{_shown(tensor.name)}' ends at byte {end:,} but the file has {file_size:,} bytes (incomplete download?)"
            )
    return GGUFHeader(version=version, metadata=metadata, tensors=tensors, data_offset=data_offset, file_size=file_size)


def read_gguf(path: Path) -> GGUFHeader:
    """Read one GGUF file's header; any failure is a GGUFError naming the file."""
    try:
        with open(path, "rb") as stream:
            size = stream.seek(0, 2)
            stream.seek(0)
            return read_header(stream, size)
    except GGUFError as error:
        raise GGUFError(f"{path}: {error}") from None
    except OSError as error:
        raise GGUFError(f"{path}: cannot read: {error.strerror or error}") from None
