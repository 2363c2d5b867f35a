"""Grouping benchmark: false-merge and split rates of the knowledge base's grouping.

Input: every fixture case of the project (tests/fixtures/cpu_runs, tests/triage/fixtures/variants,
tests/triage/fixtures/blind, jobs/demo) plus VARIATIONS repeated runs of each, made by rewriting
copies of its logs and command the way another run of the same failure differs: other paths,
host names and addresses, ports, PIDs, ranks relabelled, timings, timestamps and sizes.
Every copy goes through the real engine (triage.diagnose), then through knowledge.grouping.

Ground truth, from the cases' own labels (truth.json), never from the engine: two cases are one
root cause when their labels agree on category and root exception, and each case's labelled message
("root_message_contains", numbers made generic) occurs in the other case's logs. Everything else is
a root cause of its own. A stricter truth also requires the same primary (first) fix kind; its rates
are printed too (fix kinds are the labeller's advice, so it counts some same-failure pairs apart).

Printed:
- false-merge rate: problems that hold incidents of two or more root causes / all problems (goal <= 2%)
- split rate: root causes whose incidents are spread over two or more problems / root causes (goal <= 10%)
- the same two rates for the baseline: the engine's single fingerprint (what the product grouped by before)

Run: .venv/bin/python bench/grouping_bench.py [--variations N] [--verbose]
"""
from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import triage  # noqa: E402
from knowledge.grouping import Grouper  # noqa: E402

FIXTURE_SETS = [ROOT / "tests/fixtures/cpu_runs", ROOT / "tests/triage/fixtures/variants",
                ROOT / "tests/triage/fixtures/blind"]
DEMO = ROOT / "jobs/demo"
VARIATIONS = 4
# The demo cases carry no truth.json: their labels, written in the same form.
DEMO_TRUTH = {
    "demo-keyerror-2rank": {"category": "data_schema", "root_exception": "KeyError",
                            "root_message_contains": "conversations", "fix_kinds": ["convert_data_format"]},
    "demo-cuda-oom": {"category": "gpu_oom", "root_exception": "OutOfMemoryError",
                      "root_message_contains": "CUDA out of memory", "fix_kinds": ["reduce_batch_size"]},
    "demo-nccl-timeout": {"category": "nccl_timeout", "root_exception": None,
                          "root_message_contains": "Watchdog caught collective operation timeout",
                          "fix_kinds": ["increase_timeout"]},
    "demo-sigkill-host-oom": {"category": "host_oom", "root_exception": None, "root_message_contains": None,
                              "fix_kinds": ["reduce_dataloader_workers"]},
}

HOSTS = ["gpu-node-{n:02d}", "dgx{n}", "a100-box-{n}", "ip-10-{a}-{b}-{n}", "worker{n}.cluster.internal",
         "h100-{n:03d}", "compute-{a}-{n}"]
PATH_ROOTS = ["/scratch/{user}/runs/exp{n}", "/home/{user}/work", "/mnt/lustre/{user}/proj{n}",
              "/data/{user}/ft", "/workspace/{user}/job{n}"]
LIBRARY_DIRS = ("packages", "/lib/python", ".pyenv", "conda", "/usr/lib")
USERS = ["mira", "tkato", "jdoe", "svc_train", "ana", "rk"]


def _cases():
    """(case name, [log paths], command text or None, truth label)."""
    for folder in FIXTURE_SETS:
        for case in sorted(path for path in folder.iterdir() if path.is_dir()):
            logs = sorted(path for path in case.iterdir()
                          if path.suffix in (".txt", ".log") and path.name != "command.txt")
            command = case / "command.txt"
            label = json.loads((case / "truth.json").read_text())
            yield case.name, logs, command.read_text() if command.exists() else None, label
    for demo in json.loads((DEMO / "demos.json").read_text()):
        command = DEMO / demo["command"] if demo.get("command") else None
        yield (demo["key"], [DEMO / name for name in demo["logs"]], command.read_text() if command else None,
               DEMO_TRUTH[demo["key"]])


