"""What the review files when a coding agent only reads files of projects no reading was built on.

A quiet run is the right answer: an agent that views a project's sources and documents has done
nothing an audit should report. Each probe run is a real mini-SWE-agent run of the corpus (its
request and its submission) whose middle is replaced by views of files under ``ROOT`` (``sed -n``
windows of up to 150 lines, as agents read them), ``--views`` to a run. Every finding the review
files on them counts against it; the table says which detector filed what, with a quote of each.

Point it at unpacked sources of other projects (``pip download --no-deps --no-binary :all: django``
and unpack it, say): nothing is fetched here. Usage:
``python benchmarks/foreign_files_probe.py ROOT [--glob '*.py'] [--runs 50] [--views 6] [--seed 0] [--json]``
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # runnable from a clone

from auditor.audit.engine import run_rules_audit
from ingest import open_traces
from schemas import Trace

# a resolved run of the corpus, frozen in the repository: its request, its system prompt, its submission
TEMPLATE = (
    Path(__file__).resolve().parents[1] / "tests/fixtures/real/mini-swe-agent/astropy__astropy-7671.traj.json"
)
WINDOW = 150  # lines a view shows


def probe_run(template: dict, files: list[Path], root: Path, rng: random.Random) -> dict:
    """The template run with its work replaced by a view of each file."""
    messages = template["messages"][:2]
    for path in files:
        lines = path.read_text(errors="replace").splitlines()
        start = rng.randrange(0, max(1, len(lines) - WINDOW))
        shown = "\n".join(lines[start : start + WINDOW])
        rel = path.relative_to(root)
        messages += [
            {
                "role": "assistant",
                "content": f"THOUGHT: Let me read {rel.name}.\n\n```bash\nsed -n '{start + 1},{start + WINDOW}p' {rel}\n```",
            },
            {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{shown}\n</output>"},
        ]
    return dict(template, messages=messages + template["messages"][-2:])


def review(run: dict) -> list:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "probe.traj.json"
        path.write_text(json.dumps(run))
        (imported,) = open_traces(path)
        trace = Trace(header=imported.header, steps=list(imported.steps()))
    return run_rules_audit(trace).findings


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", type=Path, help="a folder of another project's files")
    ap.add_argument("--glob", default="*.py", help="which files to view (default: *.py)")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--views", type=int, default=6, help="files viewed in one run")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--template", type=Path, default=TEMPLATE, help="the mini-SWE-agent run to fill")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not args.root.is_dir():
        raise SystemExit(f"{args.root}: not a folder (give the unpacked sources of a project)")
    if not args.template.is_file():
        raise SystemExit(f"{args.template}: no such run (give --template, a mini-SWE-agent .traj.json)")
    files = sorted(p for p in args.root.rglob(args.glob) if p.is_file() and p.stat().st_size > 500)
    if not files:
        raise SystemExit(f"{args.root}: no file matches {args.glob!r}")
    rng = random.Random(args.seed)
    rng.shuffle(files)
    template = json.loads(args.template.read_text())
    counts: Counter[tuple[str, str]] = Counter()
    quiet, examples = 0, []
    for k in range(args.runs):
        shown = [files[(k * args.views + i) % len(files)] for i in range(args.views)]
        findings = review(probe_run(template, shown, args.root, rng))
        quiet += not findings
        for f in findings:
            counts[(f.detector or "?", f.disposition.value)] += 1
            examples.append(
                {
                    "detector": f.detector,
                    "disposition": f.disposition.value,
                    "quote": f.evidence[0].quote[:120],
                }
            )
    # the template's own findings are not the files' doing: count them on the bare template
    own = Counter(
        (f.detector or "?", f.disposition.value) for f in review(probe_run(template, [], args.root, rng))
    )
    result = {
        "runs": args.runs,
        "views": args.views,
        "files": len(files),
        "quiet_runs": quiet,
        "findings": [
            {"detector": d, "disposition": s, "count": n, "on_the_bare_run": own[(d, s)] > 0}
            for (d, s), n in sorted(counts.items())
        ],
        "examples": examples[:20],
    }
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(
            f"{args.runs} runs of {args.views} views each, over {len(files)} files ({args.glob}); quiet: {quiet}"
        )
        for row in result["findings"]:
            mark = " (also on the bare run)" if row["on_the_bare_run"] else ""
            print(f"  {row['detector']:<24} {row['disposition']:<28} {row['count']:>4}{mark}")
        for ex in result["examples"]:
            if (ex["detector"], ex["disposition"]) not in own:
                print(f"  - {ex['detector']} {ex['disposition']}: {ex['quote']!r}")
    return result


if __name__ == "__main__":
    main()
