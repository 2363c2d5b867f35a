"""Read every row of a data file through sft_data the way the failing script would.

    python load_check.py --format sharegpt /work/in/data.json

Prints one line `ROWCHECK {json}` with the rows that fail (line numbers, error), then reads the
first bad row again without catching, so the log ends in the very traceback the script would print.
"""
import argparse
import json
import sys

from sft_data import SFTDataset, detect, read_rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--format", default="auto")
    parser.add_argument("path")
    args = parser.parse_args(argv)
    rows = read_rows(args.path)
    dataset = SFTDataset(rows, args.format)
    bad, formats = [], {}
    for index, (line, row) in enumerate(rows):
        found = detect(row) or "unknown"
        formats[found] = formats.get(found, 0) + 1
        try:
            dataset[index]
        except Exception as exc:  # noqa: BLE001 - every failure is a finding
            bad.append({"index": index, "line": line, "error": f"{type(exc).__name__}: {exc}", "found": found})
    report = {"rows": len(rows), "expected": dataset.fmt, "formats": formats, "bad_count": len(bad),
              "bad_rows": bad[:20]}
    print("ROWCHECK " + json.dumps(report), flush=True)
    if bad:
        print(f"Loading data from {args.path} as {dataset.fmt}: row at line {bad[0]['line']} fails", flush=True)
        dataset[bad[0]["index"]]  # the script's own failure, uncaught
    print(f"all {len(rows)} rows load as {dataset.fmt}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
