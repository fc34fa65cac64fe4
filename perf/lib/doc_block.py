"""doc_block.py - replaces the block between two marker lines of a Markdown file, as the perf
scripts write their tables into docs/performance.md (perf/compare/make_report.py,
perf/simulator/validation_table.py)."""


def replace_block(path, begin, end, text):
    """Writes `begin`, `text` and `end` in place of the block between the markers `begin` and
    `end` of the file at `path`, or appends them (after a blank line) when either marker is
    missing. `text` should end with a newline. A missing file is created."""
    try:
        with open(path) as f:
            old = f.read()
    except FileNotFoundError:
        old = ""
    block = f"{begin}\n{text}{end}"
    if begin in old and end in old:
        head, rest = old.split(begin, 1)
        updated = head + block + rest.split(end, 1)[1]
    else:
        updated = old.rstrip("\n") + "\n\n" + block + "\n"
    with open(path, "w") as f:
        f.write(updated)
