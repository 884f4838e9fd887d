"""The README and the pages under docs/ name only what exists: paths, modules and link targets.

What is checked, in README.md and every docs/*.md, in inline code (`...`) and fenced code
blocks — never in prose, so words of the text are left alone. A block marked as a shell session
(```sh, ```bash, ```shell, ```console) is an example: the files its commands name may be ones
they create, so it is not checked either; untagged blocks (pictures, listings) and code are.

- a *repository path*: a word starting with one of the repository's top-level folders and a
  slash (`app/cluster/gate.py`, `ha/`, `scripts/bench_node.py`, `tests/unit/`) must exist; a
  `*` in it is a glob that must match something. A path running into a placeholder
  (`<plan>`, `{name}`, `...`) names no single file and is left out, and so is a `::name` after
  a file (`app/webapp.py::create_app`) — the file is checked, the name is not;
- a *dotted name* rooted in one of our packages (`app.cluster.replication`,
  `ha.ports.SnapshotStore`, `engine.compile(...)`) must be a module of ours (a file or a
  package), or a name defined at the top level of one (a function, class, assignment or
  import), or an attribute defined in the body of such a class. Modules are read with `ast`,
  never imported. Configuration keys of the same shape (`ha.lease_ms`,
  `adapters.stop_timeout_seconds`: a `[section]` and key of conf/cepheus.toml) are not names.

And every link `[text](target)` to a file of the repository must reach it; a `#fragment` must
be the anchor of one of the target page's headings, as GitHub makes them. URLs are left alone.
"""

from __future__ import annotations

import ast
import functools
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("engine", "adapters", "formatters", "ha", "app")
# made at run time (var/) or by a build, never part of the repository
NOT_IN_REPOSITORY = {"var", "build", "dist", "node_modules"}


def _top_level_folders() -> tuple[str, ...]:
    return tuple(
        sorted(
            p.name
            for p in ROOT.iterdir()
            if p.is_dir()
            and not p.name.startswith((".", "_"))
            and not p.name.endswith(".egg-info")
            and p.name not in NOT_IN_REPOSITORY
        )
    )


def _pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


FENCE = re.compile(r"^(```|~~~)([^\n]*)\n.*?^\1[^\n]*$", re.M | re.S)
EXAMPLES = {"sh", "bash", "shell", "console"}  # fenced blocks of example commands
INLINE = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def code_of(text: str) -> Iterator[tuple[int, str]]:
    """(line number, text) of every fenced block and every inline code span."""
    for block in FENCE.finditer(text):
        if block.group(2).strip().lower() not in EXAMPLES:
            yield text.count("\n", 0, block.start()) + 1, block.group(0)
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    for span in INLINE.finditer(prose):
        yield prose.count("\n", 0, span.start()) + 1, span.group(2)


def path_pattern(folders: tuple[str, ...]) -> re.Pattern[str]:
    roots = "|".join(re.escape(f) for f in folders)
    return re.compile(rf"(?<![\w./$-])(?:{roots})/[\w./*-]*")


DOTTED = re.compile(rf"(?<![\w./$-])(?:{'|'.join(PACKAGES)})(?:\.[A-Za-z_]\w*)+")
PLACEHOLDER = ("<", "{", "…", "$")


@functools.cache
def config_keys() -> frozenset[str]:
    with (ROOT / "conf" / "cepheus.toml").open("rb") as f:
        conf = tomllib.load(f)
    return frozenset(f"{section}.{key}" for section, keys in conf.items() for key in keys)


# What a module defines under a name: a class (the names its body defines), a name imported from
# elsewhere (where from: "module.name"), or anything else (None).
Definition = frozenset[str] | str | None


