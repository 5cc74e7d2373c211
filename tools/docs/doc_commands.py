#!/usr/bin/env python3
"""The commands shown in README.md and docs/*.md, run and held to what the documents show (as SimGrid's tesh files
hold a command to its output, but the document itself is the golden file).

A fenced code block whose first line starts with "$ " shows commands. With one command and lines after it, those
lines are its standard output, byte for byte: `check` runs it from the repository root and fails on any difference
(a unified diff); `update` writes the fresh output into the document instead, for a change that is meant. A block of
several commands and no output is run command by command and must succeed. A block right after the line
"<!-- doc-commands: not run: REASON -->" is left alone (it needs a GPU, or files only the reader has); one after
"<!-- doc-commands: exits N -->" must exit with status N (a refusal the document shows, its command's stderr sent to
stdout with 2>&1).

  doc_commands.py list                     every block: its id (FILE:LINE) and what is checked
  doc_commands.py [--dtsim PATH] check [ID...]   run these blocks (all without IDs; ctest runs one test a block)
  doc_commands.py [--dtsim PATH] update [ID...]  rewrite the outputs of these blocks (all without IDs)
  doc_commands.py links                    every link of the documents outside code, [text](FILE) and
                                           [text](FILE#anchor) or [text](#anchor): the file must exist and the
                                           anchor be one of its headings (GitHub's: lowercase, punctuation dropped,
                                           spaces to hyphens, "-1" on a repeat); fails naming each one that does not

--dtsim PATH: the binary the commands' "build/dtsim" means (default: build/dtsim under the repository root).
"""
import argparse
import difflib
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))
SKIP = re.compile(r"^<!-- doc-commands: not run: (.+) -->$")
EXITS = re.compile(r"^<!-- doc-commands: exits (\d+) -->$")
TIMEOUT = 600  # seconds a command may take


class Block:
    def __init__(self, document, line, commands, output, skip, status):
        self.document, self.line, self.commands, self.output = document, line, commands, output
        self.skip, self.status = skip, status

    @property
    def id(self):
        return f"{self.document}:{self.line}"

    def kind(self):
        if self.skip:
            return f"not run: {self.skip}"
        ends = "succeed" if self.status == 0 else f"exit {self.status}"
        return "output compared" if self.output is not None else f"{len(self.commands)} command(s) must {ends}"


def blocks(document):
    """The command blocks of a document, with the line (1-based) of each block's first command."""
    lines = (ROOT / document).read_text().split("\n")
    out, i = [], 0
    while i < len(lines):
        if not lines[i].startswith("```"):
            i += 1
            continue
        start, j = i + 1, i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        body = lines[start:j]
        if body and body[0].startswith("$ "):
            k = i - 1
            while k >= 0 and lines[k].strip() == "":
                k -= 1
            marker = lines[k].strip() if k >= 0 else ""
            skip = SKIP.match(marker).group(1) if SKIP.match(marker) else None
            status = int(EXITS.match(marker).group(1)) if EXITS.match(marker) else 0
            commands = [line[2:] for line in body if line.startswith("$ ")]
            output = "\n".join(body[1:]) + "\n" if len(commands) == 1 and len(body) > 1 else None
            out.append(Block(document, start + 1, commands, output, skip, status))
        i = j + 1
    return out


def all_blocks():
    return [b for d in DOCUMENTS for b in blocks(d)]


def run(command, dtsim):
    """Runs a documented command from the repository root; its "build/dtsim" is `dtsim`. Returns (status, stdout)."""
    command = re.sub(r"(?<![\w/])build/dtsim\b", dtsim, command)
    # No pipefail: a documented `| head -4` may close the pipe while dtsim still writes (SIGPIPE); a failure upstream
    # of a pipe still shows, as output that differs from the document's.
    done = subprocess.run(["bash", "-c", command], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=TIMEOUT, env=dict(os.environ, COLUMNS="120"))
    return done.returncode, done.stdout.decode(), done.stderr.decode()


