"""The tutorial page as the test reads it (see run.py for the rules): its steps, and how what
a command prints is compared with what the page shows. Pure: no processes here."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class Failure(Exception):
    """A check that failed: `PAGE:LINE: what`."""


@dataclass
class Step:
    """One thing typed into a terminal: a command (`run`), Ctrl-C (`interrupt`), or nothing,
    only watching what its command prints next (`watch`)."""

    kind: str
    terminal: str
    line: int
    command: str = ""
    expected: list[tuple[int, str]] = field(default_factory=list)
    keeps_running: bool = False


def parse(text: str, page: str) -> list[Step]:
    """The steps of a page, in order."""
    steps: list[Step] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        fence = lines[i].strip()
        i += 1
        if not fence.startswith("```") or fence == "```":
            continue
        info = fence[3:].split()
        body_start = i
        while i < len(lines) and lines[i].strip() != "```":
            i += 1
        if i == len(lines):
            raise Failure(f"{page}:{body_start}: a code block that is never closed")
        body = [(n + 1, lines[n]) for n in range(body_start, i)]
        i += 1
        if info[0] != "console":
            continue
        if len(info) < 2:
            raise Failure(
                f"{page}:{body_start}: a console block needs the terminal it is typed in "
                f"(```console server); every command on the page is run by the test"
            )
        steps += block_steps(info[1], body, page)
    mark_running(steps)
    return steps


def block_steps(terminal: str, body: list[tuple[int, str]], page: str) -> list[Step]:
    steps: list[Step] = []
    current: Step | None = None
    for number, text in body:
        if text.startswith("$ "):
            current = Step("run", terminal, number, text[2:])
            steps.append(current)
        elif text.startswith("> ") and current and current.kind == "run" and not current.expected:
            current.command += "\n" + text[2:]
        elif text.strip() == "^C":
            current = Step("interrupt", terminal, number)
            steps.append(current)
        else:
            if current is None:
                current = Step("watch", terminal, number)
                steps.append(current)
            current.expected.append((number, text))
    return steps


def mark_running(steps: list[Step]) -> None:
    """A command keeps running when the next step of its terminal watches or stops it."""
    for index, step in enumerate(steps):
        if step.kind != "run":
            continue
        later = [s for s in steps[index + 1:] if s.terminal == step.terminal]
        step.keeps_running = bool(later) and later[0].kind in ("watch", "interrupt")


NORMALIZE = [
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"), "<time>"),
    (re.compile(r"\b\d\d:\d\d:\d\d\.\d{3}\b"), "<clock>"),
    (re.compile(r"\b(127\.0\.0\.1|0\.0\.0\.0|localhost):\d+\b"), r"\1:<port>"),
    (re.compile(r"\b[0-9a-f]{16}\b"), "<hash>"),
    # `xdsloop-server status` shortens hashes to 8 characters.
    (re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{8}\b"), "<hash>"),
    (re.compile(r"\b\d+(\.\d+)?(ns|µs|us|ms|s|m|h) ago\b|\bjust now\b"), "<ago>"),
    (re.compile(r"\b\d+(\.\d+)?(ns|µs|us|ms|s)\b"), "<duration>"),
    (re.compile(r"\s+"), " "),
]


def normalize(line: str) -> str:
    """A line with what varies from run to run replaced by placeholders."""
    for pattern, replacement in NORMALIZE:
        line = pattern.sub(replacement, line)
    return line.strip()


def compare(expected: list[tuple[int, str]], printed: list[str], page: str) -> str | None:
    """Where `printed` differs from the lines a page shows (with `...`), or None."""
    rest = iter(printed)
    skipping = False
    for number, text in expected:
        if text.strip() == "...":
            skipping = True
            continue
        want = normalize(text)
        for got in rest:
            if normalize(got) == want:
                break
            if not skipping:
                return f"{page}:{number}: printed\n  {got}\nwhere the page shows\n  {text}"
        else:
            return f"{page}:{number}: never printed\n  {text}"
        skipping = False
    extra = list(rest)
    if extra and not skipping:
        line = expected[-1][0] if expected else 0
        return f"{page}:{line}: printed more than the page shows:\n  {extra[0]}"
    return None
