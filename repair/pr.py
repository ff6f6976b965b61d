"""PR proposals in a git repository of workflow configurations: a new branch, one commit, never merged.

The commit is built with git plumbing (a private index, ``commit-tree``, ``update-ref`` that only
creates), so the repository's checked-out branch and working tree are never touched and nothing
is merged. The file to change is the repository's copy of the audited workflow, found by digest.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

from auditor.core.errors import ContractError, InputError
from repair.describe import describe, pr_title
from repair.stream import RepairState
from repair.yamlpatch import patch_yaml_text
from schemas.repair import PRProposal
from worlds import Workflow

_IDENTITY = {
    "GIT_AUTHOR_NAME": "auditor repair",
    "GIT_AUTHOR_EMAIL": "repair@auditor.invalid",
    "GIT_COMMITTER_NAME": "auditor repair",
    "GIT_COMMITTER_EMAIL": "repair@auditor.invalid",
}


def _git(repo: Path, *args: str, stdin: str | None = None, env: dict[str, str] | None = None) -> str:
    proc = subprocess.run(
        ["git", "-C", str(repo), *args],
        input=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        check=False,
    )
    if proc.returncode != 0:
        raise ContractError(f"git {' '.join(args[:2])} failed in {repo}: {proc.stderr.strip()[:300]}")
    return proc.stdout.strip()


def ensure_config_repo(repo: Path, wf: Workflow, text: str) -> None:
    """A workflow-config repository holding the audited workflow: created, or the file committed, if absent."""
    if not (repo / ".git").exists():
        repo.mkdir(parents=True, exist_ok=True)
        _git(repo, "init", "-q", "-b", "main")
    rel = f"workflows/{wf.world.lower()}.yaml"
    if _git(repo, "ls-files", rel):
        return
    path = repo / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    _git(repo, "add", rel)
    _git(repo, "commit", "-q", "-m", f"Import the audited {wf.world} workflow", "--", rel, env=_IDENTITY)


def _locate(repo: Path, digest: str, wanted: str | None) -> tuple[str, str]:
    files = (
        [wanted]
        if wanted
        else [f for f in _git(repo, "ls-files").splitlines() if f.endswith((".yaml", ".yml"))]
    )
    for name in files:
        try:
            text = _git(repo, "show", f"HEAD:{name}") + "\n"
            if Workflow.from_yaml(text, name).digest() == digest:
                return name, text
        except (ContractError, InputError):
            continue
    raise InputError(
        "the repository holds no committed copy of the audited workflow",
        path=str(repo),
        field=wanted,
        hint=f"commit the audited configuration (digest {digest[:12]}) first, or name it with --file",
    )


def propose_pr(state: RepairState, repo: Path, file: str | None = None) -> PRProposal:
    """Create branch ``repair/{id}`` with one commit that applies the accepted patch."""
    if state.decision is None or not state.decision.accepted:
        raise ContractError(f"repair {state.repair_id} is not accepted; only accepted repairs become PRs")
    if not (repo / ".git").exists():
        raise InputError(
            "not a git repository", path=str(repo), hint="pass --repo with a workflow-config repository"
        )
    last = state.latest
    name, text = _locate(repo, last.patch.base_digest, file)
    expected = Workflow.from_yaml(last.patched_yaml, "artifact").data
    new_text = patch_yaml_text(text, {c.path: c.after for c in last.patch.changes}, expected)
    if Workflow.from_yaml(new_text, name).digest() != last.patch.patched_digest:
        raise ContractError("the patched file does not reproduce the approved artifact")
    branch = f"repair/{state.repair_id}"
    if (
        subprocess.run(
            ["git", "-C", str(repo), "rev-parse", "--verify", "-q", f"refs/heads/{branch}"],
            capture_output=True,
            check=False,
        ).returncode
        == 0
    ):
        raise ContractError(f"branch {branch} already exists in {repo}", hint="a repair is proposed once")
    base_branch = _git(repo, "rev-parse", "--abbrev-ref", "HEAD")
    base_commit = _git(repo, "rev-parse", "HEAD")
    blob = _git(repo, "hash-object", "-w", "--stdin", stdin=new_text)
    description = describe(state)
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(repo, "read-tree", base_commit, env=env)
        _git(repo, "update-index", "--cacheinfo", f"100644,{blob},{name}", env=env)
        tree = _git(repo, "write-tree", env=env)
    title = pr_title(state)
    commit = _git(
        repo, "commit-tree", tree, "-p", base_commit, stdin=f"{title}\n\n{description}\n", env=_IDENTITY
    )
    _git(repo, "update-ref", f"refs/heads/{branch}", commit, "0" * 40)
    return PRProposal(
        repair_id=state.repair_id,
        repo=str(repo.resolve()),
        base_branch=base_branch,
        base_commit=base_commit,
        branch=branch,
        commit=commit,
        file=name,
        title=title,
        description=description,
    )
