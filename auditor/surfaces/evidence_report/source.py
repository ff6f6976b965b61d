"""What every table builder reads: the store, the resampling budget, and the runs listed once."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from scoring.runs import read_config
from scoring.stats import DEFAULT_RESAMPLES

RUN_PREFIX = "score-run-"
T = TypeVar("T")


@dataclass
class Evidence:
    """The event store behind one evidence report, with the scoring runs' configurations cached.

    Builders share it so the store's run streams are listed and their configurations read once.
    """

    store: Any
    n_resamples: int = DEFAULT_RESAMPLES
    _configs: dict[str, dict[str, Any]] | None = field(default=None, init=False, repr=False)
    _memo: dict[str, Any] = field(default_factory=dict, init=False, repr=False)

    def memo(self, key: str, compute: Callable[[Any], T]) -> T:
        """``compute(store)`` once per report: several builders read the same projection."""
        if key not in self._memo:
            self._memo[key] = compute(self.store)
        return self._memo[key]  # type: ignore[no-any-return]

    def read(
        self, reader: Callable[[Any, str], tuple[dict[str, Any], Any]], run_id: str
    ) -> tuple[dict[str, Any], list[Any]]:
        """``reader(store, run_id)`` once per report, its rows as a list: one run feeds several
        families (a coalition run its anchors, controls, predictions and elicitation checks). A
        reader's result must depend on the run alone: its qualified name and the run key the memo."""

        def compute(store: Any) -> tuple[dict[str, Any], list[Any]]:
            config, rows = reader(store, run_id)
            return config, list(rows)

        return self.memo(f"{reader.__module__}.{reader.__qualname__}:{run_id}", compute)

    def configs(self) -> dict[str, dict[str, Any]]:
        """Run id → its ``ScoreRunStarted`` configuration, in stream-creation order."""
        if self._configs is None:
            names = [s.removeprefix(RUN_PREFIX) for s in self.store.list_streams(RUN_PREFIX)]
            self._configs = {n: read_config(self.store, n) for n in names}
        return self._configs

    def runs(self, experiment: str) -> list[tuple[str, dict[str, Any]]]:
        """(run id, configuration) of every run of one experiment (a run without one is coalition)."""
        return [(n, c) for n, c in self.configs().items() if c.get("experiment", "coalition") == experiment]
