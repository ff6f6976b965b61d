"""Test-run facts of a coding-agent run, read from its shell commands and their outputs.

Graph-free: built from the trace's steps alone, so any importer whose tool calls carry a command
(mini-SWE-agent's ``bash``, SWE-agent's actions, OpenHands' ``CmdRunAction``, Claude Code's
``Bash``, Codex's ``shell``, its argv read as the script a shell runs) gets the same facts.
Everything is decided by structure, never by what a run is about:

- a *test run* is a command result that holds a test runner's summary line: pytest's
  ``== 1 failed, 3 passed in 0.12s ==`` (``in 0.12 seconds`` before pytest 5.1; also without the
  rules, as ``-q`` prints it) or its ``no tests ran`` / ``Interrupted: N errors`` / ``N warnings
  in 0.01s``, or, from ``-qq``, which prints no summary, its progress lines (``.FEs   [100%]``);
  unittest's and Django ``runtests.py``'s ``Ran N tests`` followed by ``OK``, ``FAILED
  (failures=…, errors=…)`` or (Python 3.12+, nothing found) ``NO TESTS RAN``; SymPy
  ``bin/test``'s ``tests finished: N passed, M failed, K exceptions`` (wrapped anywhere at the
  terminal's width); tox's ``commands succeeded/failed``
  (tox 3) or ``env: OK (…)`` / ``env: FAIL code N (…)`` (tox 4); nox's ``Session … was
  successful / failed``; ``cargo test``'s ``test result: ok. N passed; M failed`` (every test
  binary's, summed; ``could not compile`` before any is a failed run), ``go test``'s package lines
  (``ok``, ``FAIL``, ``[build failed]``), ``node --test``'s closing counts (``# fail N``),
  ``bun test``'s counts above ``Ran N tests across M files``, vitest's ``Tests  1 failed | 3
  passed (4)`` and jest's ``Tests: 1 failed, 3 passed, 4 total`` (a test file that failed to load
  fails the run where no test failed).
  Failed test ids come from the runner's own lines (pytest ``FAILED id`` / ``ERROR id`` and
  verbose ``id FAILED``; unittest ``FAIL: name (module.Class)``; SymPy's ``___ path:test ___``
  headers; cargo's ``test name ... FAILED``, go's ``--- FAIL: Name``, TAP's ``not ok N - name``,
  bun's ``(fail) name``, vitest's ``FAIL file > name``, jest's ``● name``).
  Outputs are read without a terminal's colour codes, and summaries quoted verbatim with them. A
  run that collected no test (a path not found) reached none of the project's, nor did one that
  could not import its tests (pytest's ``ERROR collecting``, unittest's ``_FailedTest``) or set
  them up (pytest's errors alone, each a test's; unittest's, each a class's or module's fixture,
  ``ERROR: setUpClass (…)``) for a reason its output places outside the changed files (Django's
  tests under pytest or unittest without settings). A runner command (pytest, ``python -m
  pytest|unittest``, a ``runtests.py``, ``bin/test``, tox, nox, ``cargo test``, ``go test``,
  ``node --test``) that printed no summary but died in a traceback running through a changed
  source file is a test run with one failure, quoted by its error line: the project's tests could
  not run on the change; one whose traceback runs through no changed file and names none (``python
  -m django test`` without settings) reached no test either (``reached_no_test``);
- a *script run* is a command that runs a Python file or inline code (``python x.py``, ``python
  -c``, ``python - <<EOF``) or another program (a build, ``make``, a shell script, a module's main
  through ``python -m``: anything but the utilities that read, search, edit or manage files) with
  no runner summary in its output: a reproduction; it passed when its exit code is 0 and it
  printed no traceback (a command the harness killed, as at a timeout, did not). A lone command
  the shell could not start (exit 127 or 126: a runner not installed), or a module Python could
  not find, ran nothing and is no run, nor is a runner alone that printed no summary and did not
  fail (its output cut by ``| head``, its ``--help``, ``--collect-only``). A program that exited
  non-zero printing a linter's or compiler's messages (``path:line:col: text``) and no traceback
  gave its verdict (``verdict``): pylint exits non-zero while any message stands;
- an *edit* is a command that writes files: ``sed -i``, a shell redirect or ``tee`` to a file, a
  ``patch`` / ``git apply`` / ``cp`` / ``mv``, Python code that opens a file for writing or calls
  ``write_text`` (a script written earlier with a heredoc counts when it is run), or an editor
  tool's create/replace/insert (``path`` argument; Claude Code's ``Edit``, ``MultiEdit``, ``Write``
  by ``file_path``; Codex's ``apply_patch``, every file its patch names); an edit whose result is
  an error wrote nothing. Its targets are the paths it
  writes, and, for code, the changed files it names outside comments (not in a heredoc handed to a
  program as text, such as a commit message);
- the *changed files* are those of the submitted diff (``diff --git a/X b/X``; ``new file mode``
  marks a new one), else the edits' targets (new: those the run created, as a ``>`` redirect,
  Claude Code's ``Write`` result of ``type: create`` or a patch's ``*** Add File:`` says),
  relative to the session's ``cwd``. A
  *test file* has a ``test``/``tests``/``testing`` (or ``__tests__``) directory or a ``test_*.py`` / ``*_test.py`` / ``*_test.go`` / ``*.test.js``
  / ``*.spec.ts`` name; a *document* (``.rst``, ``.txt``, ``.md``, a CHANGES or NEWS file,
  ``.gitignore``) is prose or bookkeeping: its edits are no part of the code runs check;
- a *revert* puts changed files back to the original code (``git stash``, ``git checkout PATH``,
  or line-addressed ``sed -i`` edits that take the change out again, as ``line_edits`` follows
  them); a *restore* ends it (``git stash pop/apply``, ``mv``/``cp`` of a backup that an earlier
  ``cp X BACKUP`` took back onto ``X``, edits that redo verbatim those a ``git`` revert undid, or
  ``sed`` edits that bring back code a run already tested): a restore is no new change, the code
  is again what it was;
- files *edited in place* are those a ``sed -i`` that exited 0 or an editor's replace or insert
  changed and the run did not create (nor copy): they existed before, whatever the diff holds; a
  run the harness recorded as submitted with an empty diff (``raw.empty_submission`` on its exit
  record) submitted none of them;
- *scratch* paths are the ones the agent wrote or made during the run that the submitted diff does
  not hold; a runner run only on scratch paths (a test file written to watch the runner's
  behaviour) is the agent's own check, not a *project test*.
"""

from __future__ import annotations

import re
import shlex
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace
from functools import cached_property, lru_cache
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any, NamedTuple

from auditor.audit.detectors.line_edits import LineModel
from schemas import ActorKind, StepKind, Trace, TraceStep
from schemas.trace import REFUSED

if TYPE_CHECKING:
    from auditor.audit.detectors.base import AuditContext

