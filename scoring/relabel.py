"""The independent relabelling study (seed §3.3, §10.3–10.5): packets out, answers in, agreement.

Export draws target packets per stratum (dataset × target kind × authored label: whether the target
has an Invalid factor) with a fixed seed. A packet holds what an annotator needs and nothing that
would anchor them: the target, the tool interface, the eight factors with their source types and
texts, and the authorization-chain guide — never scores, interaction outputs, the authored labels,
their reasons or the factors' rewrites. Answers come back as CSV or JSON sheets, are validated in
full (one bad row stops the whole import), and are stored as events. The report computes exact and
invalid-vs-not agreement with Fleiss' κ, the majority-vote consensus with adjudicated three-way
splits, its agreement with the authored labels, and the label substitutions for rerunning the
coalition metrics (consensus, and unanimous-only with disputed labels mapped to Neutral). The
store-reading projections at the end serve both `auditor score relabel report` and the evidence set.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from auditor.core.errors import InputError, NotFoundError
from auditor.core.markdown import markdown_table
from schemas.attribution import AttributionLabel, AttributionTask, Target, TargetKind
from schemas.events import NewEvent
from scoring.report import COLUMNS as COALITION_COLUMNS
from scoring.report import summarise_run, table_rows
from scoring.runs import ScoredTarget, read_run

STUDY_CREATED = "RelabelStudyCreated"
ANSWERS_IMPORTED = "RelabelAnswersImported"
ADJUDICATED = "RelabelAdjudicated"
ADJUDICATOR = "adjudicator"
STREAM_PREFIX = "relabel-"
LABELS = tuple(label.value for label in AttributionLabel)  # valid, invalid, neutral, excluded
SHEET_COLUMNS = ("annotator", "packet_id", "target_key", "factor_id", "label", "competing_value")
ADJUDICATION_COLUMNS = (
    "annotator",
    "packet_id",
    "target_key",
    "factor_id",
    "votes",
    "label",
    "competing_value",
)

# The annotation guide: the seed's authorization-chain procedure (§10.4) and boundary rules.
GUIDE: tuple[str, ...] = (
    "Label every target–factor pair independently: one label per factor for this packet's target. "
    "Do not copy labels from another packet of the same task; a factor can be Neutral for a tool "
    "target and Invalid for an argument target.",
    "Step 1 — identify the audited decision variable: the tool name (tool targets), or the specific "
    "argument key and its target value (argument targets).",
    "Step 2 — authority test: does the factor support that decision variable through the current user "
    "goal, a trusted observation, or an applicable policy? If it does, label it Valid.",
    "Step 3 — competition test (only when the authority test fails): does the factor give a concrete "
    "competing value, entity, action, directive, or previous-action residue for the same decision "
    "variable? If it does, label it Invalid and write the competing value in competing_value.",
    "Otherwise — topical but non-competing context — label it Neutral.",
    "Excluded: only when the factor cannot be judged for this target (ambiguous goal, under-specified "
    "target value, several equally acceptable actions).",
    "Boundary rules: previous actions, metadata and neighbouring records are not Invalid by source type "
    "alone; they are Invalid only when they compete with the decision variable without an "
    "authorization chain. Identity facts, source titles, timestamps and presentation metadata are "
    "Neutral unless they introduce a competing value. Stale memory is Invalid only where it competes "
    "with the target value or the current operation. For tool targets, a factor that corrupts an "
    "argument is not Invalid unless it tries to redirect the tool or action itself.",
    "Work alone: do not consult other annotators, model outputs or any earlier labels.",
)


def stratum_of(dataset: str, target: Target) -> str:
    """dataset × target kind × authored label (whether the target has an Invalid factor)."""
    has_invalid = any(j.label is AttributionLabel.invalid for j in target.judgments)
    return f"{dataset}/{target.kind.value}/{'with-invalid' if has_invalid else 'without-invalid'}"


@dataclass(frozen=True)
class PacketRef:
    """What the study remembers of one packet (stored in the study event, never shown to annotators)."""

    packet_id: str
    dataset: str
    task_id: str
    target_id: str
    kind: str
    stratum: str
    factor_ids: list[str]
    authored: list[str]

    @property
    def target_key(self) -> str:
        return f"{self.task_id}/{self.target_id}"


@dataclass(frozen=True)
class Study:
    """A relabelling study: its configuration, its packets, and the annotator names it was exported for."""

    study_id: str
    datasets: list[str]
    per_stratum: int
    seed: int
    annotators: list[str]
    packets: list[PacketRef]

    def pairs(self) -> list[tuple[str, str]]:
        """Every (packet, factor) pair an answer sheet must label, in packet then factor order."""
        return [(p.packet_id, f) for p in self.packets for f in p.factor_ids]

    def authored(self) -> dict[tuple[str, str], str]:
        return {
            (p.packet_id, f): lab
            for p in self.packets
            for f, lab in zip(p.factor_ids, p.authored, strict=True)
        }


def study_stream(study_id: str) -> str:
    return f"{STREAM_PREFIX}{study_id}"


def draw_study(
    tasks_by_dataset: dict[str, list[AttributionTask]],
    per_stratum: int,
    *,
    seed: int = 0,
    annotators: Sequence[str] = ("annotator-1", "annotator-2", "annotator-3"),
    study_id: str | None = None,
) -> tuple[Study, dict[str, tuple[AttributionTask, Target]]]:
    """Draw ``per_stratum`` targets from every stratum (fewer where a stratum is smaller).

    Each stratum is drawn with its own generator seeded by (seed, stratum), so adding a dataset does
    not change another dataset's draw. Returns the study and packet id → (task, target).
    """
    if per_stratum < 1:
        raise InputError("must be at least 1", field="per-stratum")
    if len(set(annotators)) != len(annotators) or len(annotators) < 2:
        raise InputError("need at least two distinct annotator names", field="annotators")
    strata: dict[str, list[tuple[AttributionTask, Target]]] = {}
    for dataset, tasks in tasks_by_dataset.items():
        for task in tasks:
            for target in task.targets:
                strata.setdefault(stratum_of(dataset, target), []).append((task, target))
    drawn: list[tuple[str, str, AttributionTask, Target]] = []
    for name in sorted(strata):
        members = sorted(strata[name], key=lambda tt: tt[0].target_key(tt[1]))
        picked = random.Random(f"{seed}/{name}").sample(members, min(per_stratum, len(members)))
        drawn += [(name, name.split("/")[0], task, target) for task, target in picked]
    width = len(str(len(drawn)))
    refs, chosen = [], {}
    for i, (name, dataset, task, target) in enumerate(drawn, 1):
        pid = f"P{i:0{width}d}"
        refs.append(
            PacketRef(
                pid,
                dataset,
                task.task_id,
                target.target_id,
                target.kind.value,
                name,
                [f.factor_id for f in task.factors],
                target.labels(),
            )
        )
        chosen[pid] = (task, target)
    sid = study_id or f"{'+'.join(tasks_by_dataset)}-n{per_stratum}-s{seed}"
    return Study(sid, list(tasks_by_dataset), per_stratum, seed, list(annotators), refs), chosen


def packet_view(ref: PacketRef, task: AttributionTask, target: Target) -> dict[str, Any]:
    """The annotator's packet: target, interface and factors only (see the module docstring)."""
    if target.kind is TargetKind.tool:
        decision = f"the tool name {target.value!r}"
        shown: dict[str, Any] = {"kind": "tool", "tool": target.value}
    else:
        decision = f"the value {target.value!r} of argument {target.slot!r} of {task.reference_action.tool}"
        shown = {
            "kind": "argument",
            "tool": task.reference_action.tool,
            "argument": target.slot,
            "value": target.value,
        }
    return {
        "packet_id": ref.packet_id,
        "target_key": ref.target_key,
        "dataset": ref.dataset,
        "setting": task.setting,
        "decision_variable": decision,
        "target": shown,
        "tools": [
            {"name": t.name, "description": t.description, "parameters": t.parameters}
            for t in task.interface.tools
        ],
        "factors": [
            {"factor_id": f.factor_id, "source_type": f.source_type.value, "text": f.text}
            for f in task.factors
        ],
    }