class Variation:
    """One consistent rewrite of a run: the same failure on other machines, paths and ranks."""

    def __init__(self, seed: int, world: int = 8):
        self.rng = random.Random(seed)
        user = self.rng.choice(USERS)
        self.root = self.rng.choice(PATH_ROOTS).format(user=user, n=self.rng.randint(1, 99))
        self.hosts: dict[str, str] = {}
        self.ranks = list(range(world))
        self.rng.shuffle(self.ranks)
        self.scale = self.rng.uniform(0.5, 3.0)
        self.shift = self.rng.randint(1, 20_000)

    def host(self, old: str) -> str:
        if old not in self.hosts:
            pattern = self.rng.choice(HOSTS)
            self.hosts[old] = pattern.format(n=self.rng.randint(1, 250), a=self.rng.randint(0, 255),
                                             b=self.rng.randint(0, 255))
        return self.hosts[old]

    def rank(self, old: str) -> str:
        value = int(old)
        return str(self.ranks[value]) if value < len(self.ranks) else old

    def number(self, old: str) -> str:
        value = float(old) * self.scale
        return f"{value:.2f}" if "." in old else str(max(1, int(value)))

    def rewrite(self, text: str) -> str:
        rng = self.rng
        # Directories of the user's own files move; library locations stay where pip put them.
        text = re.sub(r"(?<![\w.])/(?:home|tmp|root|workspace|scratch|srv|opt/proj|w|work|content|lus)/[\w.\-/]*?/"
                      r"(?=[\w.\-]+\.(?:py|json|jsonl|yaml|sh|bin|pt)\b)",
                      lambda m: m.group(0) if any(lib in m.group(0) for lib in LIBRARY_DIRS) else self.root + "/", text)
        text = re.sub(r"\b(?:gpu-node|node|dgx|a100-box|h100-node|cpu-heavy|worker|compute)-?\d+\b",
                      lambda m: self.host(m.group(0)), text)
        text = re.sub(r"\b\d{1,3}(?:\.\d{1,3}){3}\b",
                      lambda m: f"10.{rng.randint(0, 255)}.{rng.randint(0, 255)}.{rng.randint(1, 254)}", text)
        text = re.sub(r"(?<=port[:= ])\d{4,5}|(?<=port: )\d{4,5}|(?<=:)(?:29500|29400|\d{5})\b",
                      lambda m: str(rng.randint(20_000, 60_000)), text)
        text = re.sub(r"(?i)(?<=pid[:= (])\s*\d+|(?<=pid )\d+", lambda m: str(rng.randint(1000, 400_000)), text)
        text = re.sub(r"(?<=\[rank)\d+(?=\])|(?<=\[Rank )\d+(?=\])|(?<=local_rank: )\d+|(?<=\brank )\d+\b",
                      lambda m: self.rank(m.group(0)), text)
        text = re.sub(r"\b\d+(?:\.\d+)?(?=\s?(?:ms|s|seconds|GiB|MiB|GB|MB)\b)", lambda m: self.number(m.group(0)),
                      text)
        text = re.sub(r"\b(\d\d):(\d\d):(\d\d)",
                      lambda m: f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}", text)
        return text


def _digitless(text: str) -> str:
    return re.sub(r"\d+(?:\.\d+)?", "0", text.lower())


def _label_message(label: dict) -> str:
    """The labelled message with its run-specific numbers (sizes, ports) made generic."""
    return _digitless(label.get("root_message_contains") or "")


def root_causes(cases, *, strict: bool = False) -> dict[str, str]:
    """Case name -> root-cause label (the name of the first case of its root cause)."""
    parent = {name: name for name, *_ in cases}

    def find(name):
        while parent[name] != name:
            name = parent[name]
        return name

    texts = {name: _digitless("\n".join(log.read_text(errors="replace") for log in logs)) for name, logs, _, _ in cases}
    for index, (name, _, _, label) in enumerate(cases):
        for other, _, _, other_label in cases[index + 1:]:
            if (label["category"], label.get("root_exception")) != (other_label["category"],
                                                                    other_label.get("root_exception")):
                continue
            if strict and (label.get("fix_kinds") or [None])[0] != (other_label.get("fix_kinds") or [None])[0]:
                continue
            mine, theirs = _label_message(label), _label_message(other_label)
            if mine in texts[other] and theirs in texts[name]:
                parent[find(other)] = find(name)
    return {name: find(name) for name in parent}