_COUNT = r"(\d+) (failed|passed|errors?|skipped|xfailed|xpassed|deselected|warnings?|rerun)"
_SECONDS = r"[\d.]+(?:s| seconds)\b"  # pytest 5.1+ prints "0.12s", older ones "0.12 seconds"
_PYTEST = re.compile(rf"(?m)^(?:=+ )?((?:{_COUNT}(?:, )?)+) in {_SECONDS}[^\n]*$")
_PYTEST_NONE = re.compile(rf"(?m)^=+ no tests ran in {_SECONDS} =+$")
_PYTEST_INTERRUPTED = re.compile(r"(?m)^(?:!+ )?Interrupted: (\d+) errors? during collection[^\n]*$")
# pytest -qq prints no summary line: its progress lines (a character a test: . passed, F failed,
# E error, s skipped, x xfailed, X xpassed), padded to the terminal's width before the percentage
_PYTEST_PROGRESS = re.compile(r"(?m)^([.FEsxX]+)[ \t]{2,}\[ *\d{1,3}%\]$")
# a node id: its path and names, each part up to the next "::", then its parameters in brackets,
# which may hold spaces (``[a b-1]``); a part is read once (``\S+::`` before the names backtracked to
# every "::" of a line: a 20,000-character line of them took 14 seconds)
_NODE_PART = r"(?:[^\s:\[]|:(?!:))+"
_PYTEST_NODE = rf"{_NODE_PART}(?:::{_NODE_PART})+(?:\[[^\n]*?\])?"
_PYTEST_ID = re.compile(rf"(?m)^(FAILED|ERROR) ({_PYTEST_NODE}|\S+\.py)(?: - [^\n]*)?$")
_PYTEST_VERBOSE = re.compile(rf"(?m)^({_PYTEST_NODE}) (FAILED|ERROR)\b")
# unittest's summary; Python 3.12+ ends a run that found no test with "NO TESTS RAN" (exit 5)
_UNITTEST = re.compile(
    r"(?m)^Ran (\d+) tests? in [\d.]+s\s*\n\s*\n?(OK\b[^\n]*|FAILED \(([^)]*)\)|NO TESTS RAN\b[^\n]*)"
)
_UNITTEST_ID = re.compile(r"(?m)^(FAIL|ERROR): (\w+) \(([\w.]+)\)")
# unittest's class and module fixtures: an error in one is reported under its name, in place of the
# tests it sets up (``ERROR: setUpClass (module.Class)``), none of which ran
_UNITTEST_FIXTURES = frozenset({"setUpClass", "setUpModule"})
# the summary wraps at the terminal's width, anywhere in it (before "in N seconds" or between counts):
# its head, then its end looked for in that line and the next (one pattern over both lines was
# cubic in a run of spaces after the head: 10,000 spaces took five minutes)
_SYMPY = re.compile(r"(?m)^[= ]*tests finished: ")
_SYMPY_END = re.compile(r"(?m)\bin [\d.]+ seconds\b[ =]*$")
_SYMPY_ID = re.compile(r"(?m)^_+ (\S+\.py:\S+) _+$")
_TOX = re.compile(
    r"(?m)^(?:ERROR: +)?[^\S\n]*(\S+): commands (succeeded|failed)\b[^\n]*$"
    r"|^[^\S\n]*(\S+): (OK|FAIL)(?: code -?\d+)? \(\d[^\n]*$"
)
_NOX = re.compile(r"(?m)^nox > Session (\S+) (was successful|failed)[^\n]*$")
# cargo test: one summary a test binary (unit tests, each integration test, the doctests), and the
# build's own failure when the change does not compile
_CARGO = re.compile(r"(?m)^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed;[^\n]*$")
_CARGO_ID = re.compile(r"(?m)^test (.+?) \.\.\. FAILED$")
_CARGO_BUILD = re.compile(r"(?m)^error: could not compile `[^`\n]+`[^\n]*$")
# go test: a line a package (``ok``, ``FAIL``, a build that failed), the failing tests by name
_GO = re.compile(r"(?m)^(ok|FAIL)[ \t]+(\S+)[ \t]+(?:[\d.]+s|\(cached\)|\[[a-z ]+ failed\])[^\n]*$")
_GO_ID = re.compile(r"(?m)^--- FAIL: (\S+)")
# node --test: its closing counts, as TAP (``# fail 1``, no terminal) or the spec reporter (``ℹ fail 1``)
_NODE = re.compile(r"(?m)^(?:# |ℹ )tests (\d+)[^\S\n]*\n(?:(?:# |ℹ )\w+ [\d.]+[^\S\n]*(?:\n|$))+")
_NODE_COUNT = re.compile(r"(?m)^(?:# |ℹ )(pass|fail|cancelled) (\d+)")
_NODE_ID = re.compile(r"(?m)^(?:not ok \d+ - |✖ )(.+?)(?: \([\d.]+ms\))?$")
# JavaScript runners, one closing summary a run: bun test's counts above "Ran N tests across M
# files", vitest's "Tests  1 failed | 3 passed (4)", jest's "Tests:       1 failed, 3 passed, 4 total"
# (a test file that failed to load counts where no test failed: vitest's "Test Files", jest's suites)
_BUN = re.compile(r"(?m)^Ran \d+ tests? across \d+ files?\.[^\n]*$")
_BUN_COUNT = re.compile(r"(?m)^ ?(\d+) (pass|fail|skip|todo|errors?)$")
_BUN_ID = re.compile(r"(?m)^\(fail\) (.+?)(?: \[[\d.]+m?s\])?$")
_VITEST = re.compile(
    r"(?m)^[^\S\n]*Test Files[^\S\n]{2,}(?P<files>[^\n]*?) \(\d+\)[^\S\n]*\n"
    r"[^\S\n]*Tests[^\S\n]{2,}(?P<tests>[^\n]*?)(?: \(\d+\))?[^\S\n]*$"
)
_VITEST_ID = re.compile(r"(?m)^[^\S\n]*FAIL[^\S\n]+(\S+ > [^\n]+?)[^\S\n]*$")
_JEST = re.compile(
    r"(?m)^Test Suites:[^\S\n]+(?P<files>[^\n]*?)\d+ total\n^Tests:[^\S\n]+(?P<tests>[^\n]*?)\d+ total$"
)
_JEST_ID = re.compile(r"(?m)^  ● (?!Test suite failed to run)(.+?)[^\S\n]*$")
_COLOUR = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")  # a terminal's colour and cursor codes (pytest --color)
_TRACEBACK = re.compile(r"(?m)^Traceback \(most recent call last\):")
# a traceback's frame (the file it ran through) and the line naming what it raised
_FRAME = re.compile(r'(?m)^[ \t]*File "([^"\n]+)", line \d+')
_ERROR_NAME = re.compile(r"\b[A-Z]\w*(?:Error|Exception|Warning)\b")  # a Python exception or warning class
# one as output prints it, with its message (``TypeError: expected string``)
_ERROR_PRINTED = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Warning)): \S")
# a linter's or compiler's message, "path:line[:col]: text" (pylint, flake8, mypy, gcc), or a code
# and text over an arrow to the place (ruff's full format); and the kind its text names: a leading
# code (R0124, F401) or a trailing name ((unused-import), [attr-defined])
_DIAGNOSTIC = re.compile(
    r"(?m)^[^\S\n]*([^\s:]+):\d+(?::\d+)?:([^\n]*)|^([A-Z]+\d+\b[^\n]*)\n[^\S\n]*--> ([^\s:]+):\d+"
)
_MESSAGE_KIND = re.compile(r"^([A-Z]+\d+)\b|[(\[]([\w-]+)[)\]]$")
_WORD = re.compile(r"[\w-]+")
_FRAME_TEXT = re.compile(r"(?:in )?\S*")  # a pytest frame's ("path.py:12: in func", "…: ValueError")
_RAISED = re.compile(r"(?m)^[A-Za-z_][\w.]*(?:Error|Exception|Exit)\b[^\n]*")
# one failed test's report: pytest's and SymPy's "____ name ____" heading, unittest's "FAIL: name"
# under a rule; it ends at the next heading or the summary's rule
_FAILURE_HEAD = re.compile(r"(?m)^(?:_{3,} [^\n]+? _{3,}|(?:ERROR|FAIL): [^\n]+)$")
_FAILURE_END = re.compile(r"(?m)^={5,}")
# pytest's frame: "path.py:12: in func", "path.py:12: " (the test's own line) or, last,
# "path.py:12: ValueError" (where it was raised, and what)
_PYTEST_FRAME = re.compile(r"(?m)^([^\s:][^:\n]*\.py):\d+:(?: (in \w+|[A-Za-z_][\w.]*))?[^\S\n]*$")
_PYTEST_RAISED = re.compile(r"(?m)^E[^\S\n]+([A-Za-z_][\w.]*(?:Error|Exception|Exit))\b")
_RUNNER_PROGRAMS = {
    "pytest": "pytest",
    "py.test": "pytest",
    "tox": "tox",
    "nox": "nox",
    "vitest": "vitest",
    "jest": "jest",
}
# a project's own test script (package.json's "test"): its runner is known by its summary alone
_PACKAGE_TESTS = (
    ["npm", "test"],
    ["npm", "run", "test"],
    ["yarn", "test"],
    ["pnpm", "test"],
    ["bun", "run", "test"],
)
_DJANGO_COMMANDS = frozenset({"manage.py", "django-admin", "django-admin.py"})
# a unittest-style runner's test label (``admin_views.tests.Case.test_x``), and the options of
# Django's runner and unittest that take a value (a word that is no label: ``--settings test_sqlite``)
_LABEL = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_VALUED_OPTIONS = frozenset({
    "--settings", "--parallel", "-k", "--start-at", "--start-after", "--tag", "--exclude-tag", "--bisect",
    "--pair", "--selenium", "--selenium-hub", "-p", "--pattern", "-s", "--start-directory", "-t",
    "--top-level-directory",
})  # fmt: skip
# a runner that could not import a test module: pytest's "ERROR collecting …" header, unittest's
# stand-in test for a module it failed to import
_IMPORT_FAILED = re.compile(r"(?m)^_+ ERROR collecting |\(unittest\.loader\._FailedTest\b")
# a line's own indentation ([^\S\n]): ^\s* ran over every blank line below each line start (quadratic)
_IMPORT = re.compile(r"(?m)(?:^|;)[^\S\n]*(?:from|import)\s+([\w.]+)")  # a line's, or a statement's after ";"
_NUMBERED = re.compile(r"(?m)^ *\d+(?:\t|→)")  # a line as a file viewer numbers it (``3\t``, ``   3→``)
_RETURNCODE = re.compile(r"\A\s*<returncode>(-?\d+)</returncode>")
_DIFF = re.compile(r"(?m)^diff --git a/(\S+) b/(\S+)\r?$")
_CREATE = re.compile(r"(?<![\d&<>])>\s*([^\s;&|<>()]+)")  # a ">" redirect (not ">>"): a new file
_HEREDOC = re.compile(r"<<-?\s*['\"]?(\w+)['\"]?")
_REDIRECT = re.compile(r"(?<![\d&<>])>>?\s*([^\s;&|<>()]+)")
_PY_WRITE = re.compile(  # a variable's write_text from its word's start: tried at every letter, \w+ was quadratic
    r"""open\(\s*(?:r|f)?['"]([^'"\n]+)['"]\s*,\s*['"][wa]|(?:Path\(\s*['"]([^'"\n]+)['"]\s*\)|(?<!\w)\w+)\.write_text\("""
)
_WRITES = re.compile(
    r"""\bsed\s+(?:-\w+\s+)*-i|>\s*\S|\btee\b|\bpatch\b|\bgit apply\b|\.write(?:lines)?\(|write_text\(|\bperl\s+-\w*i"""
    r"""|\bopen\([^)\n]*,\s*(?:mode\s*=\s*)?['"](?:[wa]|r\+)"""
)
_SCRIPT = re.compile(r"^(?:\S*/)?python[\d.]*$")
_UTILITIES = frozenset(
    {
        "cat",
        "grep",
        "egrep",
        "rg",
        "sed",
        "awk",
        "nl",
        "ls",
        "head",
        "tail",
        "find",
        "echo",
        "printf",
        "rm",
        "mkdir",
        "touch",
        "cp",
        "mv",
        "ln",
        "chmod",
        "git",
        "pip",
        "pip3",
        "which",
        "pwd",
        "cd",
        "wc",
        "diff",
        "sort",
        "uniq",
        "cut",
        "tr",
        "xargs",
        "tee",
        "true",
        "false",
        "test",
        "[",
        "export",
        "set",
        "source",
        ".",
        "unset",
        "env",
        "file",
        "stat",
        "du",
        "df",
        "tree",
        "less",
        "more",
        "apt",
        "apt-get",
        "curl",
        "wget",
        "tar",
        "unzip",
        "patch",
        "perl",
        "read",
        "sleep",
        "clear",
        "history",
        "man",
        "conda",
        "type",
        "command",
        "basename",
        "dirname",
        "realpath",
        "readlink",
        "cmp",
        "md5sum",
        "sha256sum",
        "od",
        "hexdump",
        "strings",
    }
)
# modules ``python -m`` runs that set up an environment, not the project's code
_MODULE_UTILITIES = frozenset({"pip", "venv", "ensurepip", "site"})
# SWE-agent's interface commands (its default, search, edit and submit tool bundles): they view,
# search or edit files, or hand in the work; none runs a program
_ACI = frozenset(
    {
        "open",
        "goto",
        "scroll_up",
        "scroll_down",
        "find_file",
        "search_dir",
        "search_file",
        "filemap",
        "edit",
        "insert",
        "create",
        "submit",
        "str_replace_editor",
    }
)
# the shell's own exit codes for a program it could not start: not found (127), not executable (126)
_NOT_RUN = frozenset({126, 127})
_NO_MODULE = re.compile(r"(?m)^\S*python[\d.]*: No module named ")  # Python's word that ``-m`` found none
_TEST_DIRS = frozenset({"tests", "__tests__"})
_TEST_NAMES = frozenset({"tests.py", "conftest.py"})  # a Django app's tests; pytest's fixtures for them
_TESTING_DIRS = frozenset({"test", "testing"})  # tests at the root or under src/; deeper in Python, an API
_PATH = re.compile(r"[\w./-]+\.\w+")  # a file's path as an edit names it (a sed script's stray word is none)
_EDITOR_COMMANDS = frozenset({"create", "str_replace", "insert", "write", "edit", "append"})
# what Claude Code's editors write (OpenCode's, in camel case)
_WRITTEN = frozenset({"new_string", "edits", "content", "new_source", "newString"})
_SHELLS = frozenset({"bash", "sh", "zsh"})
_INTERPRETERS = frozenset({"perl", "ruby", "node"}) | _SHELLS  # programs a heredoc feeds code to


def is_test_file(path: str) -> bool:
    """Whether a path is a test module of the project: its name says so (``test_x.py``,
    ``tests.py``, ``conftest.py``, ``x_test.go``, ``x.test.js``, ``x.spec.ts``), or its directory
    does: ``tests/`` anywhere, ``test/`` or ``testing/`` at the root or under ``src/`` (pytest's
    ``testing/``, Maven's ``src/test/``), and anywhere for a language other than Python. A Python
    package named ``test`` or ``testing`` inside the library (``django/test``, ``sympy/testing``,
    ``lib/matplotlib/testing``) is its testing API, which its users import: code like any other,
    whose edit may be the fix."""
    p = PurePosixPath(path)
    dirs = p.parts[:-1]
    return (
        bool(_TEST_DIRS & set(dirs))
        or any(
            d in _TESTING_DIRS and (i == 0 or dirs[i - 1] == "src" or p.suffix != ".py")
            for i, d in enumerate(dirs)
        )
        or p.name.startswith("test_")
        or p.name in _TEST_NAMES
        or p.stem.endswith(("_test", ".test", ".spec"))
    )


def is_test_code(path: str) -> bool:
    """Whether a path is code that tests: a test module, or a module of a testing package
    anywhere (``django/test``, ``numpy/testing``): a failure raised in an assertion helper is the
    test's own."""
    return is_test_file(path) or bool(_TESTING_DIRS & set(PurePosixPath(path).parts[:-1]))


_DOCUMENT_SUFFIXES = frozenset({".rst", ".txt", ".md", ".adoc"})
_DOCUMENT_NAMES = frozenset(
    {
        "CHANGES",
        "CHANGELOG",
        "NEWS",
        "HISTORY",
        "AUTHORS",
        "LICENSE",
        ".gitignore",
        ".gitattributes",
        ".mailmap",
    }
)


def is_document(path: str) -> bool:
    """Whether a path is prose or the repository's bookkeeping, not code (a release note, a
    changelog, a page of the docs, ``.gitignore``): an edit of one changes nothing a run could show."""
    p = PurePosixPath(path)
    return p.suffix.lower() in _DOCUMENT_SUFFIXES or p.name in _DOCUMENT_NAMES


def writes_files(step: TraceStep) -> bool:
    """Whether an act changes files: an editor tool's write, or a command that writes (see the
    module doc). A rerun after one is a fix-and-rerun loop, not the same act repeated."""
    if _editor_target(step) is not None or patched(step):
        return True
    command = command_of(step)
    return command is not None and bool(_WRITES.search(command) or _heredoc_writes(command))


def command_of(step: TraceStep) -> str | None:
    """The shell command a tool call ran: ``arguments.command`` (or ``cmd``), an argv (a list, or
    shell-quoted text) as the script a shell runs (Codex's ``["bash", "-lc", script]``), a list
    otherwise as its words joined; or the arguments as a string."""
    if step.kind is not StepKind.tool_call or step.tool is None:
        return None
    args = step.tool.arguments
    if isinstance(args, dict):
        if args.get("is_input") is True:  # keys sent to a running process (OpenHands): no command
            return None
        command = args.get("command", args.get("cmd"))
        if isinstance(command, list) and command and all(isinstance(w, str) for w in command):
            command = _shell_script(command) or shlex.join(command)
        elif isinstance(command, str):
            command = _shell_script(command) or command
        return command if isinstance(command, str) and not args.get("path") else None
    return args if isinstance(args, str) else None


def _shell_script(argv: list[str] | str) -> str | None:
    """The script an argv hands a shell (Codex's ``["bash", "-lc", script]``, or that argv
    shell-quoted as its event stream writes it, ``bash -lc 'pytest -q'``), else None."""
    if isinstance(argv, str):
        if not argv.startswith(("bash ", "sh ", "zsh ", "/")):
            return None
        try:
            argv = shlex.split(argv)
        except ValueError:
            return None
    shell = len(argv) == 3 and PurePosixPath(argv[0]).name in _SHELLS and argv[1] in ("-c", "-lc")
    return argv[2] if shell else None


