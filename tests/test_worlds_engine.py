"""The shared world engine: workflow configurations, determinism, identities, cohorts, the store."""

from __future__ import annotations

import copy
import json
import random
import re

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from auditor.core.errors import InputError
from tests.damage import damaged
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


WORLDS = ["A1", "B1", "C1", "D1", "F1"]
EDITABLE = ("world", "version", "repair_surface", "protected")  # declarations, checked on their own


@pytest.mark.parametrize("name", WORLDS)
@settings(max_examples=30, deadline=None, derandomize=True)
@given(rnd=st.randoms(use_true_random=False))
def test_a_workflow_with_values_of_other_kinds_is_refused_or_runs(name: str, rnd: random.Random) -> None:
    """Values of the world's own configuration replaced by values of other kinds (a cost as text,
    a gate's settings as a number, a list as a boolean), left out, cut or doubled: an episode runs
    or the workflow is refused naming the field. They failed inside an episode, as tracebacks (2,915 of 13,688 damaged
    configurations; none of 20,000 now)."""
    world = get_world(name)
    data = damaged(world.workflow().data, rnd, where=lambda at: at[0] not in EDITABLE)
    try:
        workflow = Workflow.from_yaml(yaml.safe_dump(data), "patched.yaml")
        world.run_episode(world.canonical_conditions[0], 3, world.identity(3), world.scripted(), workflow)
    except InputError as exc:
        assert exc.one_line()


@pytest.mark.parametrize(
    ("path", "value", "said"),
    [
        ("policy.quarterly_cap_usd", "strict", "field 'policy.quarterly_cap_usd': expected a number"),
        ("gates.action_entry.rejection_binding", 7, "expected a mapping as the world's own"),
        ("gates.action_entry.cumulative_check.require_bindings", True, "expected a list"),
        ("policy.self_approval_limit_usd", 10**20, "a number out of range"),
    ],
)
def test_a_value_of_another_kind_is_named_before_an_episode_runs(path: str, value, said: str) -> None:
    world = get_world("A1")
    data = copy.deepcopy(world.workflow().data)
    *parents, leaf = path.split(".")
    node = data
    for part in parents:
        node = node[part]
    node[leaf] = value
    workflow = Workflow.from_yaml(yaml.safe_dump(data), "patched.yaml")
    with pytest.raises(InputError, match=re.escape(said)):
        world.run_episode("strong", 1, world.identity(1), world.scripted(), workflow)


def test_a_quantity_left_out_is_refused_and_a_switch_left_out_is_the_default() -> None:
    world = get_world("A1")
    data = copy.deepcopy(world.workflow().data)
    del data["policy"]["one_payment_per_agent_per_customer"]  # a switch: the tools' default
    world.run_episode("strong", 1, world.identity(1), world.scripted(), Workflow(data, "variant.yaml"))
    del data["policy"]["self_approval_limit_usd"]
    with pytest.raises(InputError, match=re.escape("field 'policy.self_approval_limit_usd': missing")):
        world.run_episode("strong", 1, world.identity(1), world.scripted(), Workflow(data, "variant.yaml"))


def test_declarations_of_other_kinds_and_keys_that_are_numbers_are_refused() -> None:
    with pytest.raises(InputError, match="field 'repair_surface': must be a list of dotted paths"):
        Workflow.from_yaml("world: A1\nversion: 1\nprotected: []\nrepair_surface: 3\n", "wf.yaml")
    with pytest.raises(InputError, match="a key of the configuration is 1, not text"):
        Workflow.from_yaml(
            "world: A1\nversion: 1\nprotected: []\nrepair_surface: []\ngates: {1: x}\n", "wf.yaml"
        )


def test_a_switch_left_out_is_read_as_the_worlds_own_value() -> None:
    """D1's tools read every lever: one left out (its L6 inquiry channel, a boolean) is the world's
    own value for them, so the episode comes out as with the whole configuration (it raised a
    KeyError inside the episode)."""
    world = get_world("D1")
    own = world.workflow()
    data = copy.deepcopy(own.data)
    del data["levers"]["L6_inquiry_channel"]
    left_out = Workflow(data, "variant.yaml")
    ran = [
        world.run_episode("canonical", 5, world.identity(5), world.scripted(), wf) for wf in (own, left_out)
    ]
    assert ran[0].outcome == ran[1].outcome
    assert "L6_inquiry_channel" not in left_out.data["levers"]  # the configuration given is not changed