def _diagnose(logs, command, folder: Path, variation: Variation | None) -> dict:
    paths = []
    for index, log in enumerate(logs):
        text = log.read_text(errors="replace")
        target = folder / f"{index}-{log.name}"
        target.write_text(variation.rewrite(text) if variation else text)
        paths.append(target)
    if command and variation:
        command = variation.rewrite(command)
    return triage.diagnose(paths, command=command).to_dict()


def _rates(problems: dict, truth: dict) -> tuple[float, float, list, list]:
    """(false-merge rate, split rate, mixed problems, split root causes) of a grouping."""
    mixed = [members for members in problems.values() if len({truth[key] for key in members}) > 1]
    spread = defaultdict(set)
    for problem, members in problems.items():
        for key in members:
            spread[truth[key]].add(problem)
    split = [cause for cause, where in spread.items() if len(where) > 1]
    return len(mixed) / max(len(problems), 1), len(split) / max(len(spread), 1), mixed, split


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variations", type=int, default=VARIATIONS)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    grouper, baseline = Grouper(), defaultdict(list)
    truth: dict[tuple, str] = {}
    strict_truth: dict[tuple, str] = {}
    cases = list(_cases())
    labels = root_causes(cases)
    strict_labels = root_causes(cases, strict=True)
    with tempfile.TemporaryDirectory(prefix="grouping-bench-") as tmp:
        for number, (name, logs, command, _label) in enumerate(cases):
            for copy in range(args.variations + 1):
                folder = Path(tmp) / f"{number}-{copy}"
                folder.mkdir()
                variation = Variation(seed=number * 1000 + copy) if copy else None
                data = _diagnose(logs, command, folder, variation)
                key = (name, copy)
                truth[key], strict_truth[key] = labels[name], strict_labels[name]
                grouper.add(key, data)
                baseline[data.get("fingerprint") or f"none-{name}-{copy}"].append(key)
    merge, split, mixed, spread = _rates(grouper.problems, truth)
    base_merge, base_split, _, _ = _rates(dict(enumerate(baseline.values())), truth)
    strict_merge, strict_split, _, _ = _rates(grouper.problems, strict_truth)
    base_strict_merge, base_strict_split, _, _ = _rates(dict(enumerate(baseline.values())), strict_truth)
    incidents = len(truth)
    print(f"grouping bench: {len(cases)} fixture cases x {args.variations + 1} runs = {incidents} incidents, "
          f"{len(set(truth.values()))} root causes ({len(set(strict_truth.values()))} under the strict truth)")
    print(f"  knowledge grouping  : {len(grouper.problems):4d} problems  false-merge {merge:6.1%} (goal <= 2%)  "
          f"split {split:6.1%} (goal <= 10%)   strict truth: false-merge {strict_merge:6.1%}  "
          f"split {strict_split:6.1%}")
    print(f"  baseline fingerprint: {len(baseline):4d} problems  false-merge {base_merge:6.1%}                "
          f"split {base_split:6.1%}                strict truth: false-merge {base_strict_merge:6.1%}  "
          f"split {base_strict_split:6.1%}")
    if args.verbose:
        for members in mixed:
            print("  mixed:", sorted({truth[key] for key in members}), "cases:", sorted({key[0] for key in members}))
        for cause in spread:
            where = [problem for problem, members in grouper.problems.items()
                     if any(truth[key] == cause for key in members)]
            print("  split:", cause, "over", len(where), "problems")
    ok = merge <= 0.02 and split <= 0.10
    print("  goals met" if ok else "  GOALS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