def exit_code(step: TraceStep) -> int | None:
    """The exit code a result records: the importer's ``raw.exit_code`` or status, else a leading
    ``<returncode>``."""
    code = step.raw.get("exit_code")
    if isinstance(code, int):
        return code
    if step.raw.get("status") == "ok":
        return 0
    found = _RETURNCODE.match(step.content)
    return int(found.group(1)) if found else None


@dataclass(frozen=True)
class TestRun:
    """One command's result read as a test or script run."""

    __test__ = False

    call: int  # position of the command
    result: int  # position of its output
    runner: str  # pytest, unittest, sympy, tox, nox, or script
    command: str
    summary: str  # the runner's summary line (verbatim), or the command for a script
    failed: int = 0  # failed and errored tests (a script: 1 when it failed)
    passed: int = 0
    failed_ids: tuple[str, ...] = ()
    exit: int | None = None

    @property
    def ok(self) -> bool:
        """Passed: no test failed or errored, and the command did not exit non-zero."""
        return self.failed == 0 and self.exit in (0, None) and (self.runner == "script" or self.passed > 0)

    @property
    def clean(self) -> bool:
        """Nothing failed and the command exited 0 (a run whose tests were all skipped is clean)."""
        return self.failed == 0 and self.exit in (0, None)

    @property
    def is_test(self) -> bool:
        return self.runner != "script"

    @cached_property
    def _runner_arguments(self) -> list[list[str]]:
        """The words the run's runner reads, a list for each simple command that starts one (its
        program left out: ``runtests.py`` runs tests, it is none)."""
        return [call[1] for words in _words(self.command) if (call := _runner_call(words))]

    @cached_property
    def _arguments(self) -> list[list[str]]:
        """The runner's words; for a script, or a runner the command does not name, every simple
        command's words after the first."""
        return self._runner_arguments or [words[1:] for words in _words(self.command)]

    @cached_property
    def targets(self) -> frozenset[str]:
        """The test files (or test directories) the command names; a ``path::test`` id by its file."""
        found = set()
        for words in self._arguments:
            for w in words:
                path = _norm(w.split("::")[0])
                if path.endswith(".py") or (not w.startswith("-") and is_test_file(path + "/x")):
                    found.add(path)
        return frozenset(found)

    @cached_property
    def labels(self) -> frozenset[str]:
        """The dotted labels a unittest-style runner is given (Django's ``runtests.py
        app.tests.Case``, ``python -m unittest module.Case.test``): what it runs, named by module."""
        if self.runner != "unittest":
            return frozenset()
        found = set()
        for words in self._runner_arguments:
            values = {i + 1 for i, w in enumerate(words) if w in _VALUED_OPTIONS}
            found |= {w for i, w in enumerate(words) if i not in values and _LABEL.fullmatch(w)}
        return frozenset(found - {"discover"})

    def names_file(self, path: str) -> bool:
        """Whether the run names a test file: among its targets, or the module (or package) one of
        its labels names (``utils_tests.test_text``: ``tests/utils_tests/test_text.py``)."""
        return path in self.targets or any(_label_names(label, path) for label in self.labels)

    @cached_property
    def selection(self) -> tuple[str, ...]:
        """What the command picks within its targets: the words of a ``-k`` expression and the test
        ids it names (``path::test``); empty when it runs its targets whole."""
        out: list[str] = []
        for words in _words(self.command):
            for i, w in enumerate(words[1:], 1):
                expression = words[i + 1] if w == "-k" and i + 1 < len(words) else None
                if w.startswith("-k") and len(w) > 2:
                    expression = w[2:].lstrip("=")
                if expression is not None:
                    out += [
                        t for t in re.split(r"[\s()]+", expression) if t and t not in ("and", "or", "not")
                    ]
                elif "::" in w:
                    out.append(_norm(w))
        return tuple(out)

    def covers(self, test: str) -> bool | None:
        """Whether the run ran a test again (by its id: ``path.py::name``, SymPy's ``path.py:name``,
        unittest's ``module.Class.test``): its file (or module) is among what the run names, or it
        names nothing, and the selection, if any, picks it. None for a unittest id on a run that
        names files or is no unittest run."""
        file = file_of_test(test)
        if file is None:
            return self._covers_label(test)
        if self.targets and not any(file == t or file.startswith(t.rstrip("/") + "/") for t in self.targets):
            return False
        if self.labels and not self.targets and not self.names_file(file):
            return False
        name = re.split(r"::|:", test[len(file) :].lstrip(":"))[-1].split("[")[0]
        same = test.replace("::", ":")
        return not self.selection or any(
            same.startswith(s.replace("::", ":")) if "::" in s else s in name for s in self.selection
        )

    def _covers_label(self, test: str) -> bool | None:
        """``covers`` for a unittest id: a label names its module, class or itself (``-k`` picks by
        the whole id, as unittest's does)."""
        if self.runner != "unittest" or self.targets:
            return None
        if self.labels and not any(test == label or test.startswith(label + ".") for label in self.labels):
            return False
        return not self.selection or any(s.strip("*") in test for s in self.selection)

    def clears(self, test: str) -> bool:
        """Whether this run, having run ``test``, did not fail it: it passed, or it named the tests it
        failed and ``test`` is not among them (a run that failed naming none, as a runner that died,
        clears nothing)."""
        return test not in self.failed_set and (self.ok or bool(self.failed_ids))

    @cached_property
    def failed_set(self) -> frozenset[str]:
        """The failed ids, to look one up in constant time (a suite's rerun may fail thousands)."""
        return frozenset(self.failed_ids)

    @property
    def key(self) -> str:
        """Which check the run is: its targets and labels, else its command with whitespace collapsed."""
        return " ".join(sorted(self.targets | self.labels)) or " ".join(self.command.split())


@dataclass(frozen=True)
class Edit:
    """A command that wrote files."""

    pos: int
    targets: tuple[str, ...]
    quote: str  # the command's first line that writes: a verbatim citation
    restore: bool = False  # a backup put back (see the module doc): the code as it was, no change
    reverts: bool = False  # puts the changed files back to the original code (a sed undoing the change)


@dataclass(frozen=True)
class ChangedFile:
    path: str
    new: bool
    removed_asserts: tuple[str, ...] = ()  # '-' lines of the diff that held an assertion
    added_asserts: tuple[str, ...] = ()


