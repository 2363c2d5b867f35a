"""Make sure the tiny model is there, then exec the launch.   python launch.py --family F -- CMD...

The worker binds a cached tiny model at /work/tiny-model; without it, one is built here first.
"""
import os
import sys

MODEL = "/work/tiny-model"


def main() -> None:
    split = sys.argv.index("--")
    options, command = sys.argv[1:split], sys.argv[split + 1:]
    family = options[options.index("--family") + 1] if "--family" in options else "llama"
    if not os.path.exists(os.path.join(MODEL, "config.json")):
        import tiny_model

        tiny_model.main([family, MODEL])
    sys.stdout.flush()
    os.execvp(command[0], command)


if __name__ == "__main__":
    main()
