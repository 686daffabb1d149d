"""One group's rebalance storm through the log analysis: the story of a group must cost time in
proportion to its lines, not to their square. Two storms, each size twice the one before; the
last column is the growth of the CPU time against the lines':

- a broker's: the lines of ``logs_generator``'s many groups told as the story of one group (every
  group name replaced by ``storm``): thousands of rebalances, failures and joins in one group, as
  a fail-rejoin loop left running for days writes them;
- a client's only (no broker lines): a Java consumer's poll timeout and rejoin
  (``tests/data/excerpts/24-*``) every 5 minutes, the rebalances told from the client's lines;
- a KIP-848 consumer group's: a member joining and its target assignment
  (``tests/data/excerpts/29-*``) every 5 minutes, each a group epoch on, without the lines that
  announce the epochs (a log that kept only some lines): each target opens its own rebalance;
- a large KIP-848 group's: 20 rebalances, in each of which every member reports its new epoch
  (the excerpt's lines, one member id per member).

    .venv/bin/python benchmarks/logs_storm.py [--sizes 3MB,6MB,12MB,24MB] [--cycles 1000,2000,4000,8000]
                                              [--members 1000,2000,4000,8000] [--json]

The local engine (``analyse_local``: read, parse, story, tables) in this process, one run per
size; the Spark engine tells a group's story with the same code.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from logs_generator import PROFILES, TOPICS, generate, parse_size  # noqa: E402

EXCERPTS = Path(__file__).resolve().parents[1] / "tests" / "data" / "excerpts"
CLIENT_EXCERPT = next(EXCERPTS.glob("24-*"))
CONSUMER_GROUP_EXCERPT = next(EXCERPTS.glob("29-*"))
GROUP_NAME = re.compile(r"\b(?:" + "|".join(TOPICS) + r")-(?:" + "|".join(PROFILES) + r")-\d+\b")


def storm_log(path: Path, size_bytes: int) -> None:
    """A log of ``size_bytes`` of coordinator lines only, every group named ``storm``."""
    generated = path.with_suffix(".groups.log")
    generate(generated, size_bytes, coordinator_share=1.0)
    path.write_text(GROUP_NAME.sub("storm", generated.read_text()))
    generated.unlink()


def client_storm_log(path: Path, cycles: int) -> None:
    """The Java consumer's excerpt ``cycles`` times, 5 minutes apart, each a generation on."""
    lines = CLIENT_EXCERPT.read_text().splitlines()
    out = []
    for cycle in range(cycles):
        shift = datetime.timedelta(minutes=5 * cycle)
        for line in lines:
            at = datetime.datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S.%f") + shift
            out.append(at.strftime("%Y-%m-%d %H:%M:%S.%f")[:23]
                       + line[23:].replace("generationId=33", f"generationId={33 + cycle}"))
    path.write_text("\n".join(out) + "\n")


def consumer_group_storm_log(path: Path, cycles: int) -> None:
    """The consumer group's excerpt ``cycles`` times, 5 minutes apart, each a group epoch on,
    without its "Bumped group epoch" lines."""
    lines = [line for line in CONSUMER_GROUP_EXCERPT.read_text().splitlines() if "Bumped group epoch" not in line]
    out = []
    for cycle in range(cycles):
        shift = datetime.timedelta(minutes=5 * cycle)
        for line in lines:
            at = datetime.datetime.strptime(line[1:24], "%Y-%m-%d %H:%M:%S,%f") + shift
            out.append("[" + at.strftime("%Y-%m-%d %H:%M:%S,%f")[:23] + line[24:].replace(
                "epoch 4 ", f"epoch {4 + cycle} ").replace("epoch=4,", f"epoch={4 + cycle},"))
    path.write_text("\n".join(out) + "\n")


