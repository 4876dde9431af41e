"""Values an agent wrote, read as data: no name in them is ever resolved, and every read is bounded.

A framework's serializer rebuilds objects by name: LangGraph's msgpack
extension types carry ``(module, name, arguments)`` and its reader imports the
module and calls the name; a pickle does the same through ``find_class``. A
store written by a hostile agent can therefore name ``os.system``. chaos reads
such values without importing anything: an object becomes a ``Record`` (the
names it gave, and its arguments as plain values), and only objects of the
modules a store adapter allows are read at all; any other name makes chaos
blind (exit 2, naming the type), never a call.

What is read is bounded too: a value's bytes (``MAX_BYTES``), its nesting
(``MAX_DEPTH``) and the items it expands to (``MAX_ITEMS``: a pickle's shared
references build, in a kilobyte, a structure whose text is exponential), so a
hostile store ends in a refusal that names the bound, never in an unbounded
loop inside chaos or a traceback.
"""

from __future__ import annotations

import io
import json
import pickle
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, ClassVar

MAX_BYTES = 64 * 1024 * 1024  # one value: a checkpoint, a step's output, a saved run state
MAX_DEPTH = 200  # nesting of containers inside one value
MAX_ITEMS = 1_000_000  # containers and scalars one value expands to, shared references counted each time


class Blind(Exception):
    """What the framework could read and chaos cannot (it says what, and what to change): no verdict."""


@dataclass(frozen=True)
class Record:
    """An object a serializer would have built, kept as the names it gave and the data it held: ``args``
    (positional), ``fields`` (keyword, or a model's dump). Nothing of ``module`` is imported."""

    module: str
    name: str
    args: tuple[Any, ...] = ()
    fields: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.fields.get(key, default)


def allowed(module: str, modules: Iterable[str]) -> bool:
    """``module`` is one of ``modules`` or inside one of them (a package names what is under it)."""
    return any(module == m or module.startswith(f"{m}.") for m in modules)


def sized(data: bytes | str, what: str) -> None:
    if len(data) > MAX_BYTES:
        raise Blind(f"{what} is {len(data)} bytes; chaos reads at most {MAX_BYTES} bytes of one value")


def bounded(value: Any, what: str) -> Any:
    """``value`` once it is known to nest at most ``MAX_DEPTH`` deep and expand to at most ``MAX_ITEMS``
    items; ``Blind`` otherwise. Iterative, so neither bound is Python's own recursion limit."""
    items = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        items += 1
        if items > MAX_ITEMS:
            raise Blind(
                f"{what} expands to more than {MAX_ITEMS} items (shared references counted each time)"
            )
        if depth > MAX_DEPTH:
            raise Blind(f"{what} nests more than {MAX_DEPTH} deep")
        if isinstance(item, dict):
            stack += [(v, depth + 1) for pair in item.items() for v in pair]
        elif isinstance(item, list | tuple | set | frozenset):
            stack += [(v, depth + 1) for v in item]
        elif isinstance(item, Record):
            stack += [(item.args, depth + 1), (item.fields, depth + 1)]
    return value


def json_value(data: bytes | str, what: str) -> Any:
    """JSON an agent wrote: bounded, and a refusal (``ValueError``) for what is not JSON."""
    sized(data, what)
    try:
        return bounded(json.loads(data), what)
    except RecursionError:
        raise Blind(f"{what} nests deeper than chaos reads") from None


# LangGraph's msgpack extension types (``langgraph.checkpoint.serde.jsonplus``): each but the delta snapshot
# is msgpack of (module, name, argument(s)[, method])
_SINGLE, _POSITIONAL, _KEYWORDS, _METHOD, _PYDANTIC_V1, _PYDANTIC_V2, _NUMPY, _DELTA = range(8)


def msgpack_value(data: bytes, modules: Iterable[str], what: str) -> Any:
    """LangGraph's msgpack, each extension type a ``Record`` if its module is among ``modules``."""
    import ormsgpack  # LangGraph's own msgpack library (the langgraph extra)

    readable = tuple(modules)
    refused: list[Blind] = []  # ormsgpack wraps what the hook raises: the first refusal is kept here

    def unpack(raw: bytes) -> Any:
        return ormsgpack.unpackb(raw, ext_hook=hook, option=ormsgpack.OPT_NON_STR_KEYS)

    def hook(code: int, raw: bytes) -> Any:
        try:
            if code == _DELTA:
                return unpack(raw)
            if code > _DELTA or code == _NUMPY:
                raise Blind(f"{what} holds a msgpack extension type {code}, which chaos does not decode")
            parts = unpack(raw)
            if not isinstance(parts, list | tuple) or len(parts) < 3:
                raise Blind(f"{what} holds a malformed msgpack extension type {code}")
            module, name, given = str(parts[0]), str(parts[1]), parts[2]
            if not allowed(module, readable):
                raise Blind(f"{what} holds a {module}.{name}, which chaos does not decode")
            if code in (_KEYWORDS, _PYDANTIC_V1, _PYDANTIC_V2) and isinstance(given, dict):
                return Record(module, name, fields={str(k): v for k, v in given.items()})
            if code == _POSITIONAL and isinstance(given, list | tuple):
                return Record(module, name, tuple(given))
            return Record(module, name, (given,))
        except Blind as err:
            refused.append(err)
            raise

    sized(data, what)
    try:
        return bounded(unpack(data), what)
    except (ValueError, TypeError) as err:
        if refused:
            raise refused[0] from None
        raise Blind(f"{what} is no msgpack chaos reads ({err})") from None


