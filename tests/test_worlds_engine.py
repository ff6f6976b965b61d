"""The shared world engine: workflow configurations, determinism, identities, cohorts, the store."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from auditor.core.errors import InputError
from worlds import export_bundle, get_world, load_cohort, record_cohort, run_cohort, summarise
from worlds.engine.persist import stored_cohorts
from worlds.engine.workflow import Workflow


def test_workflow_validation_names_the_broken_field() -> None:
    with pytest.raises(InputError, match="field 'repair_surface'"):
        Workflow.from_yaml("world: A1\nversion: 1\nprotected: []\n", "wf.yaml")
    with pytest.raises(InputError, match="line 2"):
        Workflow.from_yaml("world: A1\n  bad: [\n", "wf.yaml")
    with pytest.raises(InputError, match=r"gates\.nope"):
        Workflow.from_yaml("world: A1\nversion: 1\nprotected: []\nrepair_surface: [gates.nope]\n", "wf.yaml")


def test_patch_outside_surface_is_refused_and_scope_is_checked() -> None:
    wf = get_world("A1").workflow()
    with pytest.raises(InputError, match=r"policy\.quarterly_cap_usd"):
        wf.with_values({"policy.quarterly_cap_usd": 400})
    patched = wf.with_values({"gates.action_entry.cumulative_check.enabled": True})
    assert wf.scope_violations(patched) == []
    assert patched.digest() != wf.digest()
    tampered = Workflow(data={**wf.data, "task_utility": "anything"}, origin="x")
    assert wf.scope_violations(tampered) == ["task_utility"]


def test_same_seed_gives_byte_identical_trace_and_fresh_identities_are_disjoint() -> None:
    world = get_world("A1")
    ident = world.identity(3)
    a = world.run_episode("strong", 11, ident, world.scripted())
    b = world.run_episode("strong", 11, ident, world.scripted())
    assert a.trace_jsonl() == b.trace_jsonl()
    assert a.episode_id == b.episode_id
    first = world.fresh_identities(5)
    fresh = world.fresh_identities(5, exclude=[i.key for i in first])
    assert not {i.key for i in first} & {i.key for i in fresh}
    assert len({i.key for i in fresh}) == 5


def test_cohort_round_trips_through_the_store_and_exports_sanitised(sqlite_store, tmp_path) -> None:
    world = get_world("A1")
    cohort = run_cohort(world, world.scripted(), ["mild", "strong"], 3, seed=5)
    assert len(cohort.episodes) == 6 and cohort.manifest()["rules"]["validity"]
    cid = record_cohort(sqlite_store, cohort)
    record_cohort(sqlite_store, cohort)  # idempotent
    manifest, pairs = load_cohort(sqlite_store, cid)
    assert [t.header.trace_id for t, _ in pairs] == manifest["episode_ids"]
    assert pairs[0][0].steps == cohort.episodes[0].steps
    out = export_bundle(tmp_path / "bundle", pairs, manifest)
    header = json.loads((out / "traces" / f"{pairs[0][0].header.trace_id}.jsonl").read_text().splitlines()[0])
    assert header["record"] == "header" and "condition" not in json.dumps(header)
    labels = [json.loads(line) for line in (out / "labels.jsonl").read_text().splitlines()]
    assert {lab["labels"]["condition"] for lab in labels} == {"mild", "strong"}
    rows = summarise(cohort, world.endpoints)
    assert {r.condition for r in rows} == {"mild", "strong", "pooled"}
    (back,) = stored_cohorts(sqlite_store)  # rebuilt from the store as run_cohort returned it
    assert back.cohort_id == cid and back.manifest() == cohort.manifest()
    assert [e.outcome for e in back.episodes] == [e.outcome for e in cohort.episodes]
    assert summarise(back, world.endpoints) == rows
    with pytest.raises(Exception, match="no cohort"):
        load_cohort(sqlite_store, "a1-cohort-missing")


def test_cli_run_prints_wilson_table_and_exports(tmp_path, monkeypatch) -> None:
    from auditor.surfaces.cli.main import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("AUDITOR_STORE", raising=False)
    runner = CliRunner()
    res = runner.invoke(
        app,
        [
            "world",
            "run",
            "A1",
            "--condition",
            "strong",
            "--episodes",
            "4",
            "--seed",
            "7",
            "--export",
            str(tmp_path / "out"),
            "--json",
        ],
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    row = next(r for r in data["endpoints"] if r["endpoint"] == "cumulative_violation")
    assert row["total"] == 4 and 0.0 <= row["low"] <= row["rate"] <= row["high"] <= 1.0
    assert len(list((tmp_path / "out" / "traces").glob("*.jsonl"))) == 4
    res2 = runner.invoke(app, ["world", "export", data["cohort"]["cohort_id"], "-o", str(tmp_path / "again")])
    assert res2.exit_code == 0, res2.output
    assert sorted(p.name for p in (tmp_path / "again" / "traces").iterdir()) == sorted(
        p.name for p in (tmp_path / "out" / "traces").iterdir()
    )


CARD = """name: X1
title: "A probe"
task_text: "Do the task."
start: 2026-01-02 09:30:00
conditions:
  calm: "no pressure"
  rushed: "a deadline"
endpoints:
  fired: "the target fired"
primary: fired
"""


def test_a_world_card_fills_its_defaults_and_a_broken_one_names_file_and_field(tmp_path, monkeypatch) -> None:
    from datetime import datetime

    from worlds.engine.card import read_card

    monkeypatch.syspath_prepend(str(tmp_path))
    for name, text in (
        ("cardprobe_ok", CARD),
        ("cardprobe_bad", CARD.replace("primary: fired", "primary: gone")),
    ):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text("")
        (tmp_path / name / "world.yaml").write_text(text)
    card = read_card("cardprobe_ok")
    assert card["start"] == datetime(2026, 1, 2, 9, 30)
    assert card["canonical_conditions"] == ["calm", "rushed"] and card["llm_judged"] is False
    with pytest.raises(InputError, match=r"cardprobe_bad/world\.yaml.*field 'primary'"):
        read_card("cardprobe_bad")
