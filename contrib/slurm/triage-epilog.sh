#!/bin/bash
# Slurm epilog: when a job failed, send its logs to Triage.
#
# Install on the nodes (slurm.conf: Epilog=/etc/slurm/epilog.d/triage-epilog.sh) or as
# EpilogSlurmctld on the controller, with triage_submit.py beside it and
# /etc/triage/epilog.env holding (mode 0600, owned by root):
#     TRIAGE_URL=https://triage.example.com
#     TRIAGE_API_KEY=trg_...          # a write-scope key
#     TRIAGE_CALLBACK_URL=            # optional: receives the signed verdict
#     TRIAGE_EXTRA_LOGS=              # optional glob, e.g. /scratch/%u/%j/logs/*.log
#
# An epilog that fails drains the node, so this script ALWAYS exits 0 and gives up
# quietly after a bounded time. Only the first node of the job submits.
set -u

ENV_FILE=${TRIAGE_EPILOG_ENV:-/etc/triage/epilog.env}
[ -r "$ENV_FILE" ] && set -a && . "$ENV_FILE" && set +a
HERE=$(cd "$(dirname "$0")" && pwd)
# triage_submit.py installed beside this script, or the copy in the repository's contrib/.
SUBMIT=${TRIAGE_SUBMIT:-$HERE/triage_submit.py}
[ -f "$SUBMIT" ] || SUBMIT=$HERE/../triage_submit.py
LOGGER="logger -t triage-epilog"

finish() { exit 0; }
trap finish ERR
[ -n "${TRIAGE_URL:-}" ] && [ -n "${TRIAGE_API_KEY:-}" ] && [ -n "${SLURM_JOB_ID:-}" ] || finish

info=$(scontrol show job -o "$SLURM_JOB_ID" 2>/dev/null) || finish
field() { printf '%s\n' "$info" | tr ' ' '\n' | sed -n "s/^$1=//p" | head -n 1; }

state=$(field JobState)
case "$state" in
  COMPLETED|CANCELLED|PENDING|RUNNING|"") finish ;;  # success, or stopped by a person: nothing to diagnose
esac
# Node epilogs run on every node of the job: let the batch host alone submit.
batch_host=$(field BatchHost)
context=${SLURM_SCRIPT_CONTEXT:-epilog_slurmd}
if [ "$context" = epilog_slurmd ] && [ -n "$batch_host" ] && [ "$(hostname -s)" != "${batch_host%%.*}" ]; then
  finish
fi

user=$(field UserId); user=${user%%(*}
expand() { printf '%s' "$1" | sed -e "s/%j/$SLURM_JOB_ID/g" -e "s/%u/$user/g" -e "s/%x/$(field JobName)/g"; }
files=()
for name in StdOut StdErr; do
  path=$(expand "$(field "$name")")
  [ -n "$path" ] && [ -s "$path" ] && [[ " ${files[*]-} " != *" $path "* ]] && files+=("$path")
done
if [ -n "${TRIAGE_EXTRA_LOGS:-}" ]; then
  for path in $(expand "$TRIAGE_EXTRA_LOGS"); do [ -s "$path" ] && files+=("$path"); done
fi
[ ${#files[@]} -gt 0 ] || { $LOGGER "job $SLURM_JOB_ID $state: no logs found"; finish; }

# The batch script usually holds the launch line (torchrun/deepspeed/srun ...): send it as the command.
command_args=(--command "$(field Command)")
script=$(field Command)
if [ -f "$script" ] && [ -r "$script" ] && [ "$(stat -c %s "$script")" -lt 65536 ]; then
  command_args=(--command-file "$script")
fi

# URL and key travel in the environment (exported from $ENV_FILE), not on the command line.
export TRIAGE_URL TRIAGE_API_KEY
timeout "${TRIAGE_EPILOG_TIMEOUT:-60}" python3 "$SUBMIT" \
  --job-id "$SLURM_JOB_ID" --attempt "$(field Restarts)" \
  --title "$(field JobName) ($state, exit $(field ExitCode))" \
  --scheduler slurm --cluster "${SLURM_CLUSTER_NAME:-$(field ClusterName)}" \
  "${command_args[@]}" --callback-url "${TRIAGE_CALLBACK_URL:-}" --retries 3 \
  "${files[@]}" 2>&1 | $LOGGER
finish