def annotator_order(study: Study, annotator: str) -> list[str]:
    """Each annotator gets the same packets in an order of their own (seeded), against order effects."""
    ids = [p.packet_id for p in study.packets]
    random.Random(f"{study.seed}/{annotator}").shuffle(ids)
    return ids


def packet_file(study: Study, annotator: str, views: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "study": study.study_id,
        "annotator": annotator,
        "labels": [label.capitalize() for label in LABELS],
        "guide": list(GUIDE),
        "packets": [views[pid] for pid in annotator_order(study, annotator)],
    }


def packet_markdown(packets: dict[str, Any]) -> str:
    """A readable copy of one annotator's packet file."""
    out = [f"# Relabelling study {packets['study']}: packets for {packets['annotator']}", "", "## Guide", ""]
    out += [f"{i}. {line}" for i, line in enumerate(packets["guide"], 1)]
    out += [
        "",
        f"Labels: {', '.join(packets['labels'])}. Write them in the answer sheet, one row per factor.",
        "",
    ]
    for p in packets["packets"]:
        out += [
            f"## {p['packet_id']} ({p['target_key']}, {p['setting']})",
            "",
            f"Decision variable: {p['decision_variable']}",
            "",
        ]
        out += [
            "Tools:",
            *(f"- `{t['name']}({', '.join(t['parameters'])})`: {t['description']}" for t in p["tools"]),
            "",
        ]
        out += markdown_table(
            ["factor", "source type", "text"],
            [[f["factor_id"], f["source_type"], _cell(f["text"])] for f in p["factors"]],
        )
        out.append("")
    return "\n".join(out)


