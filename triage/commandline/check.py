"""Check a corrected command before anyone sees it.

check(original, corrected, changes, diff) -> [problem, ...]; empty means it may be shown:
  - it parses as shell (bashlex, a maintained bash parser) whenever the original does;
  - no environment variable is set twice for one command (prefix, `export`, docker `-e`);
  - it differs from the original only by the listed changes (flags, env vars), command by command,
    and keeps every other word (program, script, positionals) as it was;
  - every line of its diff is a line of one of the two texts (nothing glued together).
"""
from __future__ import annotations

from collections import Counter

from .parse import LaunchCommand, Script, normalise_key, parse_script


def parses_as_shell(text: str) -> tuple[bool, str]:
    import bashlex

    if not text.strip():
        return True, ""
    try:
        bashlex.parse(text)
        return True, ""
    except Exception as exc:  # bashlex raises its own errors and, on odd input, plain ones
        return False, f"{type(exc).__name__}: {str(exc)[:160]}"


def env_set_twice(script: Script) -> list[str]:
    """Names set more than once for one launching command (prefix, docker -e, or export above it)."""
    tokens = script.line.tokens
    twice = []
    for cmd in script.launches:
        names = [tokens[i].value.partition("=")[0] for i in cmd.env_order]
        names += list(cmd.docker_env_index)
        exported = {tokens[i].value.partition("=")[0] for i in script.export_order if i < cmd.segment_start}
        counts = Counter(names)
        twice += [name for name, n in counts.items() if n > 1 or name in exported and name in cmd.env_index]
    return sorted(set(twice))


def _words(cmd: LaunchCommand) -> dict[str, object]:
    tokens = cmd.line.tokens
    flag_tokens = set()
    for flag in [*cmd.script_flags, *cmd.launcher_flags, *cmd.wrapper_flags]:
        flag_tokens.add(flag.name_index)
        if flag.value_index is not None:
            flag_tokens.add(flag.value_index)
    env_tokens = set(cmd.env_order) | set(cmd.docker_env_index.values())
    docker_env_names = {i - 1 for i in cmd.docker_env_index.values()}
    rest = [tokens[i].value for i in range(cmd.segment_start, cmd.segment_end)
            if i not in flag_tokens and i not in env_tokens and i not in docker_env_names]
    return {
        "rest": rest,
        "flags": {(where, f.key): f.value for where, flags in
                  (("script", cmd.script_flags), ("launcher", cmd.launcher_flags), ("wrapper", cmd.wrapper_flags))
                  for f in flags},
        "env": dict(cmd.env),
    }


def unlisted_differences(before: Script, after: Script, changes: list[dict]) -> list[str]:
    flags = {normalise_key(str(c.get("flag") or "")) for c in changes if c.get("flag")}
    flags |= {normalise_key(str(c.get("old") or "")) for c in changes if c.get("flag") and c.get("old")}
    flags |= {normalise_key(str(c.get("new") or "")) for c in changes if c.get("flag") and c.get("new")}
    env = {str(c.get("env")) for c in changes if c.get("env")}
    problems = []
    if len(before.launches) != len(after.launches):
        return [f"{len(before.launches)} command(s) became {len(after.launches)}"]
    for number, (old, new) in enumerate(zip(before.launches, after.launches, strict=True)):
        a, b = _words(old), _words(new)
        where = f"command {number + 1}" if len(before.launches) > 1 else "the command"
        if a["rest"] != b["rest"]:
            problems.append(f"{where}: words other than flags and env changed")
        for key in set(a["flags"]) | set(b["flags"]):
            if a["flags"].get(key, "<absent>") != b["flags"].get(key, "<absent>") and key[1] not in flags:
                problems.append(f"{where}: --{key[1]} changed but is not among the listed changes")
        for name in set(a["env"]) | set(b["env"]):
            if a["env"].get(name) != b["env"].get(name) and name not in env:
                problems.append(f"{where}: {name} changed but is not among the listed changes")
    before_exports = {before.line.tokens[i].value for i in before.export_order}
    after_exports = {after.line.tokens[i].value for i in after.export_order}
    for assignment in before_exports ^ after_exports:
        if assignment.partition("=")[0] not in env:
            problems.append(f"export {assignment.partition('=')[0]} changed but is not among the listed changes")
    return problems


def foreign_diff_lines(diff: str | None, old: str, new: str) -> list[str]:
    """Diff lines that are not a line of either text (e.g. two lines glued together)."""
    if not diff:
        return []
    old_lines, new_lines = set(old.splitlines()), set(new.splitlines())
    bad = []
    for line in diff.splitlines():
        if line.startswith(("--- ", "+++ ", "@@")) or line.startswith("\\ No newline"):
            continue
        body = line[1:]
        allowed = new_lines if line[:1] == "+" else old_lines if line[:1] == "-" else old_lines & new_lines
        if body not in allowed:
            bad.append(line[:200])
    return bad


def check(original: str, corrected: str, changes: list[dict], diff: str | None = None) -> list[str]:
    problems = []
    ok_before, _ = parses_as_shell(original)
    ok_after, why = parses_as_shell(corrected)
    if ok_before and not ok_after:
        problems.append(f"does not parse as shell ({why})")
    before, after = parse_script(original), parse_script(corrected)
    problems += [f"{name} is set twice" for name in env_set_twice(after) if name not in env_set_twice(before)]
    problems += unlisted_differences(before, after, changes)
    problems += [f"diff line is in neither text: {line}" for line in foreign_diff_lines(diff, original, corrected)]
    return problems
