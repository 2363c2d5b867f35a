"""Lines that are consequences of another rank's failure: never a root cause."""

from __future__ import annotations

from triage.rules import CASCADE, rule

RULES = [
    rule(
        "cascade.peer_closed",
        "unknown",
        CASCADE,
        [
            "Connection closed by peer",
            "Connection reset by peer",
            "remote worker",
            "remote process exit",
            "Broken pipe",
            "ncclRemoteError",
            "communicator was aborted",
            "is aborted",
            "death signal",
            "taking the entire process down",
            "Some NCCL operations have failed",
            "ChildFailedError",
            "closing signal",
            "SIGTERM",
            "Connection refused",
            "ssh exited with exit code",
            "Application timeout caused pair closure",
        ],
        r"Connection closed by peer|Connection reset by peer|remote worker crash|remote process exit|Broken pipe|"
        r"ncclRemoteError|"
        r"communicator was aborted|ProcessGroup\w* is aborted|Received \d+ death signal|"
        r"taking the entire process down|Some NCCL operations have failed|ChildFailedError|closing signal SIG|"
        r"SIGTERM|Connection refused|pdsh@\S+: \S+: ssh exited with exit code|"
        # gloo closing a waiting rank's pair after a timeout: that rank was waiting, not the one that stalled
        r"Application timeout caused pair closure",
        (),
        0.0,
        "a consequence of another rank's failure",
    ),
]