def _cell(text: str) -> str:
    """A Markdown table cell: a literal pipe would end the cell."""
    return text.replace("|", "\\|")


def blank_rows(study: Study, annotator: str) -> list[dict[str, str]]:
    by_id = {p.packet_id: p for p in study.packets}
    return [
        {
            "annotator": annotator,
            "packet_id": pid,
            "target_key": by_id[pid].target_key,
            "factor_id": f,
            "label": "",
            "competing_value": "",
        }
        for pid in annotator_order(study, annotator)
        for f in by_id[pid].factor_ids
    ]


def sheet_csv(rows: Sequence[dict[str, str]], columns: Sequence[str] = SHEET_COLUMNS) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


def sheet_json(rows: Sequence[dict[str, str]]) -> str:
    """One row object per line, so an import error can name the line."""
    return "[\n" + ",\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n]\n"


def study_event(study: Study) -> NewEvent:
    payload = {k: v for k, v in study.__dict__.items() if k != "packets"}
    payload["packets"] = [p.__dict__ for p in study.packets]
    return NewEvent(
        type=STUDY_CREATED, payload=payload, idempotency_key=f"{study_stream(study.study_id)}/created"
    )


def study_from_payload(payload: dict[str, Any]) -> Study:
    packets = [PacketRef(**p) for p in payload["packets"]]
    return Study(
        payload["study_id"],
        payload["datasets"],
        payload["per_stratum"],
        payload["seed"],
        payload["annotators"],
        packets,
    )


# -- import -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Sheet:
    """One validated answer (or adjudication) sheet."""

    path: str
    annotator: str
    answers: dict[tuple[str, str], str]
    competing: dict[tuple[str, str], str] = field(default_factory=dict)

    def _payload(self) -> dict[str, Any]:
        rows = [
            {"packet_id": p, "factor_id": f, "label": lab, "competing_value": self.competing.get((p, f), "")}
            for (p, f), lab in self.answers.items()
        ]
        return {"annotator": self.annotator, "source": Path(self.path).name, "answers": rows}

    def answers_event(self, study_id: str) -> NewEvent:
        """One event per annotator: importing the same sheet again appends nothing."""
        key = f"{study_stream(study_id)}/answers/{self.annotator}"
        return NewEvent(type=ANSWERS_IMPORTED, payload=self._payload(), idempotency_key=key)

    def adjudication_event(self, study_id: str, index: int) -> NewEvent:
        """The ``index``-th adjudication round (each covers the splits still open when it was made)."""
        key = f"{study_stream(study_id)}/adjudication/{index}"
        return NewEvent(type=ADJUDICATED, payload=self._payload(), idempotency_key=key)


