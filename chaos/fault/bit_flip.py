"""``bit-flip``: a crash, and the disk then changes one byte of the newest thing the store wrote: the
first byte of a session log's last line, a byte of a SQLite WAL's last frame (its checksum no longer
holds, and SQLite reads the WAL only up to the frame before), or the first byte of a database file's
last page, or the first byte of the file a store of files written whole renamed into place last
(``chaos.fault.damage``). The crash prefix is saved first. A resume must refuse what it finds (blocked
or failed) or recover without running again an effect whose output was durable and without losing a
durable output: silently resuming from the older state is the failure."""

from __future__ import annotations

from chaos.fault.base import Fault, Stop
from chaos.fault.damage import Damage, bit_flip


class BitFlip(Fault):
    name = "bit-flip"
    summary = "a crash, then one byte of the store's newest line, WAL frame, page or file changes at rest"
    places = "durable"
    on_stores = True
    on_server_stores = False
    enables = ("damage-not-silent",)

    def stop(self, stop: Stop) -> None:
        stop.kill()

    def at_rest(self, files: dict[str, bytes], renamed_last: str | None = None) -> Damage | None:
        return bit_flip(files, renamed_last)
