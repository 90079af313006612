"""The README's and docs/'s Markdown as tests/test_docs.py reads it: fenced blocks, the commands
in them, and the relative links between pages.

A fence's first info word is its language; `file=PATH` after it makes the block a file the
reader writes there before the commands that follow use it. Commands are the lines of `sh`
blocks (a trailing `\\` continues a line; two spaces and `#` start a comment) and the `$ ` lines
of `console` blocks, whose following lines are the output the command prints. `python` blocks
without `file=` are programs. `text` blocks are neither: configuration excerpts, layouts, logs;
nor are `cpp` blocks (C and C++ sources) without `file=`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

LANGUAGES = {"sh", "console", "python", "text", "cpp"}
_FENCE = re.compile(r"^```(.*)$")
_COMMENT = re.compile(r"\s{2,}#.*$")
_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    language: str
    file: str | None
    text: str

    @property
    def where(self) -> str:
        return f"{self.path.name}:{self.line}"


@dataclass
class Command:
    block: Block
    command: str
    output: list[str] = field(default_factory=list)  # console blocks: the lines it prints


def blocks(path: Path) -> list[Block]:
    found: list[Block] = []
    lines = path.read_text().splitlines()
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        words = match.group(1).split()
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        file = next((w[len("file="):] for w in words[1:] if w.startswith("file=")), None)
        found.append(Block(path, index + 1, words[0] if words else "", file,
                           "\n".join(lines[index + 1:end]) + "\n"))
        index = end + 1
    return found


def commands(block: Block) -> list[Command]:
    """The commands of an `sh` or `console` block, continuation lines joined."""
    result: list[Command] = []
    pending = ""
    for raw in block.text.splitlines():
        if block.language == "console":
            if raw.startswith("$ "):
                result.append(Command(block, raw[2:].strip()))
            elif result and raw.strip():
                result[-1].output.append(raw)
            continue
        line = pending + _COMMENT.sub("", raw).strip()
        if line.endswith("\\"):
            pending = line[:-1] + " "
            continue
        pending = ""
        if line and not line.startswith("#"):
            result.append(Command(block, line))
    return result


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    in_fence = False
    found = set()
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            in_fence = not in_fence
        elif not in_fence and line.startswith("#"):
            found.add(slug(line.lstrip("#")))
    return found


def relative_links(path: Path) -> list[str]:
    """Links to other files of the repository (and anchors in them or in this page)."""
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.MULTILINE | re.DOTALL)
    return [target for target in _LINK.findall(text)
            if not re.match(r"[a-z]+:", target)]
