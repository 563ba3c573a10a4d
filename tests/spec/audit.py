#!/usr/bin/env python3
"""Audit proto/spec/xds_protocol.yaml ("the spec as data") against its two sources.

The YAML lists every normative sentence of Envoy's xDS protocol spec
(docs/root/api-docs/xds_protocol.rst at a pinned commit) and of the discovery.proto comments (as
shipped in the pinned envoy-types crate, whose generated Rust keeps them as `///` doc comments).
Every sentence of a source that contains one of the keywords must / should / may / required /
will / expected / need / needs (whole words, any case) must be accounted for exactly once: either
under `sentences` (normative) or under `informative` (with the reason it is not normative).

    audit.py                    both sources: /tmp/spec/xds_protocol.rst (if present) and the
                                envoy-types file found via `cargo metadata --offline`
    audit.py --rst PATH         the rst only
    audit.py --proto-rs PATH    the generated envoy.service.discovery.v3.rs only
    audit.py --summary          totals by level and by binds
    audit.py --dump ...         print every keyword sentence of the given sources (for authoring)
    audit.py --yaml PATH        a YAML other than proto/spec/xds_protocol.yaml

It reports (a) keyword sentences that are in neither list, (b) YAML quotes not found as a sentence
of their source (or found under another section), (c) sentences listed more than once, and
(d) schema slips: duplicate or misnumbered ids, unknown levels/binds/variants. Exit status 1 if
anything is reported.

Standard library only. The YAML is read by a line-based reader for exactly the constructs the file
uses: `key: value` pairs, one per line, values either plain words or double-quoted one-line
strings (escapes \\" and \\\\ only).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_YAML = REPO / "proto" / "spec" / "xds_protocol.yaml"
DEFAULT_RST = Path("/tmp/spec/xds_protocol.rst")
PROTO_RS_NAME = "src/generated/envoy.service.discovery.v3.rs"

KEYWORD = re.compile(r"\b(must|should|may|required|will|expected|need|needs)\b", re.IGNORECASE)
LEVELS = {"MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY", "REQUIRED", "WILL", "EXPECTED", "STATED"}
STRENGTHS = {"MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY"}
BINDS = {"server", "client", "both"}
VARIANTS = {"sotw", "delta", "both", "rest", "filesystem", "any"}
ID_RE = re.compile(r"^(proto\.)?[a-z0-9]+(-[a-z0-9]+)*\.[1-9][0-9]*$")

# The messages of envoy.service.discovery.v3 whose comments are audited (gRPC code and AdsDummy
# are not).
PROTO_MESSAGES = {
    "ResourceLocator",
    "ResourceName",
    "ResourceError",
    "DiscoveryRequest",
    "DiscoveryResponse",
    "DeltaDiscoveryRequest",
    "DeltaDiscoveryResponse",
    "DynamicParameterConstraints",
    "Resource",
}

# ---------------------------------------------------------------------------------------------
# Rendering and sentence splitting


def render(text: str) -> str:
    """RST / proto-comment inline markup to display text, whitespace normalised."""
    # :ref:`Text <target>` (also ": ref:" as prost sometimes emits it) and :ref:`target`.
    text = re.sub(r":\s?[a-z]+:`([^`<]*?)\s*<[^>`]*>`", r"\1", text)
    text = re.sub(r":\s?[a-z]+:`([^`]*)`", r"\1", text)
    # `Text <url>`_ / `Text <url>`__
    text = re.sub(r"`([^`<]*?)\s*<[^>`]*>`_{1,2}", r"\1", text)
    # **strong**, *emphasis* (not inside ``literals``: the opening star follows no word char,
    # star or backtick and is followed by a non-space).
    text = re.sub(r"(?<![\w*`])\*\*([^\s*`][^*`]*?)\*\*(?![\w*])", r"\1", text)
    text = re.sub(r"(?<![\w*`])\*([^\s*`][^*`]*?)\*(?![\w*`])", r"\1", text)
    # ``literal`` then `default role`
    text = re.sub(r"``(.+?)``", r"\1", text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    # proto annotations and escapes left by prost
    text = text.replace("\\[", "[").replace("\\]", "]").replace("\\#", "#")
    text = re.sub(r"\[#[^\]]*\]", "", text)
    return norm(text)


def norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(\"])")


def split_sentences(text: str) -> list[str]:
    return [s for s in (norm(p) for p in SENTENCE_END.split(text)) if s]


class Sentence:
    __slots__ = ("section", "text", "index")

    def __init__(self, section: str, text: str, index: int) -> None:
        self.section = section
        self.text = text
        self.index = index


def blocks_to_sentences(blocks: list[tuple[str, str]]) -> list[Sentence]:
    out: list[Sentence] = []
    for section, raw in blocks:
        for s in split_sentences(render(raw)):
            out.append(Sentence(section, s, len(out)))
    return out


LIST_ITEM = re.compile(r"^([-*]|\d+\.)\s+")
UNDERLINE = re.compile(r"^([=\-~^\"'`#*+])\1{2,}\s*$")
SKIP_BLOCK_DIRECTIVES = ("code", "code-block", "literalinclude", "figure", "image")


def rst_sentences(text: str) -> list[Sentence]:
    lines = text.split("\n")
    blocks: list[tuple[str, str]] = []
    section = ""
    cur: list[str] = []

    def flush() -> None:
        nonlocal cur
        if cur and not cur[0].lstrip().startswith("|"):
            blocks.append((section, "\n".join(cur)))
        cur = []

    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        if (
            stripped
            and not line[0].isspace()
            and not stripped.startswith("..")
            and UNDERLINE.match(nxt)
            and len(nxt.strip()) >= len(stripped)
        ):
            flush()
            section = stripped
            i += 2
            continue
        if stripped.startswith(".. "):
            flush()
            m = re.match(r"\.\.\s+(?:\|[^|]*\|\s+)?([\w-]+)::", stripped)
            indent = len(line) - len(line.lstrip())
            i += 1
            if m and m.group(1) in SKIP_BLOCK_DIRECTIVES:
                # the directive's options and body: blank or more-indented lines
                while i < len(lines) and (
                    not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent
                ):
                    i += 1
            # other directives (.. note::, .. _anchor:, comments): the line alone is dropped,
            # an indented body (note text) is read as ordinary text.
            continue
        if not stripped:
            flush()
            i += 1
            continue
        if LIST_ITEM.match(stripped):
            flush()
            cur = [LIST_ITEM.sub("", stripped)]
            i += 1
            continue
        cur.append(stripped)
        i += 1
    flush()
    return blocks_to_sentences(blocks)


def proto_sentences(text: str) -> list[Sentence]:
    """Doc comments of the discovery messages in the prost-generated file.

    A comment block belongs to the item that follows it: `pub struct X` (section X; a struct in
    prost's `pub mod x` of nested types is Outer.X), a field `pub name: ...` (section
    Message.name) or a oneof variant `Name(...)` (section Message.name, in snake case).
    """
    stack: list[tuple[int, str]] = []  # (indent, message name or "" for a oneof enum)
    blocks: list[tuple[str, str]] = []
    comment: list[str] = []

    def path() -> list[str]:
        return [name for _, name in stack if name]

    for line in text.split("\n"):
        indent = len(line) - len(line.lstrip())
        s = line.strip()
        if s.startswith("}") and stack and indent == stack[-1][0]:
            stack.pop()
            comment = []
            continue
        if s.startswith("///"):
            comment.append(s[3:])
            continue
        if s.startswith("#["):
            continue
        target: list[str] | None = None
        m = re.match(r"pub (struct|mod|enum) (\w+)", s)
        opens = s.endswith("{") and not s.endswith("{}")
        if m:
            kind, name = m.groups()
            if kind == "struct":
                target = path() + [name]
                if opens:
                    stack.append((indent, name))
            elif kind == "mod":  # prost's module of a message's nested types
                if opens:
                    stack.append((indent, "".join(p.capitalize() for p in name.split("_"))))
            elif opens:  # a oneof: its variants are fields of the enclosing message
                stack.append((indent, ""))
        elif stack and not stack[-1][1]:
            vm = re.match(r"([A-Z]\w*)\(", s)
            if vm:
                target = path() + [re.sub(r"(?<!^)(?=[A-Z])", "_", vm.group(1)).lower()]
        else:
            fm = re.match(r"pub (?:r#)?(\w+):", s)
            if fm and stack:
                target = path() + [fm.group(1)]
        if comment and target and target[0] in PROTO_MESSAGES:
            blocks.extend(comment_blocks(".".join(target), comment))
        comment = []
    return blocks_to_sentences(blocks)


def comment_blocks(section: str, comment: list[str]) -> list[tuple[str, str]]:
    """Paragraphs and list items of one doc comment; `.. note::` markers dropped."""
    out: list[tuple[str, str]] = []
    cur: list[str] = []

    def flush() -> None:
        nonlocal cur
        if cur:
            out.append((section, "\n".join(cur)))
        cur = []

    for raw in comment:
        s = raw.strip()
        if not s or s.startswith(".. "):
            flush()
            continue
        if re.fullmatch(r"\\?\[\\?#[^\]]*\\?\]", s):
            continue
        if LIST_ITEM.match(s):
            flush()
            cur = [LIST_ITEM.sub("", s)]
            continue
        cur.append(s)
    flush()
    return out


# ---------------------------------------------------------------------------------------------
# The YAML (line-based reader for the constructs the file uses)


def parse_scalar(v: str, where: str) -> object:
    v = v.strip()
    if v.startswith('"'):
        if not v.endswith('"') or len(v) < 2:
            raise ValueError(f"{where}: unterminated double-quoted string")
        body = v[1:-1]
        out, i = [], 0
        while i < len(body):
            c = body[i]
            if c == "\\":
                if i + 1 >= len(body) or body[i + 1] not in '"\\':
                    raise ValueError(f"{where}: unsupported escape in {v}")
                out.append(body[i + 1])
                i += 2
                continue
            if c == '"':
                raise ValueError(f"{where}: unescaped quote in {v}")
            out.append(c)
            i += 1
        return "".join(out)
    if v in ("true", "false"):
        return v == "true"
    if re.search(r"[:#\"'{}\[\],&*!|>%@`]", v):
        raise ValueError(f"{where}: plain scalar needs quoting: {v}")
    return v


def read_yaml(path: Path) -> tuple[dict, list[dict], list[dict]]:
    source: dict = {}
    lists: dict[str, list[dict]] = {"sentences": [], "informative": []}
    top = None
    entry: dict | None = None
    for n, line in enumerate(path.read_text().split("\n"), 1):
        where = f"{path.name}:{n}"
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace():
            m = re.fullmatch(r"(\w+):\s*", line)
            if not m:
                raise ValueError(f"{where}: expected a top-level key")
            top = m.group(1)
            entry = None
            continue
        if top == "source":
            m = re.fullmatch(r"  (\w+): \{(.*)\}\s*", line)
            if not m:
                raise ValueError(f"{where}: expected `  name: {{k: v, ...}}`")
            source[m.group(1)] = {
                k.strip(): parse_scalar(v, where)
                for k, v in (kv.split(":", 1) for kv in m.group(2).split(","))
            }
            continue
        if top not in lists:
            raise ValueError(f"{where}: unknown top-level key {top}")
        m = re.fullmatch(r"  (- |  )(\w+): (.*)", line)
        if not m:
            raise ValueError(f"{where}: expected `  - key: value` or `    key: value`")
        dash, key, value = m.groups()
        # strip a trailing comment after a plain scalar
        if not value.startswith('"'):
            value = re.sub(r"\s+#.*$", "", value)
        if dash == "- ":
            entry = {"_line": n}
            lists[top].append(entry)
        if entry is None:
            raise ValueError(f"{where}: key outside an entry")
        if key in entry:
            raise ValueError(f"{where}: duplicate key {key}")
        # What covers a sentence is checked by the Rust side (tests/e2e/spec.rs), not here.
        entry[key] = value if key == "covered_by" else parse_scalar(value, where)
    return source, lists["sentences"], lists["informative"]


# ---------------------------------------------------------------------------------------------
# The audit


def audit(kind: str, found: list[Sentence], sentences: list[dict], informative: list[dict]) -> list[str]:
    problems: list[str] = []
    by_key: dict[tuple[str, str], list[Sentence]] = defaultdict(list)
    by_text: dict[str, list[Sentence]] = defaultdict(list)
    for s in found:
        by_key[(s.section, s.text)].append(s)
        by_text[s.text].append(s)

    listed: Counter[tuple[str, str]] = Counter()
    index_of: dict[str, int] = {}
    for e in sentences + informative:
        if e.get("source") != kind:
            continue
        key = (e.get("section", ""), norm(e.get("quote", "")))
        label = e.get("id") or f"informative entry at line {e['_line']}"
        if key not in by_key:
            if key[1] in by_text:
                secs = sorted({s.section for s in by_text[key[1]]})
                problems.append(f"{kind}: {label}: quote is under section {secs}, not {key[0]!r}")
            else:
                problems.append(f"{kind}: {label}: quote not found as a sentence: {key[1]!r}")
            continue
        listed[key] += 1
        if "id" in e:
            # The n-th listing of a sentence that occurs more than once is its n-th occurrence.
            nth = min(listed[key], len(by_key[key])) - 1
            index_of[e["id"]] = by_key[key][nth].index

    for key, sents in by_key.items():
        n = listed[key]
        if n > len(sents):
            problems.append(f"{kind}: listed {n} times, occurs {len(sents)}: [{key[0]}] {key[1]!r}")
        if n < len(sents) and KEYWORD.search(key[1]):
            problems.append(f"{kind}: keyword sentence in neither list: [{key[0]}] {key[1]!r}")

    # ids: ordinals 1..n in text order within each slug; one section per slug
    groups: dict[str, list[tuple[int, int, dict]]] = defaultdict(list)
    for e in sentences:
        if e.get("source") != kind or e.get("id") not in index_of:
            continue
        slug, _, ordinal = e["id"].rpartition(".")
        groups[slug].append((index_of[e["id"]], int(ordinal), e))
    for slug, members in groups.items():
        members.sort(key=lambda t: t[0])
        ordinals = [o for _, o, _ in members]
        if ordinals != list(range(1, len(members) + 1)):
            problems.append(f"{kind}: ids under {slug} are not 1..n in text order: {ordinals}")
        if kind == "rst":
            secs = {e["section"] for _, _, e in members}
            if len(secs) > 1:
                problems.append(f"{kind}: slug {slug} spans sections {sorted(secs)}")
        else:
            msgs = {e["section"].split(".")[0] for _, _, e in members}
            if len(msgs) > 1:
                problems.append(f"{kind}: slug {slug} spans messages {sorted(msgs)}")
    return problems


def schema_problems(source: dict, sentences: list[dict], informative: list[dict]) -> list[str]:
    problems: list[str] = []
    if set(source) != {"rst", "proto"}:
        problems.append(f"source: expected rst and proto, got {sorted(source)}")
    ids = Counter(e.get("id") for e in sentences)
    for i, n in ids.items():
        if n > 1:
            problems.append(f"duplicate id {i}")
    required = ["id", "section", "source", "quote", "level", "binds", "variant", "observable"]
    allowed = set(required) | {"reading", "strength", "covered_by", "_line"}
    for e in sentences:
        where = f"sentences entry at line {e['_line']} ({e.get('id')})"
        for k in required:
            if k not in e:
                problems.append(f"{where}: missing {k}")
        for k in e:
            if k not in allowed:
                problems.append(f"{where}: unknown key {k}")
        if not ID_RE.match(str(e.get("id", ""))):
            problems.append(f"{where}: malformed id")
        if (e.get("source") == "proto") != str(e.get("id", "")).startswith("proto."):
            problems.append(f"{where}: proto ids start with proto., rst ids do not")
        if e.get("source") not in ("rst", "proto"):
            problems.append(f"{where}: source {e.get('source')!r}")
        if e.get("level") not in LEVELS:
            problems.append(f"{where}: level {e.get('level')!r}")
        if "strength" in e and e["strength"] not in STRENGTHS:
            problems.append(f"{where}: strength {e['strength']!r}")
        if e.get("level") == "STATED" and "strength" not in e:
            problems.append(f"{where}: a STATED sentence needs the strength we read it with")
        if e.get("binds") not in BINDS:
            problems.append(f"{where}: binds {e.get('binds')!r}")
        if e.get("variant") not in VARIANTS:
            problems.append(f"{where}: variant {e.get('variant')!r}")
        obs = e.get("observable")
        if obs is not True and not (isinstance(obs, str) and obs):
            problems.append(f"{where}: observable must be true or a reason")
        if "reading" in e and not (isinstance(e["reading"], str) and e["reading"]):
            problems.append(f"{where}: empty reading")
    for e in informative:
        where = f"informative entry at line {e['_line']}"
        if set(e) != {"section", "source", "quote", "why", "_line"}:
            problems.append(f"{where}: keys {sorted(k for k in e if k != '_line')}")
        if e.get("source") not in ("rst", "proto"):
            problems.append(f"{where}: source {e.get('source')!r}")
    return problems


def run(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(
            cmd, cwd=REPO, capture_output=True, text=True, check=True, timeout=120
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None


def find_proto_rs() -> Path | None:
    """envoy-types' generated discovery file, via `cargo metadata --offline`.

    Offline, plain `cargo metadata` fails when the registry cache lacks crates for other
    platforms (e.g. Windows-only dependencies), so it is retried filtered to the host platform.
    """
    cmd = ["cargo", "metadata", "--offline", "--format-version", "1"]
    attempts = [cmd]
    host = run(["rustc", "-vV"])
    m = re.search(r"^host: (\S+)", host or "", re.MULTILINE)
    if m:
        attempts.append(cmd + ["--filter-platform", m.group(1)])
    for attempt in attempts:
        out = run(attempt)
        if out is None:
            continue
        try:
            for pkg in json.loads(out)["packages"]:
                if pkg["name"] == "envoy-types":
                    return Path(pkg["manifest_path"]).parent / PROTO_RS_NAME
        except (ValueError, KeyError):
            continue
    return None


def summary(sentences: list[dict], informative: list[dict]) -> None:
    print(f"normative sentences: {len(sentences)}   informative: {len(informative)}")
    for field, order in (
        ("source", ["rst", "proto"]),
        ("level", ["MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY", "REQUIRED", "WILL", "EXPECTED"]),
        ("binds", ["server", "client", "both"]),
        ("variant", ["any", "both", "sotw", "delta", "rest", "filesystem"]),
    ):
        c = Counter(e.get(field) for e in sentences)
        print(f"by {field}: " + ", ".join(f"{k} {c[k]}" for k in order if c[k]))
    obs = sum(1 for e in sentences if e.get("observable") is True)
    print(f"observable on the wire: {obs}, not observable: {len(sentences) - obs}")
    print("level x binds:")
    c2 = Counter((e.get("level"), e.get("binds")) for e in sentences)
    for level in ["MUST", "MUST NOT", "SHOULD", "SHOULD NOT", "MAY", "REQUIRED", "WILL", "EXPECTED"]:
        row = ", ".join(f"{b} {c2[(level, b)]}" for b in ["server", "client", "both"] if c2[(level, b)])
        if row:
            print(f"  {level}: {row}")
    c3 = Counter(e.get("source") for e in informative)
    print("informative by source: " + ", ".join(f"{k} {v}" for k, v in sorted(c3.items())))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rst", type=Path, help="the pinned xds_protocol.rst")
    ap.add_argument("--proto-rs", type=Path, help="envoy-types' envoy.service.discovery.v3.rs")
    ap.add_argument("--yaml", type=Path, default=DEFAULT_YAML)
    ap.add_argument("--summary", action="store_true", help="print totals by level and binds")
    ap.add_argument("--dump", action="store_true", help="print the keyword sentences of the sources")
    args = ap.parse_args()

    if not args.dump:
        try:
            source, sentences, informative = read_yaml(args.yaml)
        except (OSError, ValueError) as e:
            print(f"audit: cannot read {args.yaml}: {e}", file=sys.stderr)
            return 1
        if args.summary:
            summary(sentences, informative)
            return 0

    sources: list[tuple[str, Path]] = []
    if args.rst:
        sources.append(("rst", args.rst))
    if args.proto_rs:
        sources.append(("proto", args.proto_rs))
    if not sources:
        if DEFAULT_RST.exists():
            sources.append(("rst", DEFAULT_RST))
        else:
            print(f"audit: {DEFAULT_RST} absent; rst not audited (give --rst)", file=sys.stderr)
        rs = find_proto_rs()
        if rs and rs.exists():
            sources.append(("proto", rs))
        else:
            print("audit: envoy-types not found via cargo metadata; give --proto-rs", file=sys.stderr)
        if not sources:
            return 1

    problems: list[str] = [] if args.dump else schema_problems(source, sentences, informative)
    for kind, path in sources:
        text = path.read_text()
        found = rst_sentences(text) if kind == "rst" else proto_sentences(text)
        if args.dump:
            for s in found:
                if KEYWORD.search(s.text):
                    print(json.dumps({"source": kind, "section": s.section, "quote": s.text}))
            continue
        kw = sum(1 for s in found if KEYWORD.search(s.text))
        problems += audit(kind, found, sentences, informative)
        print(f"{kind}: {path}: {len(found)} sentences, {kw} with a keyword")
    if args.dump:
        return 0
    for p in problems:
        print(p)
    if problems:
        print(f"audit: {len(problems)} problem(s)")
        return 1
    print(
        f"audit: ok ({len(sentences)} normative, {len(informative)} informative; "
        f"every keyword sentence accounted for once, every quote found)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
