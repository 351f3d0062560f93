"""Cases: a case file's TOML (from a file, a string or a dict) with overrides, read and validated by fpdp's own case
reader (the same checks, defaults and messages as `fpdp run CASE --set KEY=VALUE`; docs/parameters.md)."""
import json
import math
import os
import re
import tomllib
from pathlib import Path

from . import _core
from .errors import CaseError

# The names DP-SGD users know, as aliases of the case keys that mean the same thing (docs/python.md, "Names";
# docs/dpsgd.md §1-2). Opacus and dp_accounting: noise_multiplier z is the ratio of the noise's standard deviation to
# the clip norm C, the noise added to the sum of the clipped per-example gradients (fpdp's noise.multiplier);
# max_grad_norm is C (noisy_gd.clip_norm); sample_rate (Opacus) and sampling_probability (dp_accounting) are the
# Poisson sampling rate, which implies Poisson batches (batch.rate with batch.sampling = "poisson"). Not aliased,
# because fpdp's nearest key means something else: Opacus' batch_size (the expected Poisson batch, rate x n; fpdp's
# batch.size is a cyclic batch's size), epochs, and any target epsilon (an output of fpdp, not an input).
ALIASES = {
    "noise_multiplier": (("noise.multiplier", None),),
    "max_grad_norm": (("noisy_gd.clip_norm", None),),
    "sample_rate": (("batch.sampling", "poisson"), ("batch.rate", None)),
    "sampling_probability": (("batch.sampling", "poisson"), ("batch.rate", None)),
}

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_literal(value):
    """A Python value as one TOML literal: numbers (a float as the shortest text that reads back to it, inf and nan
    as TOML spells them), booleans, strings, lists and dicts (inline tables); NumPy scalars and arrays too."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):  # NumPy scalars and arrays
        value = value.tolist()
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)  # a TOML basic string: the same escapes
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_literal(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_toml_key(k)} = {toml_literal(v)}" for k, v in value.items()) + "}"
    raise CaseError(f"{value!r} ({type(value).__name__}) has no TOML form; allowed: numbers, booleans, strings, "
                    f"lists and dicts of them")


def _toml_key(key):
    key = str(key)
    return key if _BARE_KEY.match(key) else json.dumps(key, ensure_ascii=False)


def toml_document(tables):
    """A dict of tables ({"noise": {"sigma": 0.5}, ...}) as a TOML document; nested dicts become sub-tables."""
    lines = []

    def emit(prefix, table):
        scalars = {k: v for k, v in table.items() if not isinstance(v, dict)}
        subtables = {k: v for k, v in table.items() if isinstance(v, dict)}
        if prefix and (scalars or not subtables):
            lines.append(f"[{'.'.join(_toml_key(p) for p in prefix)}]")
        for k, v in scalars.items():
            lines.append(f"{_toml_key(k)} = {toml_literal(v)}")
        if scalars and prefix:
            lines.append("")
        for k, v in subtables.items():
            emit(prefix + [k], v)

    emit([], tables)
    return "\n".join(lines) + "\n"


def normalise_overrides(overrides=None, **keywords):
    """Overrides as a list of (dotted key, TOML literal): from a dict of dotted keys ({"noise.sigma": 0.5}) and from
    keywords, where `noise__sigma=0.5` is noise.sigma and the aliases of ALIASES name their keys. A key set twice
    takes the last value, as `--set` does."""
    items = list((overrides or {}).items()) + list(keywords.items())
    pairs = []
    for key, value in items:
        if key in ALIASES:
            for target, fixed in ALIASES[key]:
                pairs.append((target, toml_literal(fixed if fixed is not None else value)))
            continue
        pairs.append((key.replace("__", "."), toml_literal(value)))
    return pairs


class Case:
    """A case: its TOML text, the file it is read as (relative `data.file` paths are resolved against that file's
    folder; messages name it) and overrides, each a (dotted key, TOML literal) applied as `--set` applies them.

    Make one with `Case.from_file`, `Case.from_string`, `Case.from_dict` (or `load_case`, which takes any of them)
    and change keys with `with_overrides`; nothing is validated until it is used (`validate`, `resolved`, `run`)."""

    def __init__(self, text, path, overrides=()):
        self.text = text
        self.path = str(path)
        self.overrides = list(overrides)

    @classmethod
    def from_file(cls, path):
        """A case file, read as the command line reads it (CaseError with its message when it cannot be)."""
        text = _core.read_case_source(str(path))
        return cls(text, Path(path).resolve())

    @classmethod
    def from_string(cls, text, path=None):
        """TOML text; `path`: the file it stands for (default: case.toml in the working directory)."""
        return cls(text, Path(path).resolve() if path else Path.cwd() / "case.toml")

    @classmethod
    def from_dict(cls, tables, path=None):
        """A dict of tables, as the case file's TOML would parse: {"case": {"name": ...}, "noise": {"sigma": 0.5}}."""
        return cls.from_string(toml_document(tables), path)

    def with_overrides(self, overrides=None, **keywords):
        """A new case with more overrides (see normalise_overrides): dotted keys, `table__key` or the aliases."""
        return Case(self.text, self.path, self.overrides + normalise_overrides(overrides, **keywords))

    def _resolution(self):
        return _core.resolve_case(self.text, self.path, self.overrides)

    def validate(self):
        """Reads the case as `fpdp check` does before the solver (raises CaseError with the reader's message)."""
        self._resolution()
        return self

    @property
    def resolved(self):
        """Every key of the case with its defaults, as a dict (the run's parameters.toml)."""
        return tomllib.loads(self._resolution()["resolved_toml"])

    @property
    def resolved_toml(self):
        return self._resolution()["resolved_toml"]

    @property
    def name(self):
        return self._resolution()["name"]

    def toml(self):
        """The case text with the overrides applied, relative data files made absolute: a case file that reads the
        same from any folder."""
        return _core.overridden_case_text(self.text, self.path, self.overrides)

    def __repr__(self):
        shown = ", ".join(f"{k}={v}" for k, v in self.overrides)
        return f"Case({self.path!r}{', ' + shown if shown else ''})"


def load_case(case):
    """A Case from a Case, a path to a TOML file (str or os.PathLike), TOML text, or a dict of tables."""
    if isinstance(case, Case):
        return case
    if isinstance(case, dict):
        return Case.from_dict(case)
    if isinstance(case, os.PathLike):
        return Case.from_file(case)
    if isinstance(case, str):
        # TOML text has a line break or a key = value; a file name has neither.
        if "\n" in case or ("=" in case and not case.endswith(".toml")):
            return Case.from_string(case)
        return Case.from_file(case)
    raise TypeError(f"a case is a Case, a path to a TOML file, TOML text or a dict of tables, not "
                    f"{type(case).__name__}")
