"""A CTranslate2 ``model.bin`` read and written again with its matrices stored as int8.

The recogniser always runs with int8 compute, so CTranslate2 quantizes every matrix of a float16
model each time it loads one. Storing the matrices the way they are then used halves the file
(145 -> 75 MB for Whisper base) and gives the same numbers: the rule is CTranslate2's own (one scale
per row, 127 / the row's largest magnitude, rounded to nearest even, the scale stored beside the
weight as ``<name>_scale``), applied to the 2-D ``weight`` variables, which are the ones its int8
compute quantizes. Convolutions, layer norms and position encodings stay as they are, since int8
compute keeps them in float too.

The file: a uint32 format version, the spec's name, a uint32 spec revision, the variables (name,
rank, shape, type id, byte count, bytes) and the aliases (name, name of the variable it shares),
all little-endian, strings prefixed with a uint16 length that counts their closing NUL.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

#: CTranslate2's type ids, in the order of its DataType enum.
TYPES = ("float32", "int8", "int16", "int32", "float16", "bfloat16")
#: The format versions whose layout this module knows (version 6 is CTranslate2 4's).
KNOWN_VERSIONS = range(2, 7)


class ModelFileError(ValueError):
    """The file is not a CTranslate2 model this module can read."""


@dataclass
class Variable:
    name: str
    shape: tuple[int, ...]
    type: str
    data: bytes | memoryview


@dataclass
class ModelFile:
    version: int
    spec: str
    revision: int
    variables: list[Variable]
    aliases: list[tuple[str, str]]


def read_model(path: Path) -> ModelFile:
    return _read(path, memoryview(path.read_bytes()), copy=True)


def mapped_model(path: Path) -> ModelFile:
    """The file's variables as views of the file mapped into memory, not copies: reading a few of
    a large model's variables costs only their pages."""
    mapped = np.memmap(path, dtype=np.uint8, mode="r")
    return _read(path, memoryview(mapped), copy=False)  # type: ignore[arg-type]


def _read(path: Path, data: memoryview, copy: bool) -> ModelFile:
    position = 0

    def take(layout: str) -> tuple[int, ...]:
        nonlocal position
        values = struct.unpack_from("<" + layout, data, position)
        position += struct.calcsize("<" + layout)
        return values

    def text() -> str:
        nonlocal position
        (length,) = take("H")
        value = bytes(data[position : position + length - 1]).decode("utf-8")
        position += length
        return value

    try:
        (version,) = take("I")
        if version not in KNOWN_VERSIONS:
            raise ModelFileError(f"{path}: CTranslate2 model format {version} is not one this reads")
        spec = text()
        (revision,) = take("I")
        (count,) = take("I")
        variables = []
        for _ in range(count):
            name = text()
            (rank,) = take("B")
            shape = take("I" * rank)
            type_id, size = take("BI")
            stored = data[position : position + size]
            variables.append(Variable(name, shape, TYPES[type_id], bytes(stored) if copy else stored))
            position += size
        (alias_count,) = take("I")
        aliases = [(text(), text()) for _ in range(alias_count)]
    except (struct.error, IndexError, UnicodeDecodeError) as error:
        raise ModelFileError(f"{path}: not a whole CTranslate2 model file ({error})") from None
    return ModelFile(version, spec, revision, variables, aliases)


def write_model(model: ModelFile, path: Path) -> None:
    with path.open("wb") as out:

        def text(value: str) -> None:
            encoded = value.encode("utf-8")
            out.write(struct.pack("<H", len(encoded) + 1) + encoded + b"\0")

        out.write(struct.pack("<I", model.version))
        text(model.spec)
        out.write(struct.pack("<II", model.revision, len(model.variables)))
        for variable in model.variables:
            text(variable.name)
            out.write(struct.pack(f"<B{len(variable.shape)}I", len(variable.shape), *variable.shape))
            out.write(struct.pack("<BI", TYPES.index(variable.type), len(variable.data)))
            out.write(variable.data)
        out.write(struct.pack("<I", len(model.aliases)))
        for alias, target in model.aliases:
            text(alias)
            text(target)


def _is_matrix_weight(variable: Variable) -> bool:
    return (
        variable.name.endswith("/weight")
        and len(variable.shape) == 2
        and variable.type in ("float32", "float16", "bfloat16")
    )


def quantize_int8(model: ModelFile) -> ModelFile:
    """The same model with each matrix weight stored as int8 rows and their float32 scales."""
    variables: list[Variable] = []
    for variable in model.variables:
        if not _is_matrix_weight(variable):
            variables.append(variable)
            continue
        if variable.type == "bfloat16":  # numpy has no bfloat16: its bits are float32's upper half
            raw = np.frombuffer(variable.data, dtype=np.uint16).astype(np.uint32) << 16
            weight = raw.view(np.float32).reshape(variable.shape)
        else:
            weight = np.frombuffer(variable.data, dtype=variable.type).reshape(variable.shape)
        weight = weight.astype(np.float32)
        largest = np.abs(weight).max(axis=1)
        largest[largest == 0] = 127.0
        scale = (np.float32(127.0) / largest).astype(np.float32)
        rows = np.rint(weight * scale[:, None]).astype(np.int8)
        variables.append(Variable(variable.name, variable.shape, "int8", rows.tobytes()))
        variables.append(Variable(variable.name + "_scale", (variable.shape[0],), "float32", scale.tobytes()))
    return ModelFile(model.version, model.spec, model.revision, variables, list(model.aliases))


def store_int8(source: Path, target: Path) -> None:
    """Write ``source`` (a float model.bin) to ``target`` with its matrices as int8."""
    write_model(quantize_int8(read_model(source)), target)
