"""SARIF 2.1.0: the log carries the fields the standard requires, and each finding points at its step.

``sarif_problems`` checks the required fields and value constraints of the SARIF 2.1.0 schema
(sarifLog, run, tool, toolComponent, reportingDescriptor, result, message, location,
physicalLocation, artifactLocation, region, logicalLocation) plus the cross-references between
them (ruleIndex, artifact index). Written here because the official schema needs the network.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

import pytest

from auditor.audit.report.render import render
from schemas import RiskClass
from tests.render_fixtures import (
    EXAMPLE,
    ODD_STEP,
    PAGE_SCRIPT,
    dispositions_report,
    example_report,
    hostile_report,
)

LEVELS = {"none", "note", "warning", "error"}
URI_REFERENCE = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$")  # RFC 3986


def _message_problems(msg: Any, where: str) -> list[str]:
    if not isinstance(msg, dict) or not ({"text", "id"} & msg.keys()):
        return [f"{where}: a message needs text or id"]
    return [] if isinstance(msg.get("text", ""), str) else [f"{where}.text: not a string"]


def _location_problems(loc: Any, where: str, run: dict[str, Any]) -> list[str]:
    if not isinstance(loc, dict):
        return [f"{where}: not an object"]
    out: list[str] = []
    if "id" in loc and (not isinstance(loc["id"], int) or loc["id"] < -1):
        out.append(f"{where}.id: must be an integer >= -1")
    phys = loc.get("physicalLocation")
    if phys is not None:
        if not ({"address", "artifactLocation"} & phys.keys()):
            out.append(f"{where}.physicalLocation: needs address or artifactLocation")
        art = phys.get("artifactLocation", {})
        if "uri" in art and not URI_REFERENCE.match(str(art["uri"])):
            out.append(f"{where}.artifactLocation.uri: not a URI reference")
        if "index" in art and not 0 <= art["index"] < len(run.get("artifacts", [])):
            out.append(f"{where}.artifactLocation.index: no such artifact")
        region = phys.get("region")
        if region is not None:
            if not ({"startLine", "charOffset", "byteOffset"} & region.keys()):
                out.append(f"{where}.region: needs startLine, charOffset or byteOffset")
            if "startLine" in region and (
                not isinstance(region["startLine"], int) or region["startLine"] < 1
            ):
                out.append(f"{where}.region.startLine: must be an integer >= 1")
            if "snippet" in region and not isinstance(region["snippet"].get("text"), str):
                out.append(f"{where}.region.snippet: needs text")
    for n, logical in enumerate(loc.get("logicalLocations", [])):
        if not isinstance(logical, dict) or not isinstance(logical.get("name", ""), str):
            out.append(f"{where}.logicalLocations[{n}]: bad logical location")
    if "message" in loc:
        out += _message_problems(loc["message"], f"{where}.message")
    return out


def sarif_problems(log: Any) -> list[str]:
    """Every violation of SARIF 2.1.0's required fields and constraints found in ``log``."""
    if not isinstance(log, dict):
        return ["log: not an object"]
    out = [] if log.get("version") == "2.1.0" else ["version: must be '2.1.0'"]
    if not isinstance(log.get("runs"), list):
        return [*out, "runs: required array"]
    for r, run in enumerate(log["runs"]):
        driver = run.get("tool", {}).get("driver") if isinstance(run.get("tool"), dict) else None
        if not isinstance(driver, dict) or not isinstance(driver.get("name"), str) or not driver["name"]:
            out.append(f"runs[{r}].tool.driver.name: required")
            continue
        rules = driver.get("rules", [])
        for i, rule in enumerate(rules):
            if not isinstance(rule.get("id"), str):
                out.append(f"runs[{r}].tool.driver.rules[{i}].id: required")
            for key in ("shortDescription", "fullDescription", "help"):
                if key in rule and not isinstance(rule[key].get("text"), str):
                    out.append(f"runs[{r}].rules[{i}].{key}.text: required")
        for i, res in enumerate(run.get("results", [])):
            where = f"runs[{r}].results[{i}]"
            out += _message_problems(res.get("message"), f"{where}.message")
            if res.get("level", "warning") not in LEVELS:
                out.append(f"{where}.level: not one of {sorted(LEVELS)}")
            if "ruleIndex" in res:
                idx = res["ruleIndex"]
                if not 0 <= idx < len(rules) or rules[idx]["id"] != res.get("ruleId"):
                    out.append(f"{where}.ruleIndex: does not name rule {res.get('ruleId')}")
            for key in ("locations", "relatedLocations"):
                for n, loc in enumerate(res.get(key, [])):
                    out += _location_problems(loc, f"{where}.{key}[{n}]", run)
            if not all(isinstance(v, str) for v in res.get("partialFingerprints", {}).values()):
                out.append(f"{where}.partialFingerprints: values must be strings")
    return out