def _counts(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for n, word in re.findall(_COUNT, text):
        key = word.rstrip("s") if word.startswith(("error", "warning")) else word
        out[key] = out.get(key, 0) + int(n)
    return out


def parse_output(text: str) -> tuple[str, str, int, int, tuple[str, ...]] | None:
    """(runner, summary line, failed, passed, failed ids) from a command's output, the last
    summary in it; None when no runner summarised anything. Read without the terminal's colour
    codes (a coloured summary is still one); the summary is quoted verbatim, codes and all."""
    plain = uncoloured(text)
    parsed = _parse_plain(plain)
    if parsed is None or plain == text:
        return parsed
    runner, summary, failed, passed, ids = parsed
    return runner, _verbatim(text, plain.rfind(summary), len(summary)), failed, passed, ids


def uncoloured(text: str) -> str:
    """Text without a terminal's colour codes: what a quote says, for prose."""
    return _COLOUR.sub("", text)


def _verbatim(text: str, start: int, length: int) -> str:
    """The span of ``text`` that reads, without its colour codes, as the plain text's
    ``[start, start + length)``: codes before its first character and after its last left out."""

    def raw(at: int) -> int:  # where the plain text's character ``at`` stands in ``text``
        shift = 0
        for m in _COLOUR.finditer(text):
            if m.start() - shift > at:
                break
            shift += m.end() - m.start()
        return at + shift

    return text[raw(start) : raw(start + length - 1) + 1]


def _sympy_summaries(text: str) -> Iterator[tuple[int, str, str]]:
    """(where, the summary's first line, its counts) of each SymPy ``bin/test`` summary: a head,
    then ``in N seconds`` closing a line, in the head's line or the next (the terminal wraps it)."""
    for head in _SYMPY.finditer(text):
        first_end = text.find("\n", head.end())
        first_end = len(text) if first_end < 0 else first_end
        second_end = text.find("\n", first_end + 1) if first_end < len(text) else -1
        window = text[head.end() : len(text) if second_end < 0 else second_end]
        end = _SYMPY_END.search(window)
        if end is None:
            continue
        counts = window[: end.start()].rstrip().rstrip(",")
        yield head.start(), text[head.start() : first_end].strip(), counts


def _parse_plain(text: str) -> tuple[str, str, int, int, tuple[str, ...]] | None:
    """``parse_output`` on an output without colour codes, whose summary it returns as read."""
    found: list[tuple[int, tuple[str, str, int, int, tuple[str, ...]]]] = []
    for m in _PYTEST.finditer(text):
        c = _counts(m.group(1))
        # a run that ran no test still summarises (only skipped, deselected or warnings counted)
        if {"passed", "failed", "error"} & c.keys() or c.keys() <= {"skipped", "deselected", "warning"}:
            ids = _pytest_ids(text)
            found.append(
                (
                    m.start(),
                    (
                        "pytest",
                        m.group().strip(),
                        c.get("failed", 0) + c.get("error", 0),
                        c.get("passed", 0),
                        ids,
                    ),
                )
            )
    for m in (*_PYTEST_NONE.finditer(text), *_PYTEST_INTERRUPTED.finditer(text)):
        errors = int(m.group(1)) if m.groups() else 0
        found.append((m.start(), ("pytest", m.group().strip(), errors, 0, ())))
    for m in _UNITTEST.finditer(text):
        # "OK (skipped=24)", "FAILED (failures=1, errors=2, unexpected successes=1)": the tests that
        # passed are the rest of those that ran; a test's failing subtests are one id
        c = {k: int(v) for k, v in re.findall(r"([a-z][a-z ]*)=(\d+)", m.group(2))}
        bad = c.get("failures", 0) + c.get("errors", 0) + c.get("unexpected successes", 0)
        passed = max(0, int(m.group(1)) - bad - c.get("skipped", 0) - c.get("expected failures", 0))
        ids = tuple(
            dict.fromkeys(
                cls if cls.endswith(f".{name}") else f"{cls}.{name}"
                for _, name, cls in _UNITTEST_ID.findall(text)
            )
        )
        found.append((m.start(), ("unittest", m.group().strip().splitlines()[-1], bad, passed, ids)))
    for start, head, counts in _sympy_summaries(text):
        c = _counts(counts.replace("exceptions", "errors").replace("exception", "error"))
        failed = c.get("failed", 0) + c.get("error", 0)
        found.append((start, ("sympy", head, failed, c.get("passed", 0), tuple(_SYMPY_ID.findall(text)))))
    for m in _TOX.finditer(text):
        bad = m.group(2) == "failed" or m.group(4) == "FAIL"
        found.append((m.start(), ("tox", m.group().strip(), int(bad), int(not bad), ())))
    for m in _NOX.finditer(text):
        bad = m.group(2) == "failed"
        found.append((m.start(), ("nox", m.group().strip(), int(bad), int(not bad), ())))
    found += _compiled_runners(text) + _js_runners(text)
    if not found and (progress := list(_PYTEST_PROGRESS.finditer(text))):
        marks = "".join(m.group(1) for m in progress)
        ids = _pytest_ids(text)
        found.append(
            (0, ("pytest", progress[-1].group(), marks.count("F") + marks.count("E"), marks.count("."), ids))
        )
    return max(found, key=lambda f: f[0])[1] if found else None


def _compiled_runners(text: str) -> list[tuple[int, tuple[str, str, int, int, tuple[str, ...]]]]:
    """The summaries of cargo test, go test and node --test in an output, each runner's summaries
    taken together (a run of several test binaries or packages is one run): its counts summed, the
    first failing summary quoted (else the last). A change that does not compile is a failed run:
    cargo's ``could not compile`` before any summary, go's ``[build failed]`` package."""
    found = []
    if cargo := list(_CARGO.finditer(text)):
        shown = next((m for m in cargo if m.group(1) == "FAILED"), cargo[-1])
        failed, passed = (sum(int(m.group(k)) for m in cargo) for k in (3, 2))
        ids = tuple(dict.fromkeys(_CARGO_ID.findall(text)))
        found.append((cargo[-1].start(), ("cargo", shown.group().strip(), failed, passed, ids)))
    elif build := _CARGO_BUILD.search(text):
        found.append((build.start(), ("cargo", build.group().strip(), 1, 0, ())))
    if packages := list(_GO.finditer(text)):
        bad = [m for m in packages if m.group(1) == "FAIL"]
        ids = (*_GO_ID.findall(text), *(m.group(2) for m in bad if m.group().endswith("failed]")))
        shown = bad[0] if bad else packages[-1]
        counts = ("go", shown.group().strip(), max(len(bad), len(ids)), len(packages) - len(bad), tuple(ids))
        found.append((packages[-1].start(), counts))
    for m in _NODE.finditer(text):
        c = {k: int(v) for k, v in _NODE_COUNT.findall(m.group())}
        failed = c.get("fail", 0) + c.get("cancelled", 0)
        shown = "fail " if failed else "pass "
        line = next(
            (ln for ln in m.group().splitlines() if ln[2:].startswith(shown)), m.group().splitlines()[0]
        )
        ids = tuple(dict.fromkeys(_NODE_ID.findall(text, 0, m.start())))
        found.append((m.start(), ("node", line.strip(), failed, c.get("pass", 0), ids if failed else ())))
    return found


def _js_runners(text: str) -> list[tuple[int, tuple[str, str, int, int, tuple[str, ...]]]]:
    """The summaries of bun test, vitest and jest in an output; the failing summary line quoted."""
    found = []
    start = 0
    for m in _BUN.finditer(text):
        block = text[start : m.start()]
        c = {
            k.rstrip("s") if k.startswith("error") else k: int(v) for v, k in _BUN_COUNT.findall(block[-600:])
        }
        failed = c.get("fail", 0) + c.get("error", 0)
        line = next((ln for ln in block.splitlines() if failed and ln.strip().endswith(" fail")), m.group())
        ids = tuple(dict.fromkeys(_BUN_ID.findall(block))) if failed else ()
        found.append((m.start(), ("bun", line.strip(), failed, c.get("pass", 0), ids)))
        start = m.end()
    for runner, pattern, ids_of in (("vitest", _VITEST, _VITEST_ID), ("jest", _JEST, _JEST_ID)):
        for m in pattern.finditer(text):
            tests, files = (
                _counts(m.group("tests").replace("|", ",")),
                _counts(m.group("files").replace("|", ",")),
            )
            failed = tests.get("failed", 0) or files.get("failed", 0)
            line = m.group().splitlines()[1 if tests.get("failed", 0) or not failed else 0]
            ids = tuple(dict.fromkeys(ids_of.findall(text, 0, m.start()))) if failed else ()
            found.append((m.start(), (runner, line.strip(), failed, tests.get("passed", 0), ids)))
    return found


def _pytest_ids(text: str) -> tuple[str, ...]:
    """The tests a pytest run names failing: its ``FAILED id`` / ``ERROR id`` lines and verbose
    ``id FAILED`` lines, in order, once each."""
    found = [i for _, i in _PYTEST_ID.findall(text)] + [i for i, _ in _PYTEST_VERBOSE.findall(text)]
    return tuple(dict.fromkeys(found))


def _words(command: str) -> list[list[str]]:
    """The simple commands of a command line (heredoc bodies left out), each as its words."""
    return [list(words) for words in _head_words(_head_lines(command))]


@lru_cache(maxsize=8192)
def _head_words(head: str) -> tuple[tuple[str, ...], ...]:
    """``_words`` of a command's head lines, kept: a run's facts ask for one command's words many
    times, and splitting them again as the shell would was a fifth of the SWE-bench sample's review
    time. Keyed by the head lines, not the command, so a heredoc's body is never held. Room for a
    long run's every command (each fact walks them in order: past the room, every walk split them
    all again; 2,000 commands read 7 times as long as 1,000), a few megabytes at most."""
    out = []
    for part in _split(head):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            words = part.split()
        while words and (
            ("=" in words[0] and not words[0].startswith("=")) or words[0] in ("timeout", "env")
        ):
            words = words[1:] if words[0] != "timeout" else words[2:]
        if words:
            out.append(tuple(words))
    return tuple(out)


def _split(text: str) -> list[str]:
    """A command line cut at its unquoted separators (newline, ``;``, ``&&``, ``||``, ``|``)."""
    parts: list[str] = []
    buf: list[str] = []
    quote = None
    i = 0
    while i < len(text):
        c = text[i]
        if quote is not None:
            buf.append(c)
            if c == quote:
                quote = None
            elif c == "\\" and quote == '"' and i + 1 < len(text):
                buf.append(text[i + 1])
                i += 1
        elif c in "'\"":
            quote = c
            buf.append(c)
        elif c == "\\" and i + 1 < len(text):
            buf.append(" " if text[i + 1] == "\n" else c + text[i + 1])
            i += 1
        elif c in ";\n|" or text.startswith("&&", i):
            parts.append("".join(buf))
            buf = []
            i += 1 if text.startswith(("&&", "||"), i) else 0
        else:
            buf.append(c)
        i += 1
    parts.append("".join(buf))
    return [p for p in parts if p.strip()]


def _in_place_sed(words: list[str]) -> bool:
    return words[0] == "sed" and any(w.startswith("-i") for w in words[1:])


def _sed_files(words: list[str]) -> list[str]:
    """The files a ``sed -i`` writes: its operands after the script (``-e`` scripts take none)."""
    operands, scripted, skip = [], False, False
    for w in words[1:]:
        if skip:
            skip = False
        elif w in ("-e", "-f", "--expression", "--file"):
            scripted, skip = True, True
        elif w.startswith("-") and len(w) > 1:
            continue
        else:
            operands.append(w)
    return operands if scripted else operands[1:]


def _sed_script(words: list[str]) -> str | None:
    """The one script of a ``sed -i`` command; None for several (``-e`` twice) or a script file."""
    scripts = [words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-e", "--expression")]
    if any(w in ("-f", "--file") for w in words) or len(scripts) > 1:
        return None
    if scripts:
        return scripts[0]
    operands = [w for w in words[1:] if not w.startswith("-")]
    return operands[0] if operands else None


def _head_lines(command: str, code: bool = False) -> str:
    """A command without its heredoc bodies; with ``code``, without only those that are text
    handed to a program, neither code it runs nor a file it writes (``git commit -m "$(cat <<'EOF'
    … EOF)"``: a ``>`` in its author's address writes nothing)."""
    lines, out, end, keep = command.splitlines(), [], None, False
    for line in lines:
        if end is not None:
            if line.strip() == end:
                end = None
            elif keep:
                out.append(line)
            continue
        out.append(line)
        m = _HEREDOC.search(line)
        if m:
            end = m.group(1)
            words = re.findall(r"[\w./-]+", line[: m.start()])
            keep = code and (
                bool(_REDIRECT.search(line))
                or any(
                    _SCRIPT.match(w.rsplit("/", 1)[-1]) or w.rsplit("/", 1)[-1] in _INTERPRETERS
                    for w in words
                )
            )
    return "\n".join(out)


def _heredocs(command: str) -> Iterator[tuple[str, str, bool]]:
    """The files a command writes with a heredoc (``cat <<'EOF' > f.py``): (path, body, whether it
    appends: ``>>``)."""
    lines = command.splitlines()
    i = 0
    while i < len(lines):
        m = _HEREDOC.search(lines[i])
        target = _REDIRECT.search(lines[i])
        if m:
            body = []
            i += 1
            while i < len(lines) and lines[i].strip() != m.group(1):
                body.append(lines[i])
                i += 1
            if target:
                yield target.group(1).strip("'\""), "\n".join(body), target.group().startswith(">>")
        i += 1


def _heredoc_writes(command: str) -> dict[str, str]:
    """Files a command writes with a heredoc: path -> the body it writes."""
    return {path: body for path, body, _ in _heredocs(command)}


class _ScriptHistory:
    """The code of one file written by heredocs as it stood after each write: ``>`` starts it anew,
    ``>>`` adds to it (a reproduction extended with more cases still runs the first ones). The
    pieces are shared by the versions, and a version is found by bisection, so reading the code a
    command ran costs its own length, not the run's history."""

    def __init__(self) -> None:
        self._pieces: list[str] = []
        self._positions: list[int] = []  # the command of each write, ascending
        self._spans: list[tuple[int, int]] = []  # the pieces of the file after each write

    def write(self, pos: int, body: str, appends: bool) -> None:
        start = self._spans[-1][0] if appends and self._spans else len(self._pieces)
        self._pieces.append(body)
        self._positions.append(pos)
        self._spans.append((start, len(self._pieces)))

    def at(self, pos: int) -> str | None:
        """The file's code once the command at ``pos`` ran; None before its first write."""
        i = bisect_right(self._positions, pos) - 1
        if i < 0:
            return None
        start, end = self._spans[i]
        return "\n".join(self._pieces[start:end])


def _program(words: list[str]) -> bool:
    """Whether a simple command runs a program (a build, a make target, a shell script, a module's
    main through ``python -m``), not a utility that reads, searches, edits or manages files."""
    module = _module_run(words)
    if module:
        return _program(module)
    name = PurePosixPath(words[0]).name
    return (
        name not in _UTILITIES
        and name not in _ACI
        and not _SCRIPT.match(words[0])
        and not words[0].startswith(("#", "<"))
    )


def _module_run(words: list[str]) -> list[str] | None:
    """``python -m module args`` as the program it runs: ``[module, *args]`` (``python -m pylint
    x.py`` is ``pylint x.py``; ``python -m pip`` is pip, a utility); None for any other command."""
    if not _SCRIPT.match(words[0]):
        return None
    args = words[1:]
    for i, w in enumerate(args):
        if w == "-m":
            module = args[i + 1 :]
            return module if module and module[0] not in _MODULE_UTILITIES else None
        if w in ("-c", "-") or not (w.startswith("-") or (i and args[i - 1] in ("-W", "-X"))):
            return None  # Python runs code or a file, not a module
    return None


def runner_of(command: str) -> str | None:
    """The test runner a command starts (pytest, ``python -m pytest`` / ``unittest``, Django's
    ``runtests.py`` and ``test`` command, SymPy's ``bin/test``, tox, nox, cargo test, go test,
    ``node --test``, ``bun test``, vitest, jest; ``package`` for a project's ``npm test``, whose
    runner its summary names), by its summary's kind; None for any other."""
    return next((call[0] for words in _words(command) if (call := _runner_call(words))), None)


def _runners_only(command: str) -> bool:
    """Whether every program or script a command runs is a test runner (``cd tests && python -m
    unittest x``; a reproduction run beside pytest is not)."""
    running = [w for w in _words(command) if _script(w)[0] or _program(w)]
    return bool(running) and all(runner_of(" ".join(w)) for w in running)


def _runner_call(words: list[str]) -> tuple[str, list[str]] | None:
    """(the runner, the arguments it reads) when a simple command starts a test runner."""
    name = PurePosixPath(words[0]).name
    if name in _RUNNER_PROGRAMS:
        return _RUNNER_PROGRAMS[name], words[1:]
    program, args = words[0], words[1:]
    if _SCRIPT.match(program):
        rest = words[1:]
        if "-m" in rest[:-1]:
            module, args = rest[rest.index("-m") + 1], rest[rest.index("-m") + 2 :]
            if module == "django" and args[:1] == ["test"]:  # python -m django test
                return "unittest", args[1:]
            return (module, args) if module in ("pytest", "unittest") else None
        rest = _python_args(rest)
        program, args = (rest[0], rest[1:]) if rest else ("", [])  # the file Python runs
    if PurePosixPath(program).name == "runtests.py":
        return "unittest", args
    if PurePosixPath(program).name in _DJANGO_COMMANDS and args[:1] == ["test"]:
        return "unittest", args[1:]  # manage.py test, django-admin test: unittest's summary
    if program.endswith("bin/test"):
        return "sympy", args
    if words[:2] in (
        ["cargo", "test"],
        ["cargo", "nextest"],
        ["go", "test"],
        ["node", "--test"],
        ["bun", "test"],
    ):
        return words[0], words[2:]
    if name in ("npx", "bunx") and args and PurePosixPath(args[0]).name in ("vitest", "jest"):
        return PurePosixPath(args[0]).name, args[1:]
    package = next((p for p in _PACKAGE_TESTS if words[: len(p)] == p), None)
    return ("package", words[len(package) :]) if package else None


def _python_args(args: list[str]) -> list[str]:
    """Python's arguments from the one that says what it runs (a file, ``-c``, ``-``): its own
    options dropped, with the value ``-W`` / ``-X`` take (``python -W error runtests.py``)."""
    for i, w in enumerate(args):
        if w in ("-c", "-") or not w.startswith("-"):
            if i and args[i - 1] in ("-W", "-X") and w not in ("-c", "-"):
                continue
            return args[i:]
    return []


def _script(words: list[str]) -> tuple[bool, str | None]:
    """(runs Python code, the file it runs) for one simple command."""
    if not words or not _SCRIPT.match(words[0]):
        return False, None
    rest = _python_args(words[1:])
    if "-m" in words[1:3]:
        return False, None
    if rest and rest[0] in ("-c", "-"):
        return True, None
    return (True, rest[0]) if rest and rest[0].endswith(".py") else (False, None)


CALL_REACH = 256  # steps back from a result where the call it answers is looked for


def answered_call(steps: list[TraceStep], pos: int) -> TraceStep | None:
    """The call the result at ``pos`` answers: the one its ``reply_to`` names (a turn of several
    calls is answered after all of them), else the step before it."""
    reply = steps[pos].refs.reply_to if steps[pos].refs else None
    if reply is None:
        return steps[pos - 1] if pos > 0 else None
    # looked for among the steps just before: a reference to a step far back, or to none, costs no
    # walk over the whole run for every result
    return next(
        (steps[p] for p in range(pos - 1, max(-1, pos - 1 - CALL_REACH), -1) if steps[p].step_id == reply),
        None,
    )


def worked_beside(steps: list[TraceStep]) -> frozenset[int]:
    """The results of a process the agent worked beside, none a check's outcome: the word that a
    command started in the background (``raw.background_task``: its output comes later, see
    ``TestRunFacts.calls``), the answer to the agent's stopping one (``raw.stopped``), and the end
    of a process (a server or a watcher it started and stopped later) when between the call and its
    result another call was answered and the agent acted after that answer. How such a process ends
    (stopped with ^C, killed) is the agent's doing. The calls of one turn, all made before any
    answer, are not so."""
    calls = {s.step_id: p for p, s in enumerate(steps) if s.kind is StepKind.tool_call}
    out = {
        p
        for p, s in enumerate(steps)
        if s.kind is StepKind.tool_result and (s.raw.get("background_task") or s.raw.get("stopped"))
    }
    for end, step in enumerate(steps):
        start = calls.get(step.refs.reply_to) if step.refs and step.refs.reply_to else None
        if step.kind is not StepKind.tool_result or start is None or end - start < 4:
            continue  # a call, another call's answer and an act after it stand between, or none did
        agent, answered = steps[start].actor, False
        for between in range(start + 1, end):
            s = steps[between]
            if answered and s.actor == agent and s.kind in (StepKind.tool_call, StepKind.message):
                out.add(end)
                break
            answered = answered or s.kind is StepKind.tool_result
    return frozenset(out)


def _handle(call: TraceStep) -> str:
    """How a result names the call that started a command (``raw.output_of``): its tool call id,
    else, where the log gives none, its step id."""
    return call.tool.call_id if call.tool is not None and call.tool.call_id else call.step_id


def printed_text(result: TraceStep) -> str:
    """What a command printed, as its result shows it: a background command's output read from its
    file (``raw.output_of``, every line numbered by the file viewer) without those numbers (the
    lines themselves, a summary among them, stand in the result as they are)."""
    text = result.content
    numbered = result.raw.get("output_of") and all(_NUMBERED.match(ln) for ln in text.split("\n") if ln)
    return _NUMBERED.sub("", text) if numbered else text


class Message(NamedTuple):
    """A linter's or compiler's message: the file it is about and its text, without its line and
    column (a message that moved with an edit above it is the same message)."""

    path: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}: {self.text}"


def diagnostics(text: str) -> frozenset[Message]:
    """The messages a linter or compiler printed (a Python warning's line among them; not the
    frames of a pytest traceback, ``path.py:12: in func``)."""
    found = (
        Message(m[1] or m[4], " ".join((m[2] if m[1] else m[3]).split())) for m in _DIAGNOSTIC.finditer(text)
    )
    return frozenset(m for m in found if not _FRAME_TEXT.fullmatch(m.text))


def shows_files(result: TraceStep, call: TraceStep | None) -> bool:
    """A result of a shell command that ran no code (``sed -n``, ``cat``, ``grep``) and exited 0:
    its text is the files it showed (a docstring's example traceback), not the command failing."""
    command = command_of(call) if call is not None else None
    return (
        result.kind is StepKind.tool_result
        and exit_code(result) == 0
        and command is not None
        and not runs_code(command)
    )


def runs_code(command: str) -> bool:
    """Whether a command line may run code: Python in any form (a file, ``-c``, ``-m pytest``), a
    file it names by path (``bin/test``, ``./configure``) or another program; not when it only
    runs utilities that read, search, edit or manage files (``sed -n … | nl``)."""
    return any(_SCRIPT.match(w[0]) or "/" in w[0] or _program(w) for w in _words(command))


def holds_diff(text: str) -> bool:
    """A step that holds a unified diff of the repository (``diff --git`` headers): a record of
    changes already made, not code written there."""
    return _DIFF.search(text) is not None


class TestRunFacts:
    """The test runs, edits and changed files of one trace (see the module doc)."""

    __test__ = False  # a fact set, not a pytest class

    def __init__(self, trace: Trace) -> None:
        self.steps = trace.steps
        cwd = trace.header.metadata.get("cwd")  # the checkout a session ran in (Claude Code)
        self.root = _root(cwd) if isinstance(cwd, str) else None
        self.submission = next(
            (
                s.content
                for s in reversed(self.steps)
                if s.kind is StepKind.final_output and holds_diff(s.content)
            ),
            None,
        )

    @staticmethod
    def of(ctx: AuditContext) -> TestRunFacts:
        """The audit context's facts, built on first use and kept on it: the detector and the
        attribution (``first_change``) read the same run."""
        cached = ctx.__dict__.get("_test_run_facts")
        if not isinstance(cached, TestRunFacts):
            cached = TestRunFacts(ctx.trace)
            ctx.__dict__["_test_run_facts"] = cached
        return cached

    @cached_property
    def calls(self) -> dict[int, tuple[str, int | None]]:
        """Position of each command -> (its command, the position of its result). A command run
        in the background answers only that it started: its result is where it ended, its output
        read (a step whose ``raw.output_of`` names the call, ``_handle``, with the exit code it
        ended with), else the harness's word that it ended; none while it still runs."""
        answer: dict[str, int] = {}
        ended: dict[str, int] = {}
        for pos, step in enumerate(self.steps):
            if step.kind is StepKind.tool_result and step.refs and step.refs.reply_to:
                answer.setdefault(step.refs.reply_to, pos)
            started = step.raw.get("output_of")
            if (
                isinstance(started, str)
                and isinstance(step.raw.get("exit_code"), int)
                # its output shown outranks the harness's word that it ended
                and (started not in ended or self.steps[ended[started]].kind is not StepKind.tool_result)
            ):
                ended[started] = pos
        out = {}
        for pos, step in enumerate(self.steps):
            if step.actor_kind is ActorKind.agent and step.kind is StepKind.tool_call:
                command = command_of(step)
                result = answer.get(step.step_id)
                if (
                    result is None
                    and pos + 1 < len(self.steps)
                    and self.steps[pos + 1].kind is StepKind.tool_result
                ):
                    result = pos + 1
                if result is not None and self.steps[result].raw.get("background_task"):
                    result = ended.get(_handle(step), result)
                out[pos] = (command or "", result)
        return out

    @cached_property
    def beside(self) -> frozenset[int]:
        return worked_beside(self.steps)

    @cached_property
    def runs(self) -> list[TestRun]:
        """Every test or script run, in order."""
        runs = []
        for pos, (command, result) in self.calls.items():
            if result is None or patched(self.steps[pos]):  # a patch applied is an edit, not a run
                continue
            if result in self.beside:  # a server the agent stopped: its end is no run's outcome
                continue
            if self.steps[result].raw.get("error_type") == REFUSED:  # refused: it ran nothing
                continue
            started = self.steps[result].raw.get("output_of")
            if started is not None and started != _handle(self.steps[pos]):
                continue  # the read of a background command's output: that command's run
            out = self.steps[result]
            code = exit_code(out)
            printed = printed_text(out)
            parsed = parse_output(printed)
            if parsed is not None:
                runner, summary, failed, passed, ids = parsed
                runs.append(TestRun(pos, result, runner, command, summary, failed, passed, ids, code))
            elif (runner := runner_of(command)) and (raised := self._raised_in_change(printed)):
                # the runner died on the change before it reported a test: the change's failure
                runs.append(TestRun(pos, result, runner, command, raised, 1, 0, (), code))
            elif any(_script(w)[0] or _program(w) for w in _words(command)):
                if (code in _NOT_RUN or _NO_MODULE.search(printed)) and len(_words(command)) == 1:
                    continue  # no program or module to run (a runner not installed): no run
                # a command the harness killed (a timeout: status error, no exit code) did not pass
                killed = code is None and out.raw.get("status") == "error"
                bad = int(code not in (0, None) or killed or bool(_TRACEBACK.search(printed)))
                if not bad and _runners_only(command):
                    # a runner alone that summarised nothing and did not fail: its output was cut
                    # (``| head``) or it ran no test (``--help``, ``--collect-only``): no run to read
                    continue
                heads = [ln for ln in _head_lines(command).splitlines() if ln.strip()] or [command]
                line = next(  # the line that runs it (a heredoc writing the script comes first)
                    (ln for ln in reversed(heads) if any(_script(w)[0] or _program(w) for w in _words(ln))),
                    heads[0],
                )
                runs.append(TestRun(pos, result, "script", command, line.strip(), bad, 1 - bad, (), code))
        return runs

    @cached_property
    def _diff_paths(self) -> frozenset[str]:
        return frozenset(m.group(2) for m in _DIFF.finditer(self.submission or ""))

    def _rel(self, path: str) -> str:
        """A written path as the diff names it: an absolute path under the checkout (SWE-agent's
        ``/repo/…``, OpenHands' ``/workspace/…``) by the changed file it ends with; under the
        session's working directory, relative to it; with no working directory known, a relative
        path as the absolute path an editor wrote that ends with it."""
        path = _norm(path)
        if self.root is not None and path.startswith(self.root):
            return path.removeprefix(self.root)
        if path.startswith("/"):
            return next((c for c in self._diff_paths if path.endswith("/" + c)), path)
        if self.root is None and self.submission is None:  # a session that records no cwd
            return next((a for a in self._written_absolute if a.endswith("/" + path)), path)
        return path

    @cached_property
    def _written_absolute(self) -> tuple[str, ...]:
        """The absolute paths editor and patch calls wrote. Where a session records no working
        directory (``codex exec --json``), a command's relative path that one of them ends with
        names the same file."""
        found = (
            _norm(p)
            for pos in self.calls
            for p in (*patched(self.steps[pos]), _editor_target(self.steps[pos]) or "")
            if p.startswith("/")
        )
        return tuple(dict.fromkeys(found))

    @cached_property
    def changed(self) -> dict[str, ChangedFile]:
        """The submitted diff's files (else the edits' targets, those the run created new), path ->
        what changed."""
        if self.submission is None:
            return {
                _norm(t): ChangedFile(_norm(t), new=_norm(t) in self._made)
                for e in self._edits(())
                for t in e.targets
            }
        out: dict[str, ChangedFile] = {}
        chunks = re.split(r"(?m)^(?=diff --git )", self.submission)
        for chunk in chunks:
            m = _DIFF.match(chunk)
            if not m:
                continue
            lines = chunk.splitlines()
            removed = tuple(
                ln[1:].strip()
                for ln in lines
                if ln.startswith("-") and not ln.startswith("---") and _assertion(ln)
            )
            added = tuple(
                ln[1:].strip()
                for ln in lines
                if ln.startswith("+") and not ln.startswith("+++") and _assertion(ln)
            )
            # an assertion the diff removes and adds again word for word moved (a test inserted
            # before it, a block re-indented the same): no expectation changed
            kept = set(removed) & set(added)
            out[m.group(2)] = ChangedFile(
                m.group(2),
                "\nnew file mode" in chunk.split("\n@@")[0],
                tuple(r for r in removed if r not in kept),
                tuple(a for a in added if a not in kept),
            )
        return out

    def _edits(self, kept: tuple[str, ...]) -> list[Edit]:
        """Every command that writes a file, with the paths it names as written (and the ``kept``
        paths its writing code names)."""
        backups: dict[str, str] = {}  # backup path -> the file it copied
        edits = []
        for pos, (command, result) in self.calls.items():
            step = self.steps[pos]
            editor = _editor_target(step)
            patch = patched(step)
            if editor is not None or patch:
                failed = result is not None and self.steps[result].raw.get("status") == "error"
                if failed:  # a failed edit wrote nothing
                    continue
                if patch:
                    edits.append(Edit(pos, tuple(self._rel(p) for p in patch), next(iter(patch.values()))[1]))
                else:  # arguments written as JSON are one long line: quote it around the file's path
                    json_text = step.content.lstrip().startswith("{")
                    quote = editor if json_text else first_line(step.content) or editor
                    edits.append(Edit(pos, (self._rel(editor),), quote))
                continue
            if not command:
                continue
            simple = _words(command)
            if (
                len(simple) == 1
                and _in_place_sed(simple[0])
                and result is not None
                and exit_code(self.steps[result])
            ):
                continue  # a lone sed that failed (a script it could not parse) wrote nothing
            targets = list(_heredoc_writes(command))
            code = _head_lines(command, code=True)
            restore = False
            for words in simple:
                if _in_place_sed(words):
                    targets += _sed_files(words)
                elif words[0] in ("cp", "mv") and len(words) >= 3:
                    source, target = _norm(words[-2]), _norm(words[-1])
                    restore = restore or backups.get(source) == target
                    if words[0] == "cp":
                        backups[target] = source
                    targets.append(words[-1])
                elif words[0] == "tee":
                    targets += [w for w in words[1:] if not w.startswith("-")]
                elif words[0] == "create" and len(words) > 1:  # SWE-agent's create
                    targets.append(words[1])
                elif words[0] == "str_replace_editor" and words[1:2] and words[1] in _EDITOR_COMMANDS:
                    targets += words[2:3]
                runs_py, script = _script(words)
                if runs_py and (body := self._script_code(script, pos)) is not None:
                    code += "\n" + body
            for m in _REDIRECT.finditer(_head_lines(command)):
                if not m.group(1).startswith(("/dev/", "&")):
                    targets.append(m.group(1).strip("'\""))
            for m in _PY_WRITE.finditer(code):
                if m.group(1) or m.group(2):
                    targets.append(m.group(1) or m.group(2))
            if _WRITES.search(code):
                targets += [p for p in kept if p in _uncommented(code)]
            targets = [self._rel(t) for t in targets if t]
            if targets:
                line = next(
                    (
                        ln
                        for ln in command.splitlines()
                        if _WRITES.search(ln) or _SCRIPT.match(ln.split()[0] if ln.split() else "")
                    ),
                    command,
                )
                edits.append(Edit(pos, tuple(dict.fromkeys(targets)), line.strip(), restore))
        return edits

    @cached_property
    def edits(self) -> list[Edit]:
        """The edits that wrote a file the run changed for good (the submitted diff's files), with
        those that bring the code back marked: a replay of the change after a revert (a restore), and
        the line model's reverts and restores."""
        kept = set(self.changed)
        found = [e for e in self._edits(tuple(kept)) if kept & {_norm(t) for t in e.targets}]
        return self._followed(self._replays(found))

    def _replays(self, edits: list[Edit]) -> list[Edit]:
        """The edits with those that, right after a revert, repeat verbatim acts of the edits it
        undid marked as restores: the change put back as it was when it ran, no new change (an undone
        edit the replay leaves out is taken for scaffolding the agent dropped, such as debug output)."""
        out: list[Edit] = []
        for edit in edits:
            revert = max((p for p in self._git_reverts if p < edit.pos), default=None)
            if revert is None:
                out.append(edit)
                continue
            previous = max((p for p in self._git_reverts if p < revert), default=-1)
            before = [e for e in out if previous < e.pos < revert]  # the change the revert undid
            since = [e for e in out if e.pos > revert]
            done = {act for e in before for act in self._acts(e.pos)}
            replay = bool(done) and all(e.restore for e in since) and self._acts(edit.pos) <= done
            out.append(replace(edit, restore=True) if replay else edit)
        return out

    def _followed(self, edits: list[Edit]) -> list[Edit]:
        """The edits with those that bring the code back, as the line model follows the source files
        (``line_edits``), marked: to the original code (a revert) or to a state a run already tested
        (a restore). None is marked when the model ends on the original code of a file the
        submitted diff changes (it missed a write)."""
        files = sorted(self.source_files)
        models = {f: LineModel() for f in files}
        original = tuple(m.state() for m in models.values())
        index = {e.pos: i for i, e in enumerate(edits)}
        run_at = {r.call for r in self.runs}
        out, ran, saved, touched = list(edits), set(), dict(models), set()
        for pos, (command, _) in self.calls.items():
            edit = edits[index[pos]] if pos in index else None
            followed = {f for f in files if edit is not None and f in {_norm(t) for t in edit.targets}}
            touched |= followed
            for words in _words(command):
                if words[:2] == ["git", "stash"] and words[2:3] in (["pop"], ["apply"]):
                    models = dict(saved)
                elif words[:2] == ["git", "stash"]:
                    saved, models = models, {f: LineModel() for f in files}
                elif words[:2] == ["git", "checkout"]:
                    for w in words[2:]:
                        if _norm(w) in models:
                            models[_norm(w)] = LineModel()
                elif _in_place_sed(words):
                    written = {self._rel(t) for t in _sed_files(words)} & followed
                    for f in written:
                        models[f] = models[f].after(_sed_script(words))
                    followed -= written
            for f in followed:  # written by a means the model does not follow
                models[f] = models[f].after(None)
            state = tuple(m.state() for m in models.values())
            if edit is not None and edit.targets and not edit.restore and None not in state:
                touches = self._patches(edit)
                if touches and state == original:
                    out[index[pos]] = replace(edit, reverts=True)
                elif touches and state in ran:
                    out[index[pos]] = replace(edit, restore=True)
            if pos in run_at and None not in state:
                ran.add(state)
        if any(models[f].state() == LineModel().state() for f in touched):
            return edits  # the model ends on a file the submitted diff changes as original: it missed an edit
        return out

    def _acts(self, pos: int) -> frozenset[str]:
        """What an edit did, act by act: its simple commands and the bodies it wrote by heredoc (an
        editor call: its arguments)."""
        step = self.steps[pos]
        if _editor_target(step) is not None or patched(step):
            return frozenset({repr(step.tool.arguments if step.tool else None)})
        command = self.calls[pos][0]
        return frozenset(" ".join(w) for w in _words(command)) | frozenset(_heredoc_writes(command).values())

    @cached_property
    def source_edits(self) -> list[Edit]:
        """Edits of files the submitted diff changes that existed before and are not tests: the fix
        (the scratch scripts an agent leaves behind are new files)."""
        return [e for e in self.edits if not (e.restore or e.reverts) and self._patches(e)]

    @cached_property
    def source_files(self) -> tuple[str, ...]:
        """The changed files of the project's code (``_source``), in the diff's order."""
        return tuple(p for p in self.changed if self._source(p))

    def _patches(self, edit: Edit) -> bool:
        """Whether an edit writes a source file of the change (not only a test, a note or a script)."""
        return any(_norm(t) in self.source_files for t in edit.targets)

    def _source(self, path: str) -> bool:
        """A changed file of the project's code: it existed before, and is neither a test nor prose."""
        found = self.changed.get(path)
        return found is not None and not found.new and not is_test_file(path) and not is_document(path)

    def test_edits(self, path: str) -> list[Edit]:
        return [e for e in self.edits if path in {_norm(t) for t in e.targets}]

    @cached_property
    def reverts(self) -> list[int]:
        """Commands that put changed files back to the original code (``git stash``, ``git
        checkout [--] PATH``, an edit that undoes the change): the runs after one, until the next
        edit, test the code before the change."""
        return sorted(set(self._git_reverts) | {e.pos for e in self.edits if e.reverts})

    @cached_property
    def _git_reverts(self) -> list[int]:
        out = []
        for pos, (command, _) in self.calls.items():
            for words in _words(command):
                stash = words[:2] == ["git", "stash"] and (
                    len(words) == 2 or words[2] in ("push", "save", "-u")
                )
                checkout = words[:2] == ["git", "checkout"] and any(
                    _norm(w) in self.changed for w in words[2:]
                )
                if stash or checkout:
                    out.append(pos)
        return out

    @cached_property
    def restores(self) -> list[int]:
        """Commands that end a revert (``git stash pop`` / ``apply``, a backup put back)."""
        out = {e.pos for e in self.edits if e.restore}
        for pos, (command, _) in self.calls.items():
            if any(w[:2] == ["git", "stash"] and w[2:3] in (["pop"], ["apply"]) for w in _words(command)):
                out.add(pos)
        return sorted(out)

    def on_original_code(self, run: TestRun) -> bool:
        """Whether a run tested the code before the change: it came before the first source edit,
        or after a revert with no source edit or restore between (a command that reverts, runs and
        restores tests the original code only itself). Found by bisection in the sorted positions:
        asked of every run by every fact, a scan of them all made a long run's review quadratic."""
        edits, call = self._edit_positions, run.call
        if not edits or call < edits[0]:
            return True
        at = bisect_right(self.reverts, call)
        if not at:
            return False
        revert = self.reverts[at - 1]  # the last revert at or before the run
        after = bisect_right(edits, revert)  # the first source edit after it
        restored = bisect_left(self.restores, revert)  # the first restore at or after it
        return (
            not (after < len(edits) and edits[after] < call)
            and not (restored < len(self.restores) and self.restores[restored] < call)
            and revert != edits[-1]
        )

    @cached_property
    def _edit_positions(self) -> list[int]:
        return sorted(e.pos for e in self.source_edits)

    def exercises(self, run: TestRun) -> bool | None:
        """Whether a run's code imports a package or module of the changed source files (a check
        that imports none never ran the change, nor did a runner that reached no test); True for a
        runner, None for code the trace does not hold (a script written outside it, a program other
        than Python)."""
        if self.reached_no_test(run):
            return False
        if run.is_test:
            return True
        code = self.code_run(run.call)
        if code is None:
            return None
        names = {part.removesuffix(".py") for p in self.source_files for part in p.split("/")}
        imported = {m.group(1).split(".")[0] for m in _IMPORT.finditer(code)}
        return bool(imported & names)

    def code_run(self, pos: int) -> str | None:
        """The Python code the command at ``pos`` ran: its inline code and the code written by
        heredoc (at or before it) of each script it runs; None when it runs a script the trace never
        wrote, or no Python."""
        command = self.calls[pos][0]
        code, any_python = [], False
        for words in _words(command):
            runs_py, script = _script(words)
            any_python = any_python or runs_py
            if runs_py and script is not None:
                body = self._script_code(script, pos)
                if body is None:
                    return None
                code.append(body)
            elif runs_py:
                rest = _python_args(words[1:])
                # ``python -c CODE``: the code is its argument; ``python - <<EOF``: the command's heredoc
                code.append(rest[1] if rest[0] == "-c" and len(rest) > 1 else command)
        return "\n".join(code) if any_python else None

    def _script_code(self, script: str | None, pos: int) -> str | None:
        """The code of a file written by heredoc once the command at ``pos`` ran; None for a file
        no heredoc wrote by then."""
        history = self._scripts.get(script) if script is not None else None
        return history.at(pos) if history is not None else None

    @cached_property
    def _scripts(self) -> dict[str, _ScriptHistory]:
        """Every file written by heredoc, with its history."""
        out: dict[str, _ScriptHistory] = {}
        for pos, (command, _) in self.calls.items():
            for path, body, appends in _heredocs(command):
                out.setdefault(path, _ScriptHistory()).write(pos, body, appends)
        return out

    @cached_property
    def scratch(self) -> frozenset[str]:
        """Paths the agent created during the run (a heredoc, a ``>`` redirect, an editor's
        ``create``, ``mkdir``) that the submitted diff does not hold; an edited project file is none."""
        return self._made - set(self.changed)

    @cached_property
    def _made(self) -> frozenset[str]:
        """Paths the agent created during the run (a heredoc, a ``>`` redirect, an editor's
        ``create``, ``mkdir``)."""
        made = set()
        for pos, (command, result) in self.calls.items():
            args: Any = self.steps[pos].tool.arguments if self.steps[pos].tool else None
            if (
                isinstance(args, dict)
                and args.get("command") == "create"
                and isinstance(args.get("path"), str)
            ):
                made.add(_norm(args["path"]))
            elif (created := _created(self.steps[result] if result is not None else None)) is not None:
                made.add(self._rel(created))
            made.update(self._rel(p) for p, (added, _) in patched(self.steps[pos]).items() if added)
            made.update(_norm(m.group(1).strip("'\"")) for m in _CREATE.finditer(_head_lines(command)))
            for words in _words(command):
                if words[0] == "mkdir":
                    made.update(_norm(w).rstrip("/") for w in words[1:] if not w.startswith("-"))
                elif words[0] == "create" and len(words) > 1:
                    made.add(_norm(words[1]))
        return frozenset(made)

    def _is_scratch(self, path: str) -> bool:
        return any(path == s or path.startswith(s + "/") for s in self.scratch)

    @cached_property
    def project_runs(self) -> list[TestRun]:
        """The runs that reached the project's tests (``project_test``), in order."""
        return [r for r in self.runs if self.project_test(r)]

    def project_test(self, run: TestRun) -> bool:
        """A runner run that reached the project's tests: one ran (a run that collected none, as
        on a path not found, reached nothing; so did one that could not import or set up its tests
        for a reason outside the change), and it names a test path that is no scratch, or names no
        scratch path at all (a whole suite, a module by name)."""
        if not run.is_test or not (run.passed or run.failed) or self._setup_failed(run):
            return False
        return self.on_project(run)

    def on_project(self, run: TestRun) -> bool:
        """Whether a run names a test path that is no scratch, or names no scratch path at all."""
        if any(not self._is_scratch(t) for t in run.targets):
            return True
        named = {_norm(w.split("::")[0]).rstrip("/") for words in _words(run.command) for w in words[1:]}
        return not any(self._is_scratch(w) for w in named)

    def _raised_in_change(self, output: str) -> str | None:
        """The error line of the last traceback in ``output`` when its frames run through a changed
        source file (a runner that cannot import the code it tests), else None."""
        starts = [m.end() for m in _TRACEBACK.finditer(output)]
        if not starts:
            return None
        frames = [_norm(f) for f in _FRAME.findall(output, starts[-1])]
        if not any(f == p or f.endswith("/" + p) for f in frames for p in self.source_files):
            return None
        raised = list(_RAISED.finditer(output, starts[-1]))
        return raised[-1].group().strip() if raised else None

    def raised_reported(self, run: TestRun) -> tuple[str, str] | None:
        """(the error's name, what the output says of it) when a run raised an error the request
        reports, a run on the original code printed it too (an error the request asks for instead,
        the fix raising it, is none), and its traceback runs through a changed source file: the
        reported failure, on the change's own path. A script's last traceback gives its error line;
        a test's failure report, the name."""
        reported = self._reported_and_reproduced
        if not reported or not self.source_files:
            return None
        output = printed_text(self.steps[run.result])
        line = self._raised_in_change(output)
        if line is not None and (name := line.split(":")[0].rsplit(".", 1)[-1]) in reported:
            return name, line
        return next(
            (
                (raised, raised)
                for frames, raised in failure_reports(output)
                if raised in reported and any(self._in_change(f) for f in frames)
            ),
            None,
        )

    @cached_property
    def _reported_and_reproduced(self) -> frozenset[str]:
        """The errors the request reports that a run on the original code printed."""
        return self.reported_errors & frozenset().union(
            *(self.printed_reported(r) for r in self.runs if self.on_original_code(r))
        )

    def raised_elsewhere(self, run: TestRun) -> tuple[str, ...]:
        """The files the run's failures were raised in, as its output names them, when every
        failure it reports is shown and each was raised in code that is neither a test nor changed,
        through no changed file: the change is not on its path, so the failure is not shown to be
        the change's (an environment's parser, a missing tool). Else none: an assertion, or an
        exception raised in a test or its helpers, compares what the code returned, which the
        change may have made, and stays the change's."""
        if not run.failed or not self.source_files:
            return ()
        failures = failure_reports(printed_text(self.steps[run.result]))
        if len(failures) < run.failed:
            return ()  # a failure not shown (cut from the output, or reported elsewhere)
        if all(
            frames
            and raised not in (None, "AssertionError")
            and not is_test_code(frames[-1])
            and not any(self._in_change(f) for f in frames)
            for frames, raised in failures
        ):
            return tuple(dict.fromkeys(frames[-1] for frames, _ in failures))
        return ()

    def _in_change(self, path: str) -> bool:
        path = _norm(path)
        return any(path == p or path.endswith("/" + p) for p in self.source_files)

    def _setup_failed(self, run: TestRun) -> bool:
        """A runner that ran no test because its tests could not be imported or set up, and whose
        output names none of the changed source files: the tests' own setup failed (Django's
        settings not configured for pytest or unittest, a dependency missing), not the change.
        pytest counts a failure in a test's setup as an error and one in its body as a failure: a
        run of errors alone, each of a test (``ERROR path::test``, no module that failed to
        collect), reached no test's body. unittest reports an error in a class's or module's setup
        under the fixture's name (``setUpClass``) in place of its tests: a run whose every error is
        a fixture's ran none. An import error raised in a changed file names it, and stays the
        change's failure."""
        out = self.steps[run.result].content
        if run.passed or any(path in out for path in self.source_files):
            return False
        if _IMPORT_FAILED.search(out) is not None:
            return True
        if run.runner == "unittest":
            return len(run.failed_ids) == run.failed > 0 and all(
                test.rsplit(".", 1)[-1] in _UNITTEST_FIXTURES for test in run.failed_ids
            )
        counts = _counts(uncoloured(run.summary))
        return (
            run.runner == "pytest"
            and "error" in counts
            and "failed" not in counts
            and bool(run.failed_ids)
            and all("::" in test for test in run.failed_ids)
        )

    def reached_no_test(self, run: TestRun) -> bool:
        """A run of the tests that reached none of them for a reason outside the change: their
        setup failed (``_setup_failed``), or the runner died before it reported any test (a
        traceback and no summary: ``python -m django test`` without settings), neither through
        nor naming a changed file. The tests never ran: what that says of the fix is the coding
        findings' to judge, not a check the agent left failing. Never in a run that changed no
        project code: there is no change for the failure to be outside of."""
        return run.result in self._unreached

    @cached_property
    def _unreached(self) -> frozenset[int]:
        """The results of the runs that reached no test (``reached_no_test``), each output read
        once: the findings, the timeline and premature termination all ask."""
        if not self.source_files:
            return frozenset()
        out = set()
        for run in self.runs:
            if run.passed:
                continue
            if run.is_test:
                unreached = self._setup_failed(run)
            else:
                printed = printed_text(self.steps[run.result])
                unreached = (
                    _runners_only(run.command)
                    and _TRACEBACK.search(printed) is not None
                    and not any(path in printed for path in self.source_files)
                )
            if unreached:
                out.add(run.result)
        return frozenset(out)

    @cached_property
    def shown_fixed(self) -> TestRun | None:
        """The last run of a check that failed on the original code and ran clean on the change,
        running the code that failed (the same script, or one that goes on from it: a script
        rewritten in between, its setup mended, may pass by its own change, not the fix's). A
        script that caught the request's error and printed it failed so, and ran clean when it no
        longer prints it. A check that ran clean on the original code and that, on the change,
        prints an error the request asks for (``asked_printed``: raised, or caught and printed)
        shows the change doing what was asked, as does any check whose last run raised it from
        the changed code (``_raising_asked``)."""
        shown = []
        for before, changed in self.checks.values():
            last = changed[-1]
            if not last.clean and self.verdict(last) is None and not self.asked_printed(last):
                continue
            after = self.code_run(last.call)
            if any(
                self._cleared(r, last)
                and (after is None or (code := self.code_run(r.call)) is None or after.startswith(code))
                for r in before
            ):
                shown.append(last)
        return max([*shown, *self._raising_asked], key=lambda r: r.call, default=None)

    @cached_property
    def _raising_asked(self) -> list[TestRun]:
        """The checks whose last run, on the change, raised an error the request asks for, its
        traceback running through a changed source file: the change raises what was asked. No run
        on the original code is needed beside it, as none there printed that error (a new one-line
        check of the raise, after another that printed what the original code returned)."""
        last = {r.key: r for r in self.runs if not r.is_test}
        return [
            r
            for r in last.values()
            if not self.on_original_code(r)
            and (line := self._raised_in_change(printed_text(self.steps[r.result]))) is not None
            and line.split(":")[0].rsplit(".", 1)[-1] in self.asked_errors
        ]

    def _cleared(self, before: TestRun, after: TestRun) -> bool:
        """Whether a check's run on the change no longer fails as its run on the original code did.
        Run clean: that run failed, or printed an error the request reports; or it ran clean and
        this one prints an error the request asks for (``asked_printed``). A linter's verdict (its
        messages, and no crash): that run crashed or was refused (a usage error), or printed a
        message the request names that is gone, and nothing new came up."""
        verdict = self.verdict(after)
        if verdict is None:
            return (
                not before.ok
                or bool(self.printed_reported(before) - self.printed_reported(after))
                or (before.clean and bool(self.asked_printed(after)))
            )
        earlier = self.verdict(before)
        return not before.ok if earlier is None else bool(self.messages_gone(earlier, verdict))

    def asked_printed(self, run: TestRun) -> frozenset[str]:
        """The errors the request asks the change to raise (``asked_errors``) that a run printed."""
        return self.printed_reported(run) & self.asked_errors

    @cached_property
    def asked_errors(self) -> frozenset[str]:
        """The errors the request names but never quotes as printed (``TypeError: message``, the
        form a raised error takes in output) and no run on the original code printed: what it
        asks the change to raise (``normalize_newlines(None)`` should raise ``TypeError``). An
        error it reports is one it quotes, or one the original code printed when the run
        reproduced it."""
        quoted = frozenset(_ERROR_PRINTED.findall(self.request))
        return self.reported_errors - quoted - self._reported_and_reproduced

    def verdict(self, run: TestRun) -> frozenset[Message] | None:
        """The messages a check failed with, when they are all its failure: a program that exited
        non-zero printing a linter's or compiler's messages and no traceback (pylint exits non-zero
        while any message stands, the file's own conventions too: its verdict on the code, not a
        crash). None for any other run."""
        if run.is_test or run.exit in (0, None):
            return None
        traceback = _TRACEBACK.search(printed_text(self.steps[run.result]))
        return None if traceback else self._messages[run.result] or None

    @cached_property
    def _messages(self) -> dict[int, frozenset[Message]]:
        """Each run's result -> the linter's or compiler's messages it printed, each output read
        once (the verdicts and what the request names both ask)."""
        return {r.result: diagnostics(printed_text(self.steps[r.result])) for r in self.runs}

    def messages_gone(self, before: frozenset[Message], after: frozenset[Message]) -> frozenset[Message]:
        """The messages the request names (their text, or the kind it names: a code, a name in
        brackets) that a linter printed on the original code and no longer prints on the change,
        when it prints none there that it did not print before."""
        return self.named(before - after) if after <= before else frozenset()

    def named(self, messages: Iterable[Message]) -> frozenset[Message]:
        """The messages the request names: their text, or the kind it names (a code, a name in
        brackets)."""
        return frozenset(
            m
            for m in messages
            if m.text in self._request_flat
            or any(
                k in self._request_words
                for found in _MESSAGE_KIND.finditer(m.text)
                for k in found.groups()
                if k
            )
        )

    @cached_property
    def _request_flat(self) -> str:
        return " ".join(self.request.split())

    @cached_property
    def _request_words(self) -> frozenset[str]:
        return frozenset(_WORD.findall(self._request_flat))

    def failed_before(self, run: TestRun) -> bool:
        """Every test a run failed also failed on the original code (by its id, or the same run of
        a runner that names none): failures the change did not cause."""
        originals = self._failed_on_original
        if run.failed_ids:
            return all(any(i in r.failed_ids for r in originals) for i in run.failed_ids)
        return any(r.key == run.key for r in originals)

    @cached_property
    def _failed_on_original(self) -> list[TestRun]:
        """The runs of tests on the original code that failed."""
        return [r for r in self.runs if r.is_test and self.on_original_code(r) and not r.ok]

    def reproduces(self, run: TestRun) -> bool:
        """A run on the original code that failed, or printed an error the request reports (a
        script that caught it: ``except Exception as e: print(e)``) or a linter's message it names
        (``pylint --exit-zero``); not one of tests that never started (``reached_no_test``), nor
        one whose failures the change left standing (``left_standing``)."""
        return (
            self.on_original_code(run)
            and (not run.ok or bool(self.printed_reported(run)))
            and not self.reached_no_test(run)
            and not self.left_standing(run)
        )

    def left_standing(self, run: TestRun) -> bool:
        """A run of the project's tests whose every failed test a run on the change failed too,
        each in a test file the agent never wrote: failures the change left as they were (an
        environment's, shown on a revert after the fix), not the one it fixes. A test of the
        agent's own that fails on both codes reproduced the failure, and the fix did not clear it."""
        if not run.is_test or not run.failed_ids:
            return False
        return all(test in self._failed_on_change and not self._agents_test(test) for test in run.failed_ids)

    @cached_property
    def _failed_on_change(self) -> frozenset[str]:
        """Every test a run of the tests on the change failed."""
        return frozenset(
            t for r in self.runs if r.is_test and not self.on_original_code(r) for t in r.failed_ids
        )

    def _agents_test(self, test: str) -> bool:
        """Whether a test is in a file the agent wrote: one it edited, changed or wrote as scratch,
        by the file a pytest or SymPy id names, or the module a unittest label names."""
        path = file_of_test(test)
        if path is None:
            return any(_label_names(test, p) for p in self._written)
        path = _norm(path)
        return bool(self.test_edits(path)) or path in self.changed or self._is_scratch(path)

    @cached_property
    def _written(self) -> frozenset[str]:
        """The files the agent wrote: changed, edited or written as scratch."""
        return frozenset({*self.changed, *self.scratch, *(_norm(t) for e in self.edits for t in e.targets)})

    @cached_property
    def request(self) -> str:
        """The principal's words: every message of a human in the run."""
        return "\n".join(s.content for s in self.steps if s.actor_kind is ActorKind.human)

    @cached_property
    def reported_errors(self) -> frozenset[str]:
        """The exceptions and warnings the principal's request names: what it reports going wrong
        (an error it asks for instead is not printed by the original code, so it never reproduces)."""
        return frozenset(_ERROR_NAME.findall(self.request))

    def printed_reported(self, run: TestRun) -> frozenset[str]:
        """The errors the request reports, and the linter's messages it names (``path: text``),
        that a run printed."""
        return self._printed_reported.get(run.result, frozenset())

    @cached_property
    def _printed_reported(self) -> dict[int, frozenset[str]]:
        """Each run's result -> the reported errors and named messages it printed, each output
        read once (the fix shown, the reproduction and the timeline all ask)."""
        out = {}
        for r in self.runs:
            printed = printed_text(self.steps[r.result])
            errors = self.reported_errors & frozenset(_ERROR_NAME.findall(printed))
            out[r.result] = errors | {str(m) for m in self.named(self._messages[r.result])}
        return out

    @cached_property
    def closing_report(self) -> int | None:
        """The closing report of a session that submits no diff but whose edits say which files
        existed (Claude Code: an editor's result names its file, and a file it made as created;
        Codex: a patch updates a file or adds one): the agent's last message after its last
        command, which stands where a submitted diff stands; None for any other run (which files
        existed before is otherwise unknown)."""
        recorded = any(
            patched(self.steps[pos])
            or (result is not None and _editor_target(self.steps[pos]) and _account_file(self.steps[result]))
            for pos, (_, result) in self.calls.items()
        )
        if self.submission is not None or not recorded:
            return None
        last = max(self.calls, default=-1)
        return next(
            (
                p
                for p in range(len(self.steps) - 1, last, -1)
                if self.steps[p].actor_kind is ActorKind.agent
                and self.steps[p].kind is StepKind.message
                and not self.steps[p].raw.get("block")
                and self.steps[p].content.strip()
            ),
            None,
        )

    @property
    def handed_over(self) -> bool:
        """Whether the run handed a change over (a submitted diff, a session's closing report) or
        the harness recorded its empty submission: the coding findings judge each of its tests and
        checks by what it ran, which a tool's "failed and never passed" cannot tell apart."""
        return (
            self.submission is not None
            or self.closing_report is not None
            or self.empty_submission is not None
        )

    @cached_property
    def empty_submission(self) -> int | None:
        """Where the harness recorded that the run was submitted with no change at all (its exit
        record marked ``empty_submission``), else None."""
        return next(
            (
                p
                for p, s in enumerate(self.steps)
                if s.kind is StepKind.message
                and s.raw.get("record") == "exit"
                and s.raw.get("empty_submission")
            ),
            None,
        )

    @cached_property
    def edited_in_place(self) -> list[Edit]:
        """Edits that changed a project file the run did not create: ``sed -i`` that exited 0 (sed
        refuses a file that is not there) and an editor's replace or insert, of a source file (not a
        test, not prose, not made by the run) named relative to the checkout (an absolute path the
        diff does not name may lie outside it). Whatever the diff holds, these files existed."""
        copied = {
            _norm(w[-1])
            for command, _ in self.calls.values()
            for w in _words(command)
            if w[0] in ("cp", "mv") and len(w) >= 3
        }
        made = self._made | copied
        out = []
        for pos, (command, result) in self.calls.items():
            step = self.steps[pos]
            editor = _editor_target(step)
            args: Any = step.tool.arguments if step.tool else None
            failed = result is not None and (
                exit_code(self.steps[result]) not in (0, None)
                or self.steps[result].raw.get("status") == "error"
            )
            if failed:
                continue  # an edit that failed changed nothing
            if editor is not None and not (isinstance(args, dict) and args.get("command") == "create"):
                paths = [self._rel(editor)]
            elif patch := patched(step):
                paths = [self._rel(p) for p, (added, _) in patch.items() if not added]
            elif result is not None and exit_code(self.steps[result]) == 0:  # sed refuses a missing file
                paths = [
                    self._rel(t)
                    for words in _words(command)
                    if _in_place_sed(words)
                    for t in _sed_files(words)
                ]
            else:
                continue
            paths = [
                p
                for p in paths
                if _PATH.fullmatch(p)
                and not p.startswith("/")  # one outside the checkout (a copy under /tmp) is no project file
                and p not in made
                and not is_test_file(p)
                and not is_document(p)
            ]
            if paths:
                line = (
                    first_line(step.content)
                    if editor is not None
                    else next((ln for ln in command.splitlines() if _WRITES.search(ln)), command)
                )
                out.append(Edit(pos, tuple(dict.fromkeys(paths)), (line or paths[0]).strip()))
        return out

    @cached_property
    def editing(self) -> frozenset[int]:
        """Positions of the commands that write a changed source file: a script that patches the code
        is no check (one that writes its own input and runs it — a reproduction, even one the diff
        holds — or edits and runs a test runner, still is)."""
        return frozenset(e.pos for e in self.edits if self._patches(e))

    @cached_property
    def checks(self) -> dict[str, tuple[list[TestRun], list[TestRun]]]:
        """Each check (a run's key) that ran both on the original code and on the changed code:
        key -> (its runs on the original code, its runs on the changed code). A command that edits
        files is no check (a script that patches the code)."""
        out: dict[str, tuple[list[TestRun], list[TestRun]]] = {}
        for run in self.runs:
            if run.is_test or run.call not in self.editing:
                before, after = out.setdefault(run.key, ([], []))
                (before if self.on_original_code(run) else after).append(run)
        return {k: v for k, v in out.items() if v[0] and v[1]}


def file_of_test(test: str) -> str | None:
    """The file a test id names (``path.py::name``, SymPy's ``path.py:name``); None for an id that
    names none (unittest's ``module.Class.test``)."""
    file, found, _ = test.partition(".py")
    return file + found if found else None


def _label_names(label: str, path: str) -> bool:
    """Whether a dotted label names a file: the module one of its prefixes is (``a.b.Case``:
    ``…/a/b.py``), or the package the whole label is, that the file is in (``a``: ``…/a/…``)."""
    parts, path = label.split("."), "/" + path
    modules = ("/".join(parts[:k]) for k in range(1, len(parts) + 1))
    return f"/{'/'.join(parts)}/" in path or any(path.endswith(f"/{module}.py") for module in modules)


def output_body(step: TraceStep) -> str:
    """What a command printed: its result without a harness's ``<returncode>`` / ``<output>`` tags."""
    text = _RETURNCODE.sub("", step.content, count=1).strip()
    found = re.fullmatch(r"(?s)<output>(.*)</output>", text)
    return (found.group(1) if found else text).strip()


def _account_file(result: TraceStep) -> str | None:
    """The file an editor's result says it wrote (Claude Code's ``toolUseResult.filePath``; an
    importer's ``raw.written.path``, as the Gemini CLI's)."""
    account = result.raw.get("tool_use_result")
    written = result.raw.get("written")
    path = account.get("filePath") if isinstance(account, dict) else None
    path = written.get("path") if path is None and isinstance(written, dict) else path
    return path if isinstance(path, str) else None


def _created(result: TraceStep | None) -> str | None:
    """The file an editor's result says it created (Claude Code's ``toolUseResult.type: create``;
    ``raw.written.created``)."""
    account = result.raw.get("tool_use_result") if result is not None else None
    written = result.raw.get("written") if result is not None else None
    made = (isinstance(account, dict) and account.get("type") == "create") or (
        isinstance(written, dict) and written.get("created") is True
    )
    return _account_file(result) if made and result is not None else None


def _root(cwd: str) -> str | None:
    """A session's working directory as the prefix of the paths under it: a POSIX path, or a
    Windows one (``C:\\tmp\\proj``, its own separator kept)."""
    if cwd.startswith("/"):
        return cwd.rstrip("/") + "/"
    if re.match(r"[A-Za-z]:[\\/]", cwd):
        separator = "\\" if "\\" in cwd else "/"
        return cwd.rstrip("\\/") + separator
    return None


def failure_reports(output: str) -> list[tuple[list[str], str | None]]:
    """Each failed test's report in a runner's output: the files its traceback ran through, the
    deepest last, and the name of what was raised (None when the report shows none)."""
    heads = list(_FAILURE_HEAD.finditer(output))
    reports = []
    for n, head in enumerate(heads):
        stop = heads[n + 1].start() if n + 1 < len(heads) else len(output)
        end = _FAILURE_END.search(output, head.end(), stop)
        body = output[head.end() : end.start() if end else stop]
        if _TRACEBACK.search(body):  # Python's traceback (SymPy's runner, unittest)
            frames = _FRAME.findall(body)
            raised = [m.group().split(":")[0].strip() for m in _RAISED.finditer(body)]
        else:  # pytest's report
            found = _PYTEST_FRAME.findall(body)
            frames = [path for path, _ in found]
            last = found[-1][1] if found else ""
            raised = [last] if last and not last.startswith("in ") else _PYTEST_RAISED.findall(body)
        reports.append((frames, raised[-1].rsplit(".", 1)[-1] if raised else None))
    return reports


def _norm(path: str) -> str:
    return path.removeprefix("./").removeprefix("/testbed/")


def _assertion(line: str) -> bool:
    body = line[1:].strip()
    return body.startswith(
        ("assert ", "assert(", "self.assert", "with raises", "with pytest.raises", "raises(")
    ) or bool(re.match(r"\w+\.assert\w*\(|assert_\w+\(", body))


def _uncommented(code: str) -> str:
    """Code without its whole-line comments: a path a comment names is not one the code writes."""
    return "\n".join(ln for ln in code.splitlines() if not ln.lstrip().startswith("#"))


def first_line(text: str) -> str | None:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), None)