def check(block, dtsim):
    if block.skip:
        print(f"{block.id}: not run: {block.skip}")
        return True
    if block.output is None:
        ok = True
        for command in block.commands:
            status, _, err = run(command, dtsim)
            if status != block.status:
                print(f"{block.id}: `{command}` exited {status}, expected {block.status}\n{err}")
                ok = False
        return ok
    status, out, err = run(block.commands[0], dtsim)
    if status != block.status:
        print(f"{block.id}: `{block.commands[0]}` exited {status}, expected {block.status}\n{err}")
        return False
    if out == block.output:
        return True
    print(f"{block.id}: the output differs from the document's (tools/docs/doc_commands.py update {block.id} "
          f"writes it there, if the change is meant)")
    sys.stdout.writelines(difflib.unified_diff(block.output.splitlines(True), out.splitlines(True),
                                               f"{block.document} (shown)", "dtsim (now)"))
    return False


def update(chosen, dtsim):
    by_document = {}
    for b in chosen:
        by_document.setdefault(b.document, []).append(b)
    for document, bs in by_document.items():
        lines = (ROOT / document).read_text().split("\n")
        for b in sorted(bs, key=lambda b: -b.line):  # from the bottom: earlier line numbers stay right
            if b.skip or b.output is None:
                continue
            status, out, err = run(b.commands[0], dtsim)
            if status != b.status:
                sys.exit(f"{b.id}: `{b.commands[0]}` exited {status}, expected {b.status}\n{err}")
            shown = b.output.count("\n")
            lines[b.line:b.line + shown] = (out[:-1] if out.endswith("\n") else out).split("\n")
            print(f"{b.id}: written")
        (ROOT / document).write_text("\n".join(lines))


LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")


def prose(document):
    """The lines of a document outside fenced code, each with its number (1-based), inline code spans blanked."""
    inside = False
    for number, line in enumerate((ROOT / document).read_text().split("\n"), 1):
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        if not inside:
            yield number, re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), line)


def anchors(path):
    """The anchors GitHub gives a Markdown file's headings."""
    seen, out, inside = {}, set(), False
    for line in path.read_text().split("\n"):
        if line.lstrip().startswith("```"):
            inside = not inside
            continue
        heading = None if inside else re.match(r"^#{1,6} +(.*?) *#* *$", line)
        if not heading:
            continue
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.group(1))  # a link's text stays
        slug = re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        out.add(slug if count == 0 else f"{slug}-{count}")
    return out


def links():
    """Every link of the documents that leads nowhere: (document, line, target, why)."""
    broken = []
    for document in DOCUMENTS:
        base = (ROOT / document).parent
        lines = dict(prose(document))
        text = "\n".join(lines.get(n, "") for n in range(1, max(lines, default=0) + 1))
        for link in LINK.finditer(text):  # a link's text may run over lines, as the prose is wrapped
            number, target = text.count("\n", 0, link.start(2)) + 1, link.group(2)
            if re.match(r"^[a-z]+:", target):  # https:, mailto:
                continue
            name, _, anchor = target.partition("#")
            path = (base / name).resolve() if name else ROOT / document
            if not path.exists():
                broken.append((document, number, target, "no such file"))
            elif anchor and path.suffix == ".md" and anchor not in anchors(path):
                broken.append((document, number, target, "no such heading"))
    return broken


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["list", "check", "update", "links"])
    parser.add_argument("ids", nargs="*")
    parser.add_argument("--dtsim", default=str(ROOT / "build" / "dtsim"))
    args = parser.parse_args()
    found = all_blocks()
    if args.mode == "links":
        broken = links()
        for document, number, target, why in broken:
            print(f"{document}:{number}: ({target}): {why}")
        return 1 if broken else 0
    if args.mode == "list":
        for b in found:
            print(f"{b.id}\t{b.kind()}")
        return 0
    chosen = [b for b in found if not args.ids or b.id in args.ids]
    unknown = set(args.ids) - {b.id for b in found}
    if unknown:
        sys.exit(f"no command block at {', '.join(sorted(unknown))} (doc_commands.py list shows them)")
    if args.mode == "update":
        update(chosen, str(Path(args.dtsim).resolve()))
        return 0
    return 0 if all([check(b, str(Path(args.dtsim).resolve())) for b in chosen]) else 1


if __name__ == "__main__":
    sys.exit(main())