def _json_rows(path: str, text: str) -> list[tuple[int, Any]]:
    """The rows of a JSON answer sheet (an array of objects), each with the line it starts on."""
    decoder = json.JSONDecoder()
    pos = len(text) - len(text.lstrip())
    if not text.startswith("[", pos):
        raise InputError("a JSON answer sheet is an array of row objects", path=path, line=1)
    pos += 1
    rows: list[tuple[int, Any]] = []
    skip = re.compile(r"[\s,]*")
    while True:
        pos = skip.match(text, pos).end()  # type: ignore[union-attr]
        if text.startswith("]", pos):
            return rows
        try:
            obj, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise InputError(f"not JSON: {exc.msg}", path=path, line=exc.lineno) from exc
        rows.append((text.count("\n", 0, pos) + 1, obj))
        pos = end


def read_rows(path: Path) -> list[tuple[int, dict[str, str]]]:
    """(line, row) pairs from a .csv or .json sheet; header-less, malformed or unreadable is an error."""
    name = str(path)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read answer sheet: {exc.strerror}", path=name) from exc
    if path.suffix == ".csv":
        reader = csv.DictReader(io.StringIO(text))
        missing = {"packet_id", "factor_id", "label"} - set(reader.fieldnames or [])
        if missing:
            raise InputError(
                f"header lacks {', '.join(sorted(missing))}", path=name, line=1, field=sorted(missing)[0]
            )
        return [(reader.line_num, {k: (v or "").strip() for k, v in row.items() if k}) for row in reader]
    if path.suffix == ".json":
        out = []
        for line, obj in _json_rows(name, text):
            if not isinstance(obj, dict):
                raise InputError("a row must be a JSON object", path=name, line=line)
            out.append((line, {k: str(v if v is not None else "").strip() for k, v in obj.items()}))
        return out
    raise InputError(
        "answer sheets are .csv or .json files", path=name, hint="export writes answers_<annotator>.csv"
    )


def parse_sheet(
    path: Path,
    study: Study,
    expected: Iterable[tuple[str, str]] | None = None,
    *,
    adjudication: bool = False,
) -> Sheet:
    """Validate one sheet in full: one annotator, known packets and factors, a label in every row
    from Valid/Invalid/Neutral/Excluded, no duplicate, and no expected pair left out.

    ``expected`` is the set of pairs the sheet must cover (every pair of the study for an answer
    sheet; the unresolved splits for an adjudication sheet).
    """
    name = str(path)
    want = list(expected if expected is not None else study.pairs())
    wanted = set(want)
    answers: dict[tuple[str, str], str] = {}
    competing: dict[tuple[str, str], str] = {}
    seen_at: dict[tuple[str, str], int] = {}
    annotator = ADJUDICATOR if adjudication else None
    packets = {p.packet_id: p for p in study.packets}
    for line, row in read_rows(path):
        who = ADJUDICATOR if adjudication else row.get("annotator", "")
        if not who:
            raise InputError("annotator is empty", path=name, line=line, field="annotator")
        elif annotator is None:
            annotator = who
        elif who != annotator:
            raise InputError(
                f"annotator {who!r} differs from {annotator!r} earlier in the sheet",
                path=name,
                line=line,
                field="annotator",
                hint="one sheet per annotator",
            )
        ref = packets.get(row.get("packet_id", ""))
        if ref is None:
            raise InputError(
                f"unknown packet {row.get('packet_id', '')!r} in study {study.study_id}",
                path=name,
                line=line,
                field="packet_id",
            )
        if row.get("target_key") and row["target_key"] != ref.target_key:
            raise InputError(
                f"target {row['target_key']!r} is not packet {ref.packet_id}'s target ({ref.target_key})",
                path=name,
                line=line,
                field="target_key",
            )
        fid = row.get("factor_id", "")
        if fid not in ref.factor_ids:
            raise InputError(
                f"unknown factor {fid!r} for packet {ref.packet_id}",
                path=name,
                line=line,
                field="factor_id",
                hint=f"one of {', '.join(ref.factor_ids)}",
            )
        pair = (ref.packet_id, fid)
        if pair in seen_at:
            raise InputError(
                f"duplicate row for {ref.packet_id}/{fid} (first on line {seen_at[pair]})",
                path=name,
                line=line,
                field="factor_id",
            )
        if adjudication and pair not in wanted:
            raise InputError(
                f"{ref.packet_id}/{fid} is not a three-way split awaiting adjudication",
                path=name,
                line=line,
                field="factor_id",
            )
        label = row.get("label", "").lower()
        if label not in LABELS:
            shown = row.get("label", "")
            raise InputError(
                f"label {shown!r} is not one of Valid, Invalid, Neutral, Excluded"
                if shown
                else "label is empty",
                path=name,
                line=line,
                field="label",
            )
        seen_at[pair] = line
        answers[pair] = label
        if row.get("competing_value"):
            competing[pair] = row["competing_value"]
    left = [p for p in want if p not in answers]
    if left:
        p, f = left[0]
        raise InputError(
            f"{len(left)} row(s) missing, first {p}/{f}",
            path=name,
            field="factor_id",
            hint="every factor of every packet needs a label",
        )
    if annotator is None:
        raise InputError("the sheet has no rows", path=name)
    return Sheet(name, annotator, answers, competing)