def json_records(data: bytes | str, modules: Iterable[str], what: str) -> Any:
    """LangChain's JSON (``{"lc": 1|2, "type": "constructor", "id": [module..., name], "kwargs": {...}}``),
    each constructor a ``Record`` if its module is among ``modules``."""
    readable = tuple(modules)

    def hook(value: dict[str, Any]) -> Any:
        ident = value.get("id")
        if (
            value.get("type") != "constructor"
            or "lc" not in value
            or not isinstance(ident, list)
            or not ident
        ):
            return value
        module, name = ".".join(str(i) for i in ident[:-1]), str(ident[-1])
        if not allowed(module, readable):
            raise Blind(f"{what} holds a {module}.{name}, which chaos does not decode")
        kwargs = value.get("kwargs")
        args = value.get("args")
        return Record(
            module,
            name,
            tuple(args) if isinstance(args, list) else (),
            kwargs if isinstance(kwargs, dict) else {},
        )

    sized(data, what)
    try:
        return bounded(json.loads(data, object_hook=hook), what)
    except RecursionError:
        raise Blind(f"{what} nests deeper than chaos reads") from None


class Pickled:
    """An object a pickle would have built, read without building it: its class is named, never
    imported, so no code of the app or of its libraries runs in chaos. ``args`` are what the class was
    called (or made) with, ``state`` what was set on the made object."""

    module: ClassVar[str] = ""
    qualname: ClassVar[str] = ""
    args: tuple[Any, ...]
    state: Any

    def __new__(cls, *args: Any, **kwargs: Any) -> Pickled:
        made = object.__new__(cls)
        made.args, made.state = args, None
        return made

    def __setstate__(self, state: Any) -> None:
        self.state = state

    def fields(self) -> dict[str, Any]:
        """The object's attributes: a dataclass's ``__dict__``, slots too."""
        state = self.state
        if isinstance(state, tuple) and len(state) == 2:  # (__dict__ or None, slots)
            state = {**(state[0] or {}), **(state[1] or {})}
        return state if isinstance(state, dict) else {}


@cache
def _pickled(module: str, name: str) -> type[Pickled]:
    return type(name, (Pickled,), {"module": module, "qualname": name})


class _Reader(pickle.Unpickler):
    """Pickle's plain values (containers, strings, numbers), and objects of the modules ``readable``
    names (a package and what is under it) as ``Pickled``; any other class: chaos cannot see it."""

    def __init__(self, data: bytes, readable: tuple[str, ...], opaque: Callable[[str], Blind]) -> None:
        super().__init__(io.BytesIO(data))
        self.readable, self.opaque = readable, opaque

    def find_class(self, module: str, name: str) -> Any:
        if allowed(module, self.readable):
            return _pickled(module, name)
        raise self.opaque(f"a pickled {module}.{name}")


def pickled_value(data: bytes, readable: tuple[str, ...], what: str, opaque: Callable[[str], Blind]) -> Any:
    """A pickle a framework wrote, read without running it: plain values, and objects of the modules
    ``readable`` names as ``Pickled`` (any other class: ``opaque`` says what chaos cannot see); bounded
    (a value too large, too deep or expanding past the bound makes chaos blind), and one that is no
    pickle is unreadable (``ValueError``)."""
    sized(data, what)
    try:
        return bounded(_Reader(data, readable, opaque).load(), what)
    except (pickle.UnpicklingError, EOFError) as err:
        raise ValueError(f"{what} is no pickle: {err or type(err).__name__}") from None
    except (AttributeError, TypeError) as err:  # an object built with more than its class and state
        raise opaque(f"an object it builds in a way chaos does not read ({err})") from None
    except (RecursionError, MemoryError, OverflowError, IndexError, KeyError, struct.error) as err:
        raise Blind(
            f"{what}: a pickle chaos does not read within its bounds ({type(err).__name__})"
        ) from None