def large_group_log(path: Path, members: int, rebalances: int = 20) -> None:
    """A consumer group of ``members``: each rebalance a bumped epoch, a target, and every
    member's new assignment state, a millisecond apart."""
    _, bump, target, state = CONSUMER_GROUP_EXCERPT.read_text().splitlines()[:4]
    start = datetime.datetime(2025, 3, 3, 8, 0, 0)

    def at(line: str, when: datetime.datetime) -> str:
        return "[" + when.strftime("%Y-%m-%d %H:%M:%S,%f")[:23] + line[24:]

    out = []
    for rebalance in range(rebalances):
        epoch, opened = 4 + rebalance, start + datetime.timedelta(minutes=rebalance)
        out.append(at(bump.replace("epoch to 4.", f"epoch to {epoch}."), opened))
        out.append(at(target.replace("epoch 4 ", f"epoch {epoch} "), opened + datetime.timedelta(milliseconds=3)))
        out.extend(at(state.replace("Zq3rT0kLSuWm9x1-AbCdEf", f"member-{member:05d}-AbCdEf").replace(
            "epoch=4, previousEpoch=0", f"epoch={epoch}, previousEpoch={epoch - 1}"),
            opened + datetime.timedelta(milliseconds=10 + member)) for member in range(members))
    path.write_text("\n".join(out) + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="3MB,6MB,12MB,24MB", help="log sizes, comma-separated (default 3MB,6MB,12MB,24MB)")
    parser.add_argument("--cycles", default="1000,2000,4000,8000",
                        help="the client's and the KIP-848 group's storms: cycles, comma-separated (default 1000,2000,4000,8000)")
    parser.add_argument("--members", default="1000,2000,4000,8000",
                        help="the large KIP-848 group: members, comma-separated (default 1000,2000,4000,8000)")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)

    from kafka_rebalance.pipeline.logparse.layout import SyslogReference
    from kafka_rebalance.pipeline.logparse.local_engine import analyse_local

    def analysed(storm: str, size: str, log: Path) -> dict:
        started = time.process_time()
        result = analyse_local([(str(log), "default")], syslog=SyslogReference(0))
        cpu = time.process_time() - started
        rebalances = len(result.frames["rebalances"])
        if not args.json:
            print(f"{storm} {size}: {result.lines_read:,} lines, {rebalances:,} rebalances, {cpu:.2f} CPU-s",
                  file=sys.stderr)
        return {"storm": storm, "size": size, "lines": result.lines_read, "rebalances": rebalances,
                "member_events": len(result.frames["member_events"]), "cpu_s": round(cpu, 2)}

    rows = []
    with tempfile.TemporaryDirectory(prefix="kafka-rebalance-storm-") as scratch:
        for size in args.sizes.split(","):
            log = Path(scratch) / f"storm-{size}.log"
            storm_log(log, parse_size(size))
            rows.append(analysed("broker", size, log))
        for cycles in args.cycles.split(","):
            log = Path(scratch) / f"client-{cycles}.log"
            client_storm_log(log, int(cycles))
            rows.append(analysed("client", f"{int(cycles):,} cycles", log))
        for cycles in args.cycles.split(","):
            log = Path(scratch) / f"consumer-group-{cycles}.log"
            consumer_group_storm_log(log, int(cycles))
            rows.append(analysed("KIP-848", f"{int(cycles):,} cycles", log))
        for members in args.members.split(","):
            log = Path(scratch) / f"large-group-{members}.log"
            large_group_log(log, int(members))
            rows.append(analysed("KIP-848 group", f"{int(members):,} members", log))
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    print("| storm | log | lines | rebalances | member events | CPU-s | growth (CPU / lines) |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: |")
    for before, row in zip([None, *rows], rows, strict=False):
        growth = "" if before is None or before["storm"] != row["storm"] else \
            f"{(row['cpu_s'] / before['cpu_s']) / (row['lines'] / before['lines']):.2f}"
        print(f"| {row['storm']} | {row['size']} | {row['lines']:,} | {row['rebalances']:,} | {row['member_events']:,} "
              f"| {row['cpu_s']:.2f} | {growth} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