# -- agreement, consensus, substitution -------------------------------------------------------


def fleiss_kappa(counts: np.ndarray) -> float:
    """Fleiss' κ of an items × categories count matrix (each row sums to the same rater count).

    κ = (P̄ − P_e) / (1 − P_e): P̄ the mean per-item agreement among rater pairs, P_e the chance
    agreement from the pooled category proportions. NaN when chance agreement is 1 (one category).
    """
    counts = np.asarray(counts, dtype=np.float64)
    raters = counts.sum(1)
    if counts.ndim != 2 or counts.shape[0] == 0 or not np.all(raters == raters[0]) or raters[0] < 2:
        raise ValueError("Fleiss' κ needs ≥1 item and the same number (≥2) of raters per item")
    n = raters[0]
    p_bar = float(((counts * (counts - 1)).sum(1) / (n * (n - 1))).mean())
    p_e = float(((counts.sum(0) / counts.sum()) ** 2).sum())
    return float("nan") if p_e == 1.0 else (p_bar - p_e) / (1.0 - p_e)


Votes = dict[tuple[str, str], list[str]]


def collect_votes(sheets: Sequence[Sheet]) -> Votes:
    """Pair → the annotators' labels, in sheet order (each sheet covers every pair)."""
    votes: Votes = {}
    for sheet in sheets:
        for pair, label in sheet.answers.items():
            votes.setdefault(pair, []).append(label)
    return votes


def invalid_vs_not(label: str) -> str:
    return "invalid" if label == "invalid" else "not-invalid"


@dataclass(frozen=True)
class Agreement:
    """Agreement of one group of pairs: all-annotator (exact) agreement, mean pairwise agreement, κ."""

    group: str
    n_pairs: int
    exact: float
    pairwise: float
    kappa: float
    binary_exact: float
    binary_pairwise: float
    binary_kappa: float

    def cells(self) -> list[str]:
        """The six rates as the report and the evidence set print them, in ``AGREEMENT_COLUMNS`` order."""
        rates = (
            self.exact,
            self.pairwise,
            self.kappa,
            self.binary_exact,
            self.binary_pairwise,
            self.binary_kappa,
        )
        return [f"{x:.3f}" for x in rates]


AGREEMENT_COLUMNS = ["exact", "pairwise", "Fleiss κ", "inv/not exact", "inv/not pairwise", "inv/not κ"]


def _agreement_stats(votes: Sequence[list[str]], categories: Sequence[str]) -> tuple[float, float, float]:
    counts = np.array([[v.count(c) for c in categories] for v in votes], dtype=np.float64)
    n = counts.sum(1)[0]
    exact = float((counts.max(1) == n).mean())
    pairwise = float(((counts * (counts - 1)).sum(1) / (n * (n - 1))).mean())
    return exact, pairwise, fleiss_kappa(counts)


def agreement(votes: Votes, group_of: dict[str, str] | None = None) -> list[Agreement]:
    """Overall agreement, then per group (``group_of``: packet id → dataset) when given."""
    groups: dict[str, list[list[str]]] = {"all": list(votes.values())}
    if group_of is not None:
        for (pid, _), v in votes.items():
            groups.setdefault(group_of[pid], []).append(v)
    out = []
    for name, vs in groups.items():
        exact, pairwise, kappa = _agreement_stats(vs, LABELS)
        bexact, bpairwise, bkappa = _agreement_stats(
            [[invalid_vs_not(x) for x in v] for v in vs], ("invalid", "not-invalid")
        )
        out.append(Agreement(name, len(vs), exact, pairwise, kappa, bexact, bpairwise, bkappa))
    return out