# Codex's apply_patch: an envelope of file sections, each opened by a line naming its file
_PATCH_FILE = re.compile(r"(?m)^\*\*\* (Update|Add|Delete) File: *(\S[^\n]*?) *$")


def patched(step: TraceStep) -> dict[str, tuple[bool, str]]:
    """The files a Codex ``apply_patch`` call writes (its ``input``, or an ``apply_patch`` argv's
    patch: ``*** Begin Patch`` … ``*** Update File: PATH`` / ``*** Add File: PATH`` …; the event
    stream's ``file_change``, its ``changes``), each with whether the patch adds it and the line
    that names it; empty for any other call."""
    args: Any = step.tool.arguments if step.tool and step.kind is StepKind.tool_call else None
    changes = args.get("changes") if isinstance(args, dict) else None
    if isinstance(changes, list):  # the event stream's file_change: each file and its kind
        return {
            c["path"]: (c.get("kind") == "add", f"{c.get('kind')} {c['path']}")
            for c in changes
            if isinstance(c, dict) and isinstance(c.get("path"), str) and c["path"]
        }
    text = args.get("input") if isinstance(args, dict) else None
    command = args.get("command") if isinstance(args, dict) else None
    if text is None and isinstance(command, list) and command[:1] == ["apply_patch"] and len(command) == 2:
        text = command[1]
    if not isinstance(text, str) or not text.lstrip().startswith("*** Begin Patch"):
        return {}
    return {m.group(2): (m.group(1) == "Add", m.group().strip()) for m in _PATCH_FILE.finditer(text)}


