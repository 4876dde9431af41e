"""Run a Microsoft Agent Framework workflow checkpointed to files, and resume it from its latest
checkpoint after a crash.

    python -m chaos.bundled.targets.frameworks.maf_driver --checkpoints checkpoints "PROMPT"
    python -m chaos.bundled.targets.frameworks.maf_driver --checkpoints checkpoints --resume

``--app module:attr`` names a function of a ``CheckpointStorage`` that returns the ``Workflow`` (built
with that storage). The start runs the workflow on the prompt (a conversation of one user message); a
resume restores the latest checkpoint (``FileCheckpointStorage.get_latest``) and runs on from it, as the
framework documents; nothing checkpointed, or nothing pending in the latest checkpoint (the workflow
finished), nothing to resume. Exit 0: completed (the output printed).
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from agent_framework import FileCheckpointStorage

from .loading import load, parser


async def _run(build: Any, folder: str, prompt: str | None) -> int:
    storage = FileCheckpointStorage(folder)
    workflow = build(storage)
    if prompt is not None:
        result = await workflow.run([{"role": "user", "content": prompt}])
    else:
        latest = await storage.get_latest(workflow_name=workflow.name)
        if latest is None:
            print("nothing to resume: no checkpoint")
            return 0
        if not latest.messages and not latest.pending_request_info_events:
            print("nothing to resume: the workflow finished")  # (running it again checkpoints again)
            return 0
        result = await workflow.run(checkpoint_id=latest.checkpoint_id, checkpoint_storage=storage)
    print(" ".join(str(output) for output in result.get_outputs()) or "nothing to resume")
    return 0


def main(argv: list[str]) -> int:
    options = parser(
        "maf_driver", "chaos.bundled.targets.frameworks.maf_app:workflow", "checkpoints", "--session"
    )
    options.add_argument("--checkpoints", dest="db", help="the checkpoint folder (default checkpoints)")
    args = options.parse_args(argv)
    build = load(args.app, args.db)
    return asyncio.run(_run(build, args.db, None if args.resume else args.prompt))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