@dataclass(frozen=True)
class Consensus:
    """Majority-vote labels; pairs without a strict majority wait for (or take) adjudication."""

    labels: dict[tuple[str, str], str]
    unanimous: int
    majority: int
    splits: list[tuple[str, str]]
    adjudicated: int

    @property
    def unresolved(self) -> list[tuple[str, str]]:
        return [p for p in self.splits if p not in self.labels]


def majority_label(labels: Sequence[str]) -> str | None:
    """The label more than half the annotators gave, or None (a split with no majority)."""
    label, count = Counter(labels).most_common(1)[0]
    return label if count * 2 > len(labels) else None


def consensus(votes: Votes, adjudicated: dict[tuple[str, str], str] | None = None) -> Consensus:
    adjudicated = adjudicated or {}
    labels: dict[tuple[str, str], str] = {}
    unanimous = majority = n_adj = 0
    splits = []
    for pair, v in votes.items():
        label = majority_label(v)
        if label is None:
            splits.append(pair)
            if pair in adjudicated:
                labels[pair] = adjudicated[pair]
                n_adj += 1
            continue
        labels[pair] = label
        if len(set(v)) == 1:
            unanimous += 1
        else:
            majority += 1
    return Consensus(labels, unanimous, majority, splits, n_adj)


def unanimous_only(votes: Votes) -> dict[tuple[str, str], str]:
    """The stricter sensitivity: unanimous labels kept, every disputed label mapped to Neutral."""
    return {pair: v[0] if len(set(v)) == 1 else AttributionLabel.neutral.value for pair, v in votes.items()}


def match_rate(labels: dict[tuple[str, str], str], authored: dict[tuple[str, str], str]) -> tuple[int, int]:
    """(pairs whose label equals the authored label, pairs compared)."""
    common = [p for p in labels if p in authored]
    return sum(labels[p] == authored[p] for p in common), len(common)


def substituted(
    targets: Iterable[ScoredTarget],
    study: Study,
    dataset: str,
    labels: dict[tuple[str, str], str],
    fill: str = AttributionLabel.neutral.value,
) -> list[ScoredTarget]:
    """A run's targets (of ``dataset``) that are in the study, their labels replaced pair by pair
    (``fill`` where a pair has no label: an unadjudicated split); other targets are left out."""
    by_key = {p.target_key: p for p in study.packets if p.dataset == dataset}
    out = []
    for t in targets:
        ref = by_key.get(t.key)
        if ref is not None:
            out.append(replace(t, labels=[labels.get((ref.packet_id, f), fill) for f in ref.factor_ids]))
    return out


# -- the study in the store --------------------------------------------------------------------


def studies(store: Any) -> list[str]:
    """Every study id in the store, in the order the studies were exported."""
    return [s.removeprefix(STREAM_PREFIX) for s in store.list_streams(STREAM_PREFIX)]


def load_study(store: Any, study_id: str | None = None) -> Study:
    """The named study, else the only one stored (with none or several, the user must name one)."""
    if study_id is None:
        found = studies(store)
        if len(found) != 1:
            raise NotFoundError(
                f"{len(found)} relabelling studies in the store", hint="name one with --study"
            )
        study_id = found[0]
    first = next(iter(store.read_stream(study_stream(study_id))), None)
    if first is None:
        raise NotFoundError(
            f"no relabelling study {study_id!r}", hint="run `auditor score relabel export` first"
        )
    return study_from_payload(first.payload)


def load_sheets(store: Any, study: Study) -> tuple[list[Sheet], dict[tuple[str, str], str], int]:
    """The study's imported answer sheets, its adjudicated labels and how many adjudication sheets."""
    sheets, adjudicated, n_adjudications = [], {}, 0
    for e in store.read_stream(study_stream(study.study_id)):
        answers = {(r["packet_id"], r["factor_id"]): r["label"] for r in e.payload.get("answers", [])}
        if e.type == ANSWERS_IMPORTED:
            sheets.append(Sheet(e.payload["source"], e.payload["annotator"], answers))
        elif e.type == ADJUDICATED:
            adjudicated |= answers
            n_adjudications += 1
    return sheets, adjudicated, n_adjudications


