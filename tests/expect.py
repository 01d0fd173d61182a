"""Parse `# cutespin-expect:` lines (a contract other tools read)."""
from __future__ import annotations

import re
from dataclasses import dataclass

EXPECT_RE = re.compile(r"#\s*cutespin-expect:\s*(.*)$")


@dataclass
class Expectation:
    kernel: str
    verdict: str
    kinds: tuple = ()
    lines: tuple = ()
    line_no: int = 0


def parse_expectations(text: str) -> list:
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        m = EXPECT_RE.search(line)
        if not m:
            continue
        fields = dict(part.split("=", 1) for part in m.group(1).split() if "=" in part)
        out.append(Expectation(
            kernel=fields["kernel"], verdict=fields["verdict"],
            kinds=tuple(k for k in fields.get("kinds", "").split("|") if k),
            lines=tuple(int(x) for x in fields.get("lines", "").split(",") if x),
            line_no=no))
    return out
