"""python -m triage diagnose [--json] [--command-file F | --command STR] [--config F]... [--data F] PATH..."""

from __future__ import annotations

import argparse
import json
import sys

from triage.errors import UnusableInput
from triage.fixes import convert_data


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line on stderr, exit 2, like unusable input
        sys.stderr.write(f"triage: {message}\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m triage", description="Diagnose a failed distributed fine-tuning job.")
    commands = parser.add_subparsers(dest="action", required=True, parser_class=_Parser)
    run = commands.add_parser("diagnose", help="diagnose logs")
    run.add_argument("--json", action="store_true", help="print the diagnosis JSON")
    group = run.add_mutually_exclusive_group()
    group.add_argument("--command-file", help="file holding the launch command")
    group.add_argument("--command", help="the launch command")
    run.add_argument("--config", action="append", default=[], help="DeepSpeed/accelerate/training config")
    run.add_argument("--data", help="a sample of the training data (JSON or JSONL)")
    run.add_argument("paths", nargs="+", metavar="PATH", help="log files, archives or folders")
    convert_data.register(commands)
    return parser


def diagnose_arguments(args: argparse.Namespace):
    """The diagnosis that ``diagnose`` prints for parsed arguments (raises UnusableInput, OSError)."""
    from triage.inputs import read_text
    from triage.pipeline import diagnose

    command = args.command
    if args.command_file:
        command = read_text(args.command_file, "command file").strip()
    return diagnose(args.paths, command=command, config_paths=args.config, data_path=args.data)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.action == "convert-data":
        return convert_data.run(args)
    from triage.report import human_report

    try:
        result = diagnose_arguments(args)
    except UnusableInput as exc:
        sys.stderr.write(f"triage: {str(exc).splitlines()[0] if str(exc) else 'unusable input'}\n")
        return 2
    except (OSError, MemoryError) as exc:
        sys.stderr.write(f"triage: cannot read the input: {exc}\n")
        return 2
    if args.json:
        sys.stdout.write(json.dumps(result.to_dict(), ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(human_report(result))
    return 0