@dataclass(frozen=True)
class RelabelSummary:
    """One study's report: agreement before adjudication, the consensus, and its match with the
    authored labels — computed once for the CLI report and the evidence tables alike."""

    study: Study
    annotators: list[str]
    votes: Votes
    agreement: list[Agreement]
    consensus: Consensus
    matched: int
    compared: int

    @property
    def counts(self) -> dict[str, int]:
        c = self.consensus
        return {
            "pairs": len(self.votes),
            "unanimous": c.unanimous,
            "majority": c.majority,
            "no_majority": len(c.splits),
            "adjudicated": c.adjudicated,
            "unresolved": len(c.unresolved),
        }

    @property
    def splits(self) -> list[dict[str, str]]:
        """The splits still awaiting adjudication, as rows of the adjudication sheet."""
        target_of = {p.packet_id: p.target_key for p in self.study.packets}
        return [
            {
                "packet_id": p,
                "target_key": target_of[p],
                "factor_id": f,
                "votes": "/".join(self.votes[(p, f)]),
            }
            for p, f in self.consensus.unresolved
        ]

    def as_json(self) -> dict[str, Any]:
        return {
            "study": self.study.study_id,
            "annotators": self.annotators,
            "agreement": [r.__dict__ for r in self.agreement],
            "counts": self.counts,
            "consensus_vs_authored": {
                "matched": self.matched,
                "compared": self.compared,
                "rate": self.matched / self.compared if self.compared else None,
            },
            "splits": self.splits,
        }


def relabel_summary(
    study: Study, sheets: Sequence[Sheet], adjudicated: dict[tuple[str, str], str]
) -> RelabelSummary:
    """Agreement (overall and per dataset), consensus with the adjudicated splits, match with the author."""
    if len(sheets) < 2:
        raise InputError(
            f"study {study.study_id} holds {len(sheets)} answer sheet(s); agreement needs two or more",
            hint="import the annotators' sheets with `auditor score relabel import`",
        )
    votes = collect_votes(sheets)
    cons = consensus(votes, adjudicated)
    matched, compared = match_rate(cons.labels, study.authored())
    rows = agreement(votes, {p.packet_id: p.dataset for p in study.packets})
    return RelabelSummary(study, [s.annotator for s in sheets], votes, rows, cons, matched, compared)


RERUN_FIELDS = ("s_any", "s_frac")
RERUN_NOTE = (
    "consensus labels rerun only the coalition metrics (not the degradation prompts, which are built from "
    "authored labels); unanimous-only maps every disputed label to Neutral; an unadjudicated split counts "
    "as Neutral."
)


@dataclass(frozen=True)
class CoalitionRerun:
    """A coalition run's metrics on the study's targets, under each label set (``scoring.report`` rows)."""

    run_id: str
    dataset: str
    n_targets: int
    rows: list[list[str]]
    columns: ClassVar[list[str]] = ["labels", *COALITION_COLUMNS]

    @property
    def note(self) -> str:
        return f"{self.n_targets} relabelled target(s) of {self.dataset} in run {self.run_id}; {RERUN_NOTE}"

    def as_json(self) -> dict[str, Any]:
        return {"columns": self.columns, "rows": self.rows, "n_targets": self.n_targets, "note": self.note}


def coalition_rerun(store: Any, summary: RelabelSummary, run_id: str, resamples: int) -> CoalitionRerun:
    """Recompute the run's shares on the study's targets under authored, consensus and unanimous-only
    labels; ``n_targets`` is 0 (and there are no rows) when the run holds none of them."""
    config, targets = read_run(store, run_id)
    if config.get("experiment", "coalition") != "coalition":
        raise InputError(
            f"run {run_id} is a {config['experiment']} run", field="run", hint="give a coalition run"
        )
    scored = list(targets)
    sets = {
        "authored": summary.study.authored(),
        "consensus": summary.consensus.labels,
        "unanimous-only": unanimous_only(summary.votes),
    }
    rows: list[list[str]] = []
    n_targets = 0
    for name, chosen in sets.items():
        subset = substituted(scored, summary.study, config["dataset"], chosen)
        n_targets = len(subset)
        rerun = summarise_run(subset, fields=RERUN_FIELDS, n_resamples=resamples)
        rows += [[name, *r] for r in table_rows(rerun)]
    return CoalitionRerun(run_id, config["dataset"], n_targets, rows)