def _editor_target(step: TraceStep) -> str | None:
    """The path an editor tool call writes (create / str_replace / insert; Claude Code's ``Edit``,
    ``MultiEdit``, ``Write`` and ``NotebookEdit``, by their ``file_path`` and what they write), else
    None; SWE-agent's windowed ``edit`` / ``insert`` name no path and write the file open in its
    editor (the turn's recorded ``state.open_file``)."""
    args: Any = step.tool.arguments if step.tool else None
    if isinstance(args, dict) and _WRITTEN & args.keys():
        path = args.get("file_path", args.get("notebook_path", args.get("filePath")))
        if isinstance(path, str):
            return path
    if step.tool is not None and step.tool.name in ("edit", "insert") and not isinstance(args, dict | None):
        args = {}
    if isinstance(args, dict) and "path" not in args and step.tool.name in ("edit", "insert"):
        state = step.raw.get("state")
        open_file = state.get("open_file") if isinstance(state, dict) else None
        return open_file if isinstance(open_file, str) and "/" in open_file else None
    if not isinstance(args, dict) or not isinstance(args.get("path"), str):
        return None
    command = args.get("command")
    if (isinstance(command, str) and command in _EDITOR_COMMANDS) or (
        command is None and ({"new_str", "file_text", "content", "streamContent"} & args.keys())
    ):
        return args["path"]
    return None
