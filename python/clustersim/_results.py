"""What the package's functions return: the command's ``--json`` documents
as Python values, with attribute access on the keys."""

from __future__ import annotations

from typing import Any, Dict, List, Mapping


class Result(dict):
    """A ``--json`` document: a dict with the command's keys, also readable
    as attributes (``r.iteration_time_s`` is ``r["iteration_time_s"]``);
    nested objects are :class:`Result` too."""

    def __getattr__(self, key: str) -> Any:
        try:
            return self[key]
        except KeyError:
            raise AttributeError(
                f"no key {key!r} in this result (keys: {', '.join(sorted(self))})"
            ) from None

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self))


def as_result(value: Any) -> Any:
    """Turns every JSON object inside ``value`` into a :class:`Result`."""
    if isinstance(value, Mapping):
        return Result({key: as_result(item) for key, item in value.items()})
    if isinstance(value, list):
        return [as_result(item) for item in value]
    return value


def sweep_records(document: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """One flat record per simulated layout of a sweep's ``--json`` file, in
    its ranked order: the layout's keys (``tensor_parallel``, …, ``schedule``)
    first, then the row's measures; a nested measure is flattened with dotted
    names, as ``pandas.json_normalize`` names it
    (``exposed_communication_s.tensor_s``)."""
    records = []
    for row in document.get("results", []):
        record: Dict[str, Any] = {}
        record.update(row.get("layout", {}))
        for key, value in row.items():
            if key == "layout":
                continue
            if isinstance(value, Mapping):
                record.update({f"{key}.{inner}": item for inner, item in value.items()})
            else:
                record[key] = value
        records.append(record)
    return records


def sweep_frame(document: Mapping[str, Any], records: List[Dict[str, Any]]) -> Any:
    """The records as a pandas DataFrame (the sweep's header, counts and
    rejections in ``frame.attrs``), or the records themselves without pandas."""
    try:
        import pandas
    except ImportError:
        return records
    frame = pandas.DataFrame.from_records(records)
    for key in ("schema_version", "sweep", "counts", "rejections", "dropped"):
        if key in document:
            frame.attrs[key] = document[key]
    return frame