def test_example_log_is_valid_and_points_at_the_steps() -> None:
    report, trace = example_report()
    log = json.loads(render(report, trace, "sarif"))
    assert sarif_problems(log) == []
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "agent-auditor" and driver["version"]
    assert [rule["id"] for rule in driver["rules"]] == [rc.value for rc in RiskClass]
    assert all(rule["help"]["text"] and rule["fullDescription"]["text"] for rule in driver["rules"])
    (res,) = run["results"]
    (f,) = report.findings
    assert res["ruleId"] == "information_state_drift" and res["level"] == "error"
    assert f.title in res["message"]["text"]
    primary = res["locations"][0]
    assert primary["physicalLocation"]["artifactLocation"]["uri"] == "examples/renewal_drift.jsonl"
    # s03 stands on line 5 of the example file (the header is line 1)
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    assert primary["physicalLocation"]["region"]["startLine"] == 5 and '"step_id":"s03"' in lines[4]
    assert primary["physicalLocation"]["region"]["snippet"]["text"] in trace.step("s03").content
    assert primary["logicalLocations"][0]["name"] == "s03"
    cited = [primary] + res["relatedLocations"]
    assert sorted(loc["logicalLocations"][0]["name"] for loc in cited) == sorted(
        u.step_id for u in f.evidence
    )
    for loc in cited:
        step = trace.step(loc["logicalLocations"][0]["name"])
        assert loc["physicalLocation"]["region"]["snippet"]["text"] in step.content
        assert loc["properties"]["edge_ref"].startswith(f"e:{step.step_id}:")
    assert res["properties"]["disposition"] == "realized"
    assert res["properties"]["criteria"]["R2"]["verdict"] == "holds"
    assert res["properties"]["repair_plan"][0]["control"] == "authoritative_state_reconciliation"
    assert res["partialFingerprints"] == {"agentAuditorFinding/v1": f.finding_id}


def test_hostile_text_stays_data_in_the_log() -> None:
    report, trace = hostile_report()
    log = json.loads(render(report, trace, "sarif"))
    assert sarif_problems(log) == []
    res = log["runs"][0]["results"][0]
    assert res["locations"][0]["logicalLocations"][0]["name"] == ODD_STEP
    snippets = [loc["physicalLocation"]["region"]["snippet"]["text"] for loc in res["relatedLocations"]]
    assert any(PAGE_SCRIPT in s for s in snippets)
    assert log["runs"][0]["artifacts"][0]["location"]["uri"] == "hostile%20%3Ctrace%3E.jsonl"


def test_a_log_without_findings_is_still_valid() -> None:
    report, trace = example_report()
    empty = report.model_copy(update={"findings": [], "repair_plan": []})
    log = json.loads(render(empty, trace, "sarif"))
    assert sarif_problems(log) == [] and log["runs"][0]["results"] == []


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        (("version",), "2.0.0", "version"),
        (("runs", 0, "tool", "driver", "name"), "", "driver.name"),
        (("runs", 0, "results", 0, "level"), "fatal", "level"),
        (("runs", 0, "results", 0, "ruleIndex"), 0, "ruleIndex"),
        (("runs", 0, "results", 0, "message"), {}, "message"),
        (
            ("runs", 0, "results", 0, "locations", 0, "physicalLocation", "region", "startLine"),
            0,
            "startLine",
        ),
        (
            ("runs", 0, "results", 0, "locations", 0, "physicalLocation", "artifactLocation", "index"),
            3,
            "index",
        ),
        (
            ("runs", 0, "results", 0, "locations", 0, "physicalLocation", "artifactLocation", "uri"),
            "a b",
            "uri",
        ),
    ],
)
def test_the_checker_catches_broken_logs(path: tuple[Any, ...], value: Any, problem: str) -> None:
    report, trace = example_report()
    log = copy.deepcopy(json.loads(render(report, trace, "sarif")))
    node = log
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    assert any(problem in p for p in sarif_problems(log))


def test_levels_follow_severity_across_dispositions() -> None:
    report, trace = dispositions_report()
    log = json.loads(render(report, trace, "sarif"))
    assert sarif_problems(log) == []
    results = log["runs"][0]["results"]
    assert [r["level"] for r in results] == ["warning", "note", "note"]
    assert [r["properties"]["disposition"] for r in results] == [f.disposition.value for f in report.findings]
    assert results[0]["properties"]["intercepted_at"] == "s05"
    assert [r["ruleId"] for r in results] == ["information_state_drift", "unverified_relay", "other"]