@functools.cache
def _definitions(module: Path) -> dict[str, Definition]:
    """The top-level names of a module and what each is."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    names: dict[str, Definition] = {}
    for node in tree.body:
        for name, what in _defined(node):
            names[name] = what
    return names


def _defined(node: ast.stmt) -> Iterator[tuple[str, Definition]]:
    if isinstance(node, ast.ClassDef):
        yield node.name, frozenset(name for child in node.body for name, _ in _defined(child))
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        yield node.name, None
    elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        for target in targets:
            for leaf in ast.walk(target):
                if isinstance(leaf, ast.Name):
                    yield leaf.id, None
    elif isinstance(node, ast.ImportFrom):
        for alias in node.names:
            source = f"{node.module}.{alias.name}" if node.module and not node.level else None
            yield alias.asname or alias.name, source
    elif isinstance(node, ast.Import):
        for alias in node.names:
            yield (alias.asname or alias.name).split(".")[0], alias.name if alias.asname else None
    elif isinstance(node, ast.If | ast.Try):
        for child in [*node.body, *node.orelse, *getattr(node, "finalbody", [])]:
            yield from _defined(child)
        for handler in getattr(node, "handlers", []):
            for child in handler.body:
                yield from _defined(child)


def module_file(dotted: str) -> Path | None:
    base = ROOT.joinpath(*dotted.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def dotted_problem(name: str, hops: int = 0) -> str | None:
    """Why `name` names nothing of ours; None when it does (or is a configuration key)."""
    parts = name.split(".")
    if ".".join(parts[:2]) in config_keys():
        return None
    for cut in range(len(parts), 0, -1):
        module = module_file(".".join(parts[:cut]))
        if module is None:
            continue
        rest = parts[cut:]
        if not rest:
            return None
        defined = _definitions(module)
        if rest[0] not in defined:
            return f"{'.'.join(parts[:cut])} defines no {rest[0]!r}"
        what = defined[rest[0]]
        if isinstance(what, str):  # imported: look where it comes from, if that is ours
            if what.split(".")[0] not in PACKAGES or hops > 10:
                return None
            problem = dotted_problem(".".join([what, *rest[1:]]), hops + 1)
            return None if problem is None else f"{name}: {problem}"
        if len(rest) > 1 and what is not None and rest[1] not in what:
            return f"class {'.'.join(parts[: cut + 1])} defines no {rest[1]!r}"
        return None
    return "no such module"


def path_problem(path: str) -> str | None:
    if "*" in path:
        return None if any(ROOT.glob(path.rstrip("/"))) else "matches nothing"
    return None if (ROOT / path).exists() else "no such file or folder"


def names_in(text: str, folders: tuple[str, ...]) -> Iterator[tuple[int, str, str | None]]:
    """(line, name, problem or None) for every path and dotted name in the code of `text`."""
    paths = path_pattern(folders)
    for line, code in code_of(text):
        for m in paths.finditer(code):
            if "..." in m.group(0) or code[m.end() : m.end() + 1] in PLACEHOLDER:
                continue
            path = m.group(0).rstrip(".")
            yield line + code.count("\n", 0, m.start()), path, path_problem(path)
        for m in DOTTED.finditer(code):
            yield line + code.count("\n", 0, m.start()), m.group(0), dotted_problem(m.group(0))


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: its text lower-cased, punctuation dropped, spaces → '-'."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"[`*]", "", text).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


@functools.cache
def anchors(page: Path) -> frozenset[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6}\s+(.+?)\s*#*\s*$", text, re.M):
        anchor = github_anchor(heading)
        n = seen.get(anchor, 0)
        seen[anchor] = n + 1
        found.add(anchor if n == 0 else f"{anchor}-{n}")
    return frozenset(found)


def link_problems(page: Path, text: str) -> Iterator[tuple[int, str, str]]:
    prose = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    prose = INLINE.sub(lambda m: " " * len(m.group(0)), prose)
    for m in LINK.finditer(prose):
        target = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
            continue
        line = prose.count("\n", 0, m.start()) + 1
        file, _, fragment = target.partition("#")
        goal = (page.parent / file).resolve() if file else page
        if not goal.exists():
            yield line, target, "no such file"
        elif fragment and goal.suffix == ".md" and fragment not in anchors(goal):
            yield line, target, f"{goal.relative_to(ROOT)} has no heading with anchor #{fragment}"


def problems(page: Path, text: str | None = None) -> list[str]:
    text = page.read_text(encoding="utf-8") if text is None else text
    where = page.relative_to(ROOT)
    found = [
        f"{where}:{line}: `{name}`: {problem}"
        for line, name, problem in names_in(text, _top_level_folders())
        if problem is not None
    ]
    found += [
        f"{where}:{line}: link {target}: {problem}" for line, target, problem in link_problems(page, text)
    ]
    return found


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_path_module_and_link_a_page_names_exists(page: Path) -> None:
    assert problems(page) == []


def test_the_pages_name_repository_paths_at_all() -> None:
    """The rule matches what the pages write: the architecture page names dozens of paths."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = {name for _, name, _ in names_in(text, _top_level_folders())}
    assert {"app/cluster/gate.py", "app/persistence/journal.py", "app/node/ingress.py"} <= named
    assert "app/registry/migrations/" in named


def test_a_bogus_path_module_or_anchor_is_reported() -> None:
    page = ROOT / "docs" / "architecture.md"
    text = (
        "The gate is `app/cluster/gates.py`, run by `app.cluster.replications`; see `ha.lease.Holders`\n"
        "and `engine.Runtime.no_such_method`.\n"
        "```\napp/node/ingres.py ──► engine.Runtime\n```\n"
        "Pages: [node](node.md#no-such-section), [gone](gone.md), [here](#folders-and-what-each-may-import).\n"
    )
    found = problems(page, text)
    assert any("`app/cluster/gates.py`" in p for p in found)
    assert any("`app.cluster.replications`" in p for p in found)
    assert any("`ha.lease.Holders`" in p for p in found)
    assert any("`engine.Runtime.no_such_method`" in p for p in found)
    assert any("`app/node/ingres.py`" in p and ":4:" in p for p in found)
    assert any("node.md#no-such-section" in p for p in found)
    assert any("link gone.md" in p for p in found)
    assert len(found) == 7, found


def test_what_is_not_a_repository_name_is_left_alone() -> None:
    page = ROOT / "docs" / "node.md"
    text = (
        "Set `ha.lease_ms` and `adapters.stop_timeout_seconds`; the certificate is `var/tls/cert.pem`,\n"
        "the log `<data_dir>/input-log/`, tests `tests/unit/<mirror of package>/test_*.py`, the plan\n"
        "`plan.siddhi`, the bench `scripts/bench_*.py`, the app `app/webapp.py::create_app(config)`,\n"
        "the modules `app/nothing/...` and `app/nothing/…`.\n"
        "See <https://example.org/app/x.py> and [the engine](https://example.org/engine/nothing.py).\n"
    )
    assert problems(page, text) == []
