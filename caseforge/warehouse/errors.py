"""Why the warehouse cannot be used as asked: each an ordinary reason said in one line (exit 2), not a crash."""
from __future__ import annotations


class WarehouseError(RuntimeError):
    """The warehouse cannot be used as asked, for an ordinary reason said in one line (exit 2): not a crash."""


class WarehouseBusy(WarehouseError):
    """Another process holds the DuckDB file (DuckDB allows a single writer, or readers)."""


class WarehouseCorrupt(WarehouseError):
    """The file is not a DuckDB database, or DuckDB found it damaged."""


class WarehouseTooNew(WarehouseError):
    """ops.migrations names a migration this caseforge does not have: a newer caseforge made the warehouse."""


class QueryStopped(WarehouseError):
    """An ad-hoc query stopped at one of its bounds (time, memory), or to let a waiting run have the file."""
